package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/turnguard/turnguard/internal/guardian"
	"github.com/turnguard/turnguard/internal/logging"
	"github.com/turnguard/turnguard/internal/stream"
	rulepack "github.com/turnguard/turnguard/rules"
)

// envPrefix is the prefix of the environment variables that stand in for
// flags: --nats-url is TURNGUARD_NATS_URL.
const envPrefix = "TURNGUARD_"

type config struct {
	rules       []string
	onRuleError string
	// The synchronous Guardian and integrity.
	httpAddr          string
	httpTenant        string
	decisionTimeout   time.Duration
	onDecisionFailure string
	keysFile          string
	requireSignatures bool
	skewWindow        time.Duration
	receiptKey        string
	natsURL           string
	natsCreds         string
	listen            string
	dataDir           string
	logLevel          string
	logFormat         string
	maxBytes          int
	processor         stream.Config
}

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
	fs.IntVar(&c.processor.BatchSize, "batch-size", c.processor.BatchSize, "most envelopes a partition worker decides and acknowledges together")
	fs.IntVar(&c.maxBytes, "max-envelope-bytes", guardian.DefaultMaxEnvelopeBytes, "refuse (and dead-letter) envelopes larger than this")
	fs.Var((*listFlag)(&c.rules), "rules", "rule file; repeat (or separate with commas) to merge several; builtin:default is the embedded pack (the default without --rules)")
	fs.StringVar(&c.onRuleError, "on-rule-error", "deny", "decision when a rule condition fails to evaluate: deny or allow")
	fs.StringVar(&c.httpAddr, "http", "", "serve the ACS JSON-RPC endpoint (POST /acs) on this address, e.g. 127.0.0.1:8787")
	fs.StringVar(&c.httpTenant, "http-tenant", "default", "tenant of the envelopes received over HTTP")
	fs.DurationVar(&c.decisionTimeout, "decision-timeout", 5*time.Second, "how long an HTTP call waits for its decision (advertised as timeout_config.default_ms)")
	fs.StringVar(&c.onDecisionFailure, "on-decision-failure", "deny", "posture advertised in the ServerHello: deny (fail closed) or proceed")
	fs.StringVar(&c.keysFile, "keys", "", "HMAC keys file: verify request signatures, sign responses")
	fs.BoolVar(&c.requireSignatures, "require-signatures", false, "refuse unsigned requests (-32004); needs --keys")
	fs.DurationVar(&c.skewWindow, "skew-window", guardian.DefaultSkewWindow, "refuse signed requests whose timestamp is further than this from their arrival (-32006); 0 disables")
	fs.StringVar(&c.receiptKey, "receipt-key", "", "Ed25519 key (PEM) signing every decision as a receipt; default <data-dir>/receipt-key.pem, created on first start")
	fs.StringVar(&c.logLevel, "log-level", "info", "trace, debug, info, warn or error")
	fs.StringVar(&c.logFormat, "log-format", logging.FormatAuto, "auto (console on a terminal, else json), json or console")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: processor [flags]\n       processor rules check|test [FILE...]\n       processor version\n\nRuns the turnguard ACS Guardian. Every flag can also be set as %s<FLAG_NAME>\n(e.g. --nats-url as %sNATS_URL); a flag on the command line wins.\n\nFlags:\n", envPrefix, envPrefix)
		fs.PrintDefaults()
	}
	if err := applyEnv(fs); err != nil {
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
	if c.maxBytes < 1024 || c.maxBytes > stream.HooksMaxMsgSize {
		return c, fmt.Errorf("--max-envelope-bytes must be between 1024 and %d (the ACS_HOOKS message limit)", stream.HooksMaxMsgSize)
	}
	if len(c.rules) == 0 {
		c.rules = []string{rulepack.DefaultPath}
	}
	if c.onRuleError != "deny" && c.onRuleError != "allow" {
		return c, fmt.Errorf("--on-rule-error %q: want deny or allow", c.onRuleError)
	}
	if c.onDecisionFailure != "deny" && c.onDecisionFailure != "proceed" {
		return c, fmt.Errorf("--on-decision-failure %q: want deny or proceed", c.onDecisionFailure)
	}
	if c.requireSignatures && c.keysFile == "" {
		return c, errors.New("--require-signatures needs --keys")
	}
	if c.decisionTimeout <= 0 || c.skewWindow < 0 {
		return c, errors.New("--decision-timeout must be positive and --skew-window not negative")
	}
	if c.receiptKey == "" {
		c.receiptKey = filepath.Join(c.dataDir, "receipt-key.pem")
	}
	if c.processor.Topology.SessionTTL <= 0 {
		return c, errors.New("--session-ttl must be positive")
	}
	return c, c.processor.Topology.Validate()
}

// applyEnv sets every flag that has a TURNGUARD_* variable, before the
// command line is parsed so that flags override the environment.
func applyEnv(fs *flag.FlagSet) error {
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		name := envPrefix + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(name); ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", name, v, err))
			}
		}
	})
	return errors.Join(errs...)
}

// listFlag is a repeatable flag; each value may also hold several
// comma-separated entries.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// version is the module version the binary was built from.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return "turnguard " + bi.Main.Version
	}
	return "turnguard (devel)"
}
