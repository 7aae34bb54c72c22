package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/cliflag"
	"github.com/turnguard/turnguard/internal/embedded"
	"github.com/turnguard/turnguard/internal/natsauth"
	"github.com/turnguard/turnguard/internal/natsconn"
	"github.com/turnguard/turnguard/internal/replay"
)

// conn is where the recorded streams are read from.
type conn struct {
	nats    natsconn.Flags
	dataDir string
}

func (c *conn) register(fs *flag.FlagSet) {
	c.nats.Register(fs, "an admin credential (<data-dir>/creds/admin.creds of the embedded processor)")
	fs.StringVar(&c.dataDir, "data-dir", "./data", "the embedded server's data directory, opened when no NATS server is named and no processor runs on it")
}

// embedded says the data dir is opened rather than a server connected to.
func (c *conn) embedded() bool { return c.nats.URL == "" && c.nats.Context == "" }

// open connects and opens the recorded streams; close releases what open
// started.
func (c *conn) open(ctx context.Context) (src *replay.Source, closeFn func(), err error) {
	target, err := natsconn.Resolve(c.nats, natsconn.Options{})
	if err != nil {
		return nil, nil, err
	}
	opts := []nats.Option{nats.Name("turnguard-replay")}
	url := target.URL
	var stopServer func()
	if url == "" {
		if _, err := os.Stat(filepath.Join(c.dataDir, "jetstream")); err != nil {
			return nil, nil, fmt.Errorf("no turnguard store under %s (run the processor there first, or connect with --nats-url)", c.dataDir)
		}
		// A data dir the processor ran on with authentication holds its
		// authority: open the store as admin, minted on the spot.
		ecfg := embedded.Config{DataDir: c.dataDir, Logger: zerolog.Nop()}
		var admin nats.Option
		if auth, err := natsauth.Load(filepath.Join(c.dataDir, "auth")); err == nil {
			if admin, err = embedded.User(auth, natsauth.User{Role: natsauth.RoleAdmin, Name: "replay"}); err != nil {
				return nil, nil, err
			}
			ecfg.Auth = auth
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, nil, err
		}
		srv, err := embedded.Start(ecfg)
		if errors.Is(err, embedded.ErrDataDirInUse) {
			return nil, nil, fmt.Errorf("a processor is running on %s (%w); connect to it instead, e.g. --nats-url nats://127.0.0.1:4222", c.dataDir, err)
		}
		if err != nil {
			return nil, nil, err
		}
		stopServer = func() {
			srv.Shutdown()
			srv.WaitForShutdown()
		}
		opts = append(opts, nats.InProcessServer(srv))
		if admin != nil {
			opts = append(opts, admin)
		}
	} else {
		opts = append(opts, target.Options...)
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		if stopServer != nil {
			stopServer()
			return nil, nil, fmt.Errorf("open %s: %w", c.dataDir, err)
		}
		return nil, nil, fmt.Errorf("connect to NATS %s (from %s): %w", url, target.Source, err)
	}
	closeFn = func() {
		nc.Close()
		if stopServer != nil {
			stopServer()
		}
	}
	js, err := jetstream.New(nc)
	if err == nil {
		src, err = replay.Open(ctx, js)
	}
	if err != nil {
		closeFn()
		return nil, nil, err
	}
	return src, closeFn, nil
}

// openRange opens the recorded streams and fixes the range of b now.
func (c *conn) openRange(ctx context.Context, b replay.Bounds) (*replay.Source, replay.Range, func(), error) {
	src, closeFn, err := c.open(ctx)
	if err != nil {
		return nil, replay.Range{}, nil, err
	}
	r, err := src.Resolve(ctx, b)
	if err != nil {
		closeFn()
		return nil, replay.Range{}, nil, err
	}
	return src, r, closeFn, nil
}

// rangeFlags select envelopes by stream time.
type rangeFlags struct {
	since    time.Duration
	from, to string
}

func (r *rangeFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&r.since, "since", 0, "only envelopes stored in this much time before now, e.g. 24h")
	fs.StringVar(&r.from, "from", "", "only envelopes stored at or after this time (RFC 3339)")
	fs.StringVar(&r.to, "to", "", "only envelopes stored at or before this time (RFC 3339)")
}

// bounds turns the flags into time bounds; the end is fixed now, so a run
// is finite and repeatable.
func (r *rangeFlags) bounds(now time.Time) (replay.Bounds, error) {
	var b replay.Bounds
	if r.since != 0 && r.from != "" {
		return b, errors.New("--since and --from are alternatives")
	}
	if r.since < 0 {
		return b, errors.New("--since must be positive")
	}
	if r.since > 0 {
		b.From = now.Add(-r.since)
	}
	for _, f := range []struct {
		name, value string
		dst         *time.Time
	}{{"--from", r.from, &b.From}, {"--to", r.to, &b.To}} {
		if f.value == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, f.value)
		if err != nil {
			return b, fmt.Errorf("%s %q: want an RFC 3339 time like 2026-12-01T09:00:00Z", f.name, f.value)
		}
		*f.dst = t
	}
	if !b.From.IsZero() && !b.To.IsZero() && b.To.Before(b.From) {
		return b, errors.New("--to is before the start of the range")
	}
	return b, nil
}

// newFlagSet returns a command's flag set, with TURNGUARD_* variables
// applied after parsing's defaults and before the command line.
func newFlagSet(name, synopsis string, stderr interface{ Write([]byte) (int, error) }) *flag.FlagSet {
	fs := flag.NewFlagSet("replay "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = cliflag.Usage(fs, fmt.Sprintf("Usage: replay %s %s\n\nFlags (each can also be set as %s<FLAG_NAME>; replay's credential and receipt key\nas %sNATS_CREDS, %sNATS_CONTEXT, %sRECEIPT_KEY):\n", name, synopsis, cliflag.EnvPrefix, replayEnvPrefix, replayEnvPrefix, replayEnvPrefix),
		replayNATSHelp)
	return fs
}

// registerConfig adds --config to a command that reads the processor's
// config file.
func registerConfig(fs *flag.FlagSet) {
	fs.String(cliflag.ConfigFlag, "", "the processor's config file: its rules, keys and intake settings ("+strings.Join(configSettings, ", ")+
		"), so that replay decides and verifies as the processor did; the environment and the command line override it")
}

// configSettings are what replay takes from the processor's config file:
// what decides and verifies as the processor did, and where its data is.
// Not its NATS credential (the processor's own, where replay reads with
// the security role's) nor anything else of the processor's.
var configSettings = []string{"rules", "keys", "require-signatures", "require-caller-signatures", "max-envelope-bytes", "on-rule-error",
	"skew-window", "receipt-key", "nats-url", "nats-ca", "data-dir"}

// parse applies the config file (where the command reads one), the
// environment, then the command line.
func parse(fs *flag.FlagSet, args []string) error {
	if fs.Lookup(cliflag.ConfigFlag) != nil {
		only := func(name string) bool { return slices.Contains(configSettings, name) && fs.Lookup(name) != nil }
		if err := cliflag.ApplyConfig(fs, cliflag.ConfigPath(args), only); err != nil {
			return err
		}
	}
	if err := cliflag.ApplyEnvAs(fs, replayEnv); err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (see --help)", fs.Arg(0))
	}
	return nil
}

// replayEnvPrefix names the variables of replay's own credential and
// receipt key: TURNGUARD_NATS_CREDS and TURNGUARD_RECEIPT_KEY are the
// processor's (its credential, its private key), and a shell that sets
// them for one must not hand them to the other.
const replayEnvPrefix = "TURNGUARD_REPLAY_"

// replayEnv is what replay reads from variables of its own names.
var replayEnv = func() map[string]string {
	m := natsconn.EnvRenames(replayEnvPrefix)
	m["receipt-key"] = replayEnvPrefix + "RECEIPT_KEY"
	return m
}()

// replayNATSHelp ends every replay --help.
var replayNATSHelp = natsconn.Help(natsconn.Options{EnvPrefix: replayEnvPrefix}, "the store under --data-dir, opened with an embedded server")
