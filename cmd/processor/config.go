package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/turnguard/turnguard/internal/cliflag"
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/gateway"
	"github.com/turnguard/turnguard/internal/logging"
	"github.com/turnguard/turnguard/internal/natsconn"
	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/internal/topology"
	rulepack "github.com/turnguard/turnguard/rules"
)

type config struct {
	rules []string
	// The synchronous Guardian and integrity.
	httpAddr          string
	httpTenant        string
	decisionTimeout   time.Duration
	onDecisionFailure string
	handshake         gateway.HandshakePolicy
	receiptKey        string
	receiptFormat     string
	stateKey          string
	// nats is the connection flags; target what they resolve to (an empty
	// URL: the embedded server).
	nats          natsconn.Flags
	target        natsconn.Target
	auth          string
	listen        string
	listenTLSCert string
	listenTLSKey  string
	dataDir       string
	logLevel      string
	logFormat     string
	processor     stream.Config
	core          cliflag.Core
	// The HTTP endpoint's caller authentication and TLS.
	httpTokens   string
	httpTLSCert  string
	httpTLSKey   string
	httpClientCA string
	httpLimits   httpLimits
	// Bounds of one request to the HTTP endpoint.
	httpMaxBatch       int
	httpMaxDeadLetters int
	// metricsAddr is the listener of /metrics, /healthz and /readyz
	// (empty: none).
	metricsAddr string
	// showVersion: print the version and exit (--version).
	showVersion bool
}

// minStateBytes is the least --max-state-bytes: below it, a session of
// the default pack could not hold a few turns.
const minStateBytes = 64 << 10

// receiptKeyNone as --receipt-key turns the receipts off.
const receiptKeyNone = "none"

// The values of --receipt-format.
const (
	receiptFormatBatch  = "batch"
	receiptFormatSingle = "single"
)

// Values of --auth.
const (
	// authRequired: the embedded server admits only credentials its
	// authority minted, and the HTTP endpoint only authenticated callers.
	authRequired = "required"
	// authNone: the open development mode, loopback only.
	authNone = "none"
)

// parseFlags defines, parses and checks the processor's flags. It stays
// one function because it is a flat list — each flag next to its default
// and help text, then the checks between them — that reads best as the
// one place where every flag is.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	c := config{processor: stream.DefaultConfig()}
	fs := flag.NewFlagSet("processor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.nats.Register(fs, "a processor credential (processor creds init/add --role processor)")
	fs.StringVar(&c.auth, "auth", authRequired, "required: the embedded NATS server admits only the credentials under <data-dir>/creds (and ones minted by processor creds add), the HTTP endpoint only authenticated callers; none: open, loopback-only development mode")
	fs.StringVar(&c.listen, "listen", "127.0.0.1:4222", "client address of the embedded NATS server (\"none\": in-process only)")
	fs.StringVar(&c.listenTLSCert, "listen-tls-cert", "", "PEM certificate of the embedded NATS server's client port (required for a non-loopback --listen)")
	fs.StringVar(&c.listenTLSKey, "listen-tls-key", "", "PEM private key of --listen-tls-cert")
	fs.StringVar(&c.dataDir, "data-dir", "./data", "directory of the embedded server's JetStream store")
	fs.IntVar(&c.processor.Topology.Partitions, "partitions", c.processor.Topology.Partitions, "partitions of ACS_HOOKS, one durable consumer and worker each (fixed once the stream exists)")
	fs.IntVar(&c.processor.Topology.Replicas, "replicas", c.processor.Topology.Replicas, "replicas of the streams, bucket and consumers created (clusters: 3)")
	fs.DurationVar(&c.processor.Topology.SessionTTL, "session-ttl", c.processor.Topology.SessionTTL, "drop a session's state after this long without envelopes")
	retentionFlags(fs, &c.processor.Topology)
	fs.StringVar(&c.processor.InstanceID, "instance", "", "this instance's name among processors sharing the partitions (key in the ACS_PROCESSORS bucket); default <host>-<pid>-<random>")
	fs.DurationVar(&c.processor.Topology.MemberTTL, "member-ttl", c.processor.Topology.MemberTTL, "an instance silent this long counts as gone and its partitions move (heartbeat: a fifth of it; fixed once ACS_PROCESSORS exists)")
	fs.DurationVar(&c.processor.Topology.PinnedTTL, "pinned-ttl", c.processor.Topology.PinnedTTL, "a partition consumer re-pins to another instance after its pinned one has not asked for this long (set on the consumers when created)")
	fs.IntVar(&c.processor.BatchSize, "batch-size", c.processor.BatchSize, "most envelopes a partition worker decides and acknowledges together")
	fs.IntVar(&c.processor.GroupLoops, "group-loops", stream.DefaultGroupLoops, "loops applying the live batches of several partitions together, with one receipt signature and one round of writes (-1: every partition worker applies its own batches alone)")
	fs.DurationVar(&c.processor.GroupLinger, "group-linger", 0, "how long a group loop waits for more partitions' batches once it took those ready, at most 1ms (0: not at all)")
	var maxState cliflag.Bytes
	fs.Var(&maxState, "max-state-bytes", "most bytes of one session's stored value (its state and the outbox of its last write), a `size` such as 256KiB; an envelope that would exceed it is refused -32603 state_too_large (0: the NATS server's max_payload less 4 KiB)")
	fs.Var((*cliflag.List)(&c.rules), "rules", "rule file; repeat (or separate with commas) to merge several; builtin:default is the embedded pack (the default without --rules)")
	fs.StringVar(&c.httpAddr, "http", "", "serve the ACS JSON-RPC endpoint (POST /acs) on this address, e.g. 127.0.0.1:8787")
	fs.StringVar(&c.metricsAddr, "metrics", "", "serve Prometheus metrics (GET /metrics), liveness (GET /healthz) and readiness (GET /readyz) on this address, e.g. 127.0.0.1:9464, independent of --http; empty: off")
	fs.StringVar(&c.httpTenant, "http-tenant", "default", "tenant of the envelopes received over HTTP without caller authentication (--auth none); an authenticated caller's tenant is its own")
	fs.StringVar(&c.httpTokens, "http-tokens", "", "callers file (YAML) of the HTTP endpoint: bearer-token hashes and client-certificate identities, each with its tenant (see processor http-token add)")
	fs.StringVar(&c.httpTLSCert, "http-tls-cert", "", "serve the HTTP endpoint over TLS (1.2 or later) with this certificate chain (PEM)")
	fs.StringVar(&c.httpTLSKey, "http-tls-key", "", "private key (PEM) of --http-tls-cert")
	fs.StringVar(&c.httpClientCA, "http-client-ca", "", "CA bundle (PEM) verifying client certificates of the HTTP endpoint, mapped to callers by --http-tokens; required of every client when no caller there has a token")
	fs.DurationVar(&c.decisionTimeout, "decision-timeout", 5*time.Second, "how long an HTTP call waits for its decision (the ServerHello's timeout_config.default_ms is one second more)")
	fs.DurationVar(&c.httpLimits.readHeaderTimeout, "http-read-header-timeout", defaultHTTPReadHeaderTimeout, "most time an HTTP client may take to send a request's headers")
	fs.DurationVar(&c.httpLimits.readTimeout, "http-read-timeout", defaultHTTPReadTimeout, "most time an HTTP client may take to send a whole request, headers and body")
	fs.DurationVar(&c.httpLimits.writeTimeout, "http-write-timeout", 0, "most time from the end of a request's headers to the end of its answer; must exceed --decision-timeout (0: --decision-timeout + 10s)")
	fs.DurationVar(&c.httpLimits.idleTimeout, "http-idle-timeout", defaultHTTPIdleTimeout, "how long an idle keep-alive HTTP connection stays open")
	fs.IntVar(&c.httpLimits.maxConns, "http-max-conns", defaultHTTPMaxConns, "most HTTP connections open at once, TLS handshakes included; those of authenticated callers are never taken by unauthenticated ones (--http-max-unauth-conns)")
	fs.IntVar(&c.httpLimits.maxUnauthConns, "http-max-unauth-conns", 0, "most HTTP connections open at once that have not yet sent an authenticated request; a new one closes the oldest of them (0: a quarter of --http-max-conns)")
	fs.IntVar(&c.httpLimits.maxConnsPerIP, "http-max-conns-per-ip", defaultHTTPMaxConnsPerIP, "most HTTP connections from one address that have not yet sent an authenticated request; further ones are closed at once")
	fs.DurationVar(&c.httpLimits.unauthTimeout, "http-unauth-timeout", defaultHTTPUnauthTimeout, "most time an HTTP connection that has not yet sent an authenticated request may take for each read: its TLS handshake, a request's headers, the wait for its next request")
	fs.IntVar(&c.httpMaxBatch, "http-max-batch", gateway.DefaultMaxBatch, "most requests in one JSON-RPC batch; a larger batch is refused as a whole (-32600 batch_too_large)")
	fs.IntVar(&c.httpMaxDeadLetters, "http-max-dead-letters", gateway.DefaultMaxDeadLetters, "most dead letters the HTTP endpoint keeps for one request; the rest are counted in one summary record")
	fs.StringVar(&c.onDecisionFailure, "on-decision-failure", "deny", "posture advertised in the ServerHello: deny (fail closed) or proceed")
	handshake := string(gateway.HandshakeRequired)
	fs.StringVar(&handshake, "handshake", handshake, "HTTP steps need a handshake/hello first (required, ACS §4) or not (optional, for clients that cannot send one)")
	c.core.Register(fs)
	fs.StringVar(&c.receiptFormat, "receipt-format", receiptFormatBatch, "batch: one Ed25519 signature per worker batch over a Merkle root, each decision and alert carrying its inclusion path (turnguard-receipt-batch/1); single: one signature per decision and alert (turnguard-receipt/1). Verifiers take both")
	fs.StringVar(&c.receiptKey, "receipt-key", "", "Ed25519 key (PEM) signing every decision as a receipt; default <data-dir>/receipt-key.pem, created on first start; \"none\" turns receipts off")
	fs.StringVar(&c.stateKey, "state-key", "", "secret key (at least 32 bytes) authenticating every value written to the ACS_TURNSTATE bucket; every processor sharing the partitions must use the same file; default <data-dir>/state-key, created with 32 random bytes on first start")
	fs.StringVar(&c.logLevel, "log-level", "info", "trace, debug, info, warn or error")
	fs.StringVar(&c.logFormat, "log-format", logging.FormatAuto, "auto (console on a terminal, else json), json or console")
	fs.String(cliflag.ConfigFlag, "", "config file (YAML): flag names and their values (skew-window: 5m), lists for repeatable flags; the environment and the command line override it; replay run and verify read the same file (processor config check checks it)")
	fs.Usage = cliflag.Usage(fs, fmt.Sprintf("Usage: processor [flags]\n       processor rules check|test [FILE...]\n       processor creds add|init|server-config|permissions [flags]\n       processor http-token add --tokens FILE --name NAME --tenant TENANT\n       processor connect claude-code|codex|cursor --tokens FILE [--url URL] [--settings FILE]\n       processor config check [--config FILE] [flags]\n       processor init --dir DIR\n       processor version\n\nRuns the turnguard ACS Guardian. Every flag can also be set as %s<FLAG_NAME>\n(e.g. --nats-url as %sNATS_URL) or in the --config file; the command line wins\nover the environment, the environment over the file.\n\nFlags:\n", cliflag.EnvPrefix, cliflag.EnvPrefix),
		natsconn.Help(natsconn.Options{}, "the embedded server: started in-process on --data-dir, --listen"))
	if err := cliflag.ApplyConfig(fs, cliflag.ConfigPath(args), nil); err != nil {
		return c, err
	}
	if err := cliflag.ApplyEnv(fs); err != nil {
		return c, err
	}
	// Defined after ApplyEnv, so that TURNGUARD_VERSION (which
	// scripts/build-images.sh reads) never turns a processor into a
	// version printer.
	fs.BoolVar(&c.showVersion, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.showVersion {
		// Nothing else matters, and an invalid flag value must not
		// stop the version being printed.
		return c, nil
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q (see --help)", fs.Arg(0))
	}
	if c.listen == "none" {
		c.listen = ""
	}
	var err error
	if c.target, err = natsconn.Resolve(c.nats, natsconn.Options{}); err != nil {
		return c, err
	}
	if c.httpAddr != "" {
		if err := checkListenAddr(c.httpAddr); err != nil {
			return c, fmt.Errorf("--http %q: %w", c.httpAddr, err)
		}
	}
	if err := c.validateExposure(); err != nil {
		return c, err
	}
	if c.metricsAddr != "" {
		if err := checkListenAddr(c.metricsAddr); err != nil {
			return c, fmt.Errorf("--metrics %q: %w", c.metricsAddr, err)
		}
	}
	if err := c.core.Validate(); err != nil {
		return c, err
	}
	if len(c.rules) == 0 {
		c.rules = []string{rulepack.DefaultPath}
	}
	if c.onDecisionFailure != "deny" && c.onDecisionFailure != "proceed" {
		return c, fmt.Errorf("--on-decision-failure %q: want deny or proceed", c.onDecisionFailure)
	}
	if c.decisionTimeout <= 0 {
		return c, errors.New("--decision-timeout must be positive")
	}
	if c.httpLimits.writeTimeout == 0 {
		c.httpLimits.writeTimeout = defaultWriteTimeout(c.decisionTimeout)
	}
	if err := c.httpLimits.check(c.decisionTimeout); err != nil {
		return c, err
	}
	if c.httpMaxBatch <= 0 {
		return c, errors.New("--http-max-batch must be positive")
	}
	if c.httpMaxDeadLetters <= 0 {
		return c, errors.New("--http-max-dead-letters must be positive")
	}
	if c.handshake, err = gateway.ParseHandshakePolicy(handshake); err != nil {
		return c, fmt.Errorf("--handshake: %w", err)
	}
	if c.receiptKey == "" {
		c.receiptKey = filepath.Join(c.dataDir, "receipt-key.pem")
	}
	if err := c.checkHTTPSecurity(); err != nil {
		return c, err
	}
	if c.stateKey == "" {
		c.stateKey = filepath.Join(c.dataDir, "state-key")
	}
	switch c.receiptFormat {
	case receiptFormatBatch, receiptFormatSingle:
		c.processor.SingleReceipts = c.receiptFormat == receiptFormatSingle
	default:
		return c, fmt.Errorf("--receipt-format %q: want batch or single", c.receiptFormat)
	}
	if c.processor.Topology.SessionTTL <= 0 {
		return c, errors.New("--session-ttl must be positive")
	}
	if maxState != 0 && maxState < minStateBytes {
		return c, fmt.Errorf("--max-state-bytes %d: at least %d (64KiB), or 0 for the server's max_payload", int64(maxState), minStateBytes)
	}
	c.processor.MaxValueBytes = int(maxState)
	if c.httpAddr != "" {
		// The endpoint's negotiations last as long as the sessions they
		// negotiated; the bucket is the processor's to create and repair.
		c.processor.Topology.HandshakeTTL = c.processor.Topology.SessionTTL
	}
	return c, c.processor.Topology.Validate()
}

// retentionFlags adds the --<stream>-max-age and --<stream>-max-bytes flags
// of the four streams (docs/OPERATING.md "Limits"). They apply to existing streams too.
func retentionFlags(fs *flag.FlagSet, t *topology.Topology) {
	for _, r := range []struct {
		flag, stream, age, reached string
		retention                  *topology.Retention
	}{
		{"hooks", acs.HooksStream, "; at least --session-ttl: older sessions cannot be rebuilt, and replay sees only what is kept",
			"further envelopes are refused (publishers get an error, agents their on_decision_failure) until old ones age out", &t.HooksRetention},
		{"decisions", acs.DecisionsStream, "; at least --session-ttl; replay sees only what is kept",
			"the oldest decisions are removed", &t.DecisionsRetention},
		{"alerts", acs.AlertsStream, "; replay sees only what is kept", "the oldest alerts are removed", &t.AlertsRetention},
		{"dlq", acs.DLQStream, "; at least 24h, its duplicate window", "the oldest dead letters are removed", &t.DLQRetention},
	} {
		fs.DurationVar(&r.retention.MaxAge, r.flag+"-max-age", r.retention.MaxAge,
			fmt.Sprintf("remove messages of %s older than this (0: no age limit%s)", r.stream, r.age))
		fs.Var((*cliflag.Bytes)(&r.retention.MaxBytes), r.flag+"-max-bytes",
			fmt.Sprintf("most bytes %s keeps, a `size` such as 10GiB or 512MiB (0: bounded by the NATS server's store limit; a limit set here is reserved against that store at once); when reached, %s", r.stream, r.reached))
	}
}

// validateExposure refuses the configurations that would expose turnguard
// without the protection the operator probably assumes: an open server off
// loopback, or plaintext NATS off loopback.
func (c config) validateExposure() error {
	if c.auth != authRequired && c.auth != authNone {
		return fmt.Errorf("--auth %q: want required or none", c.auth)
	}
	if (c.listenTLSCert == "") != (c.listenTLSKey == "") {
		return errors.New("--listen-tls-cert and --listen-tls-key go together")
	}
	if c.target.URL != "" || c.listen == "" {
		return nil
	}
	if _, _, err := net.SplitHostPort(c.listen); err != nil {
		return fmt.Errorf("--listen %q: %w", c.listen, err)
	}
	if loopback(c.listen) {
		return nil
	}
	if c.auth == authNone {
		return fmt.Errorf("--listen %s with --auth none would open NATS to the network without credentials; listen on 127.0.0.1, or drop --auth none", c.listen)
	}
	if c.listenTLSCert == "" {
		return fmt.Errorf("--listen %s is not a loopback address: give --listen-tls-cert and --listen-tls-key, so that envelopes and decisions do not cross the network in plain text", c.listen)
	}
	return nil
}

// checkHTTPSecurity refuses HTTP endpoint settings that would leave it
// open or readable by accident: without caller authentication it runs only
// under --auth none, and with authentication but without TLS only on a
// loopback address (behind a TLS-terminating proxy on the same host), where
// the tokens cannot be read off the network.
func (c *config) checkHTTPSecurity() error {
	if err := acs.CheckTenant(c.httpTenant); err != nil {
		return fmt.Errorf("--http-tenant: %w", err)
	}
	if (c.httpTLSCert == "") != (c.httpTLSKey == "") {
		return errors.New("--http-tls-cert and --http-tls-key go together")
	}
	if c.httpClientCA != "" && c.httpTLSCert == "" {
		return errors.New("--http-client-ca needs TLS: give --http-tls-cert and --http-tls-key")
	}
	if c.httpClientCA != "" && c.httpTokens == "" {
		return errors.New("--http-client-ca needs --http-tokens FILE, whose callers map client certificates (cert_subject, cert_uri or cert_dns) to tenants")
	}
	if c.httpAddr == "" {
		return nil
	}
	authenticated := c.httpTokens != ""
	switch {
	case !authenticated && c.auth != authNone:
		return fmt.Errorf("--http %s has no caller authentication: give --http-tokens FILE (bearer tokens; client certificates too with --http-client-ca), or --auth none to run it open (development only)", c.httpAddr)
	case !authenticated && !loopback(c.httpAddr):
		return fmt.Errorf("--http %s with --auth none would open the endpoint to the network without authentication; listen on 127.0.0.1, or give --http-tokens", c.httpAddr)
	case authenticated && c.httpTLSCert == "" && !loopback(c.httpAddr):
		return fmt.Errorf("--http %s without TLS: bearer tokens would cross the network in clear; give --http-tls-cert and --http-tls-key, or listen on a loopback address (127.0.0.1, [::1]) behind a TLS-terminating proxy", c.httpAddr)
	}
	return nil
}

// checkListenAddr checks a listen address's syntax: host:port with a
// numeric port or a service name, which is what net.Listen takes. Whether
// it can be bound is learnt when it is, still before NATS starts.
func checkListenAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if port == "" {
		return errors.New("missing port")
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return err
	}
	return nil
}

// loopback reports whether a listen address is on a loopback interface
// only. An empty host listens on every interface; a name other than
// localhost could resolve anywhere.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
