package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/keyfile"
	"github.com/turnguard/turnguard/internal/replay"
)

func tailCommand(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	f, err := parseTailFlags(args, stderr)
	if err != nil {
		return exitError, err
	}
	opts, err := f.options(stderr)
	if err != nil {
		return exitError, err
	}
	paint := f.color == "always" || f.color == "auto" && isTerminal(stdout)
	src, closeFn, err := f.c.open(ctx)
	if err != nil {
		return exitError, err
	}
	defer closeFn()
	if opts.ReceiptKey == nil && !f.asJSON {
		fmt.Fprintln(stderr, "replay tail: no --receipt-key: receipts are not checked, every line says \"not checked\"")
	}
	// A tail that has nothing to show yet says nothing: say it is
	// connected and waiting, on stderr (stdout stays the lines).
	fmt.Fprintln(stderr, "replay tail: connected; waiting for decisions and alerts (Ctrl-C stops)")
	err = printTail(ctx, src, opts, stdout, f.asJSON, paint, f.count)
	// Ctrl-C (the ctx of main) ends a tail as intended: exit 0.
	if err != nil && !errors.Is(err, replay.ErrTailDone) {
		return exitError, err
	}
	return exitOK, nil
}

// tailFlags are the flags of replay tail.
type tailFlags struct {
	c                         conn
	keysFile                  string
	since                     time.Duration
	from                      string
	tenant, session, decision string
	rule, receiptKey, color   string
	alertsOnly, decisionsOnly bool
	asJSON                    bool
	count                     int
}

// parseTailFlags defines the flags of replay tail, reads args and checks
// the flags that need no connection: alone and against each other.
func parseTailFlags(args []string, stderr io.Writer) (*tailFlags, error) {
	f := &tailFlags{}
	fs := newFlagSet("tail", "[--tenant T] [--session S] [--decision D] [--rule ID] [--since D | --from TIME] [--json] [--count N]", stderr)
	f.c.register(fs)
	fs.StringVar(&f.keysFile, "keys", "", "the processor's HMAC keys file: check each decision's signature too (default: not checked)")
	fs.DurationVar(&f.since, "since", 0, "start with the messages stored in this much time before now, e.g. 10m (default: only new messages)")
	fs.StringVar(&f.from, "from", "", "start with the messages stored at or after this time (RFC 3339)")
	fs.StringVar(&f.tenant, "tenant", "", `only this tenant's decisions and alerts (default, or "*": every tenant's, turnguard's own _system alerts included)`)
	fs.StringVar(&f.session, "session", "", "only this session's decisions and alerts")
	fs.StringVar(&f.decision, "decision", "", `only decisions of this kind: allow, deny, modify, ask, error or "error CODE" (alerts are still shown unless --decisions-only)`)
	fs.StringVar(&f.rule, "rule", "", "only decisions and alerts naming this rule id")
	fs.BoolVar(&f.alertsOnly, "alerts-only", false, "follow ACS_ALERTS only")
	fs.BoolVar(&f.decisionsOnly, "decisions-only", false, "follow ACS_DECISIONS only")
	fs.StringVar(&f.receiptKey, "receipt-key", "", "Ed25519 key (PEM, as <data-dir>/receipt-key.pub) to check receipts with; default <data-dir>/receipt-key.pub where it exists (the store's own when opening --data-dir, the processor's data dir on this host when connecting to its NATS); without one every line says \"not checked\"")
	fs.StringVar(&f.color, "color", "auto", "auto (colour on a terminal only), always or never")
	fs.BoolVar(&f.asJSON, "json", false, "one JSON object per line instead of text (field names in docs/REPLAY.md)")
	fs.IntVar(&f.count, "count", 0, "stop after this many lines (0: until Ctrl-C)")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if err := checkFormat(f.color, "auto", "always", "never"); err != nil {
		return nil, fmt.Errorf("--color: %w", err)
	}
	switch {
	case f.alertsOnly && f.decisionsOnly:
		return nil, errors.New("--alerts-only and --decisions-only are alternatives")
	case f.since != 0 && f.from != "":
		return nil, errors.New("--since and --from are alternatives")
	case f.since < 0:
		return nil, errors.New("--since must be positive")
	case f.count < 0:
		return nil, errors.New("--count must not be negative")
	}
	// Both go into subject filters: a dot or a wildcard would select
	// other subjects than the flag says.
	if f.tenant != "" && f.tenant != "*" {
		if err := acs.CheckTenant(f.tenant); err != nil {
			return nil, fmt.Errorf("--tenant: %w", err)
		}
	}
	if f.session != "" {
		if err := acs.CheckSession(f.session); err != nil {
			return nil, fmt.Errorf("--session: %w", err)
		}
	}
	return f, nil
}

// options turns the flags into what Source.Tail follows and checks
// with, reading the start time and the keys they name.
func (f *tailFlags) options(stderr io.Writer) (replay.TailOptions, error) {
	opts := replay.TailOptions{Tenant: f.tenant, SessionID: f.session, Decision: f.decision, Rule: f.rule, Decisions: !f.alertsOnly, Alerts: !f.decisionsOnly}
	if opts.Tenant == "*" {
		opts.Tenant = ""
	}
	if f.since > 0 {
		opts.From = time.Now().Add(-f.since)
	}
	if f.from != "" {
		t, err := time.Parse(time.RFC3339, f.from)
		if err != nil {
			return opts, fmt.Errorf("--from %q: want an RFC 3339 time like 2026-12-01T09:00:00Z", f.from)
		}
		opts.From = t
	}
	var err error
	if opts.ReceiptKey, err = trustedReceiptKey(f.c, f.receiptKey, stderr); err != nil {
		return opts, err
	}
	if f.keysFile != "" {
		if opts.Keys, err = keyfile.Keyring(f.keysFile); err != nil {
			return opts, fmt.Errorf("--keys: %w", err)
		}
	}
	return opts, nil
}

// printTail writes each event Source.Tail delivers to stdout, as a JSON
// object or a text line (paint: in colour), and ends the tail with
// replay.ErrTailDone after count lines (0: never).
func printTail(ctx context.Context, src *replay.Source, opts replay.TailOptions, stdout io.Writer, asJSON, paint bool, count int) error {
	n := 0
	return src.Tail(ctx, opts, func(e replay.TailEvent) error {
		if asJSON {
			if err := replay.WriteTailJSON(stdout, e); err != nil {
				return err
			}
		} else if _, err := fmt.Fprintln(stdout, replay.FormatTailLine(e, paint)); err != nil {
			return err
		}
		if n++; count > 0 && n >= count {
			return replay.ErrTailDone
		}
		return nil
	})
}

// isTerminal reports whether w is a terminal: colours go there only.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}
