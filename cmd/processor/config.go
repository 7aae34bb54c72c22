package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/turnguard/turnguard/internal/cliflag"
	"github.com/turnguard/turnguard/internal/gateway"
	"github.com/turnguard/turnguard/internal/logging"
	"github.com/turnguard/turnguard/internal/stream"
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
	stateKey          string
	natsURL           string
	natsCreds         string
	listen            string
	dataDir           string
	logLevel          string
	logFormat         string
	processor         stream.Config
	core              cliflag.Core
}

// receiptKeyNone as --receipt-key turns the receipts off.
const receiptKeyNone = "none"

func parseFlags(args []string, stderr io.Writer) (config, error) {
	c := config{processor: stream.DefaultConfig()}
	fs := flag.NewFlagSet("processor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.natsURL, "nats-url", "", "NATS server or cluster URL(s), comma-separated; empty runs an embedded NATS JetStream server")
	fs.StringVar(&c.natsCreds, "nats-creds", "", "NATS credentials file for --nats-url")
	fs.StringVar(&c.listen, "listen", "127.0.0.1:4222", "client address of the embedded NATS server (\"none\": in-process only)")
	fs.StringVar(&c.dataDir, "data-dir", "./data", "directory of the embedded server's JetStream store")
	fs.IntVar(&c.processor.Topology.Partitions, "partitions", c.processor.Topology.Partitions, "partitions of ACS_HOOKS, one durable consumer and worker each (fixed once the stream exists)")
	fs.IntVar(&c.processor.Topology.Replicas, "replicas", c.processor.Topology.Replicas, "replicas of the streams, bucket and consumers created (clusters: 3)")
	fs.DurationVar(&c.processor.Topology.SessionTTL, "session-ttl", c.processor.Topology.SessionTTL, "drop a session's state after this long without envelopes")
	fs.StringVar(&c.processor.InstanceID, "instance", "", "this instance's name among processors sharing the partitions (key in the ACS_PROCESSORS bucket); default <host>-<pid>-<random>")
	fs.DurationVar(&c.processor.Topology.MemberTTL, "member-ttl", c.processor.Topology.MemberTTL, "an instance silent this long counts as gone and its partitions move (heartbeat: a fifth of it; fixed once ACS_PROCESSORS exists)")
	fs.DurationVar(&c.processor.Topology.PinnedTTL, "pinned-ttl", c.processor.Topology.PinnedTTL, "a partition consumer re-pins to another instance after its pinned one has not asked for this long (set on the consumers when created)")
	fs.IntVar(&c.processor.BatchSize, "batch-size", c.processor.BatchSize, "most envelopes a partition worker decides and acknowledges together")
	fs.Var((*cliflag.List)(&c.rules), "rules", "rule file; repeat (or separate with commas) to merge several; builtin:default is the embedded pack (the default without --rules)")
	fs.StringVar(&c.httpAddr, "http", "", "serve the ACS JSON-RPC endpoint (POST /acs) on this address, e.g. 127.0.0.1:8787")
	fs.StringVar(&c.httpTenant, "http-tenant", "default", "tenant of the envelopes received over HTTP")
	fs.DurationVar(&c.decisionTimeout, "decision-timeout", 5*time.Second, "how long an HTTP call waits for its decision (the ServerHello's timeout_config.default_ms is one second more)")
	fs.StringVar(&c.onDecisionFailure, "on-decision-failure", "deny", "posture advertised in the ServerHello: deny (fail closed) or proceed")
	handshake := string(gateway.HandshakeRequired)
	fs.StringVar(&handshake, "handshake", handshake, "HTTP steps need a handshake/hello first (required, ACS §4) or not (optional, for clients that cannot send one)")
	c.core.Register(fs)
	fs.StringVar(&c.receiptKey, "receipt-key", "", "Ed25519 key (PEM) signing every decision as a receipt; default <data-dir>/receipt-key.pem, created on first start; \"none\" turns receipts off")
	fs.StringVar(&c.stateKey, "state-key", "", "secret key (at least 32 bytes) authenticating every value written to the ACS_TURNSTATE bucket; every processor sharing the partitions must use the same file; default <data-dir>/state-key, created with 32 random bytes on first start")
	fs.StringVar(&c.logLevel, "log-level", "info", "trace, debug, info, warn or error")
	fs.StringVar(&c.logFormat, "log-format", logging.FormatAuto, "auto (console on a terminal, else json), json or console")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: processor [flags]\n       processor rules check|test [FILE...]\n       processor version\n\nRuns the turnguard ACS Guardian. Every flag can also be set as %s<FLAG_NAME>\n(e.g. --nats-url as %sNATS_URL); a flag on the command line wins.\n\nFlags:\n", cliflag.EnvPrefix, cliflag.EnvPrefix)
		fs.PrintDefaults()
	}
	if err := cliflag.ApplyEnv(fs); err != nil {
		return c, err
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q (see --help)", fs.Arg(0))
	}
	if c.listen == "none" {
		c.listen = ""
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
	var err error
	if c.handshake, err = gateway.ParseHandshakePolicy(handshake); err != nil {
		return c, fmt.Errorf("--handshake: %w", err)
	}
	if c.receiptKey == "" {
		c.receiptKey = filepath.Join(c.dataDir, "receipt-key.pem")
	}
	if c.stateKey == "" {
		c.stateKey = filepath.Join(c.dataDir, "state-key")
	}
	if c.processor.Topology.SessionTTL <= 0 {
		return c, errors.New("--session-ttl must be positive")
	}
	return c, c.processor.Topology.Validate()
}
