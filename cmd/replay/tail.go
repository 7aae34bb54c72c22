package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/turnguard/turnguard/internal/acs"
	"github.com/turnguard/turnguard/internal/replay"
)

func tailCommand(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	var (
		c                         conn
		keysFile                  string
		since                     time.Duration
		from                      string
		tenant, session, decision string
		rule, receiptKey, color   string
		alertsOnly, decisionsOnly bool
		asJSON                    bool
		count                     int
	)
	fs := newFlagSet("tail", "[--tenant T] [--session S] [--decision D] [--rule ID] [--since D | --from TIME] [--json] [--count N]", stderr)
	c.register(fs)
	fs.StringVar(&keysFile, "keys", "", "the processor's HMAC keys file: check each decision's signature too (default: not checked)")
	fs.DurationVar(&since, "since", 0, "start with the messages stored in this much time before now, e.g. 10m (default: only new messages)")
	fs.StringVar(&from, "from", "", "start with the messages stored at or after this time (RFC 3339)")
	fs.StringVar(&tenant, "tenant", "", `only this tenant's decisions and alerts (default, or "*": every tenant's, turnguard's own _system alerts included)`)
	fs.StringVar(&session, "session", "", "only this session's decisions and alerts")
	fs.StringVar(&decision, "decision", "", `only decisions of this kind: allow, deny, modify, ask, error or "error CODE" (alerts are still shown unless --decisions-only)`)
	fs.StringVar(&rule, "rule", "", "only decisions and alerts naming this rule id")
	fs.BoolVar(&alertsOnly, "alerts-only", false, "follow ACS_ALERTS only")
	fs.BoolVar(&decisionsOnly, "decisions-only", false, "follow ACS_DECISIONS only")
	fs.StringVar(&receiptKey, "receipt-key", "", "Ed25519 key (PEM, as <data-dir>/receipt-key.pub) to check receipts with; default <data-dir>/receipt-key.pub when opening --data-dir; without one every line says \"not checked\"")
	fs.StringVar(&color, "color", "auto", "auto (colour on a terminal only), always or never")
	fs.BoolVar(&asJSON, "json", false, "one JSON object per line instead of text (field names in the README)")
	fs.IntVar(&count, "count", 0, "stop after this many lines (0: until Ctrl-C)")
	if err := parse(fs, args); err != nil {
		return exitError, err
	}
	if err := checkFormat(color, "auto", "always", "never"); err != nil {
		return exitError, fmt.Errorf("--color: %w", err)
	}
	switch {
	case alertsOnly && decisionsOnly:
		return exitError, errors.New("--alerts-only and --decisions-only are alternatives")
	case since != 0 && from != "":
		return exitError, errors.New("--since and --from are alternatives")
	case since < 0:
		return exitError, errors.New("--since must be positive")
	case count < 0:
		return exitError, errors.New("--count must not be negative")
	}
	// Both go into subject filters: a dot or a wildcard would select
	// other subjects than the flag says.
	if tenant != "" && tenant != "*" {
		if err := acs.CheckTenant(tenant); err != nil {
			return exitError, fmt.Errorf("--tenant: %w", err)
		}
	}
	if session != "" {
		if err := acs.CheckSession(session); err != nil {
			return exitError, fmt.Errorf("--session: %w", err)
		}
	}
	opts := replay.TailOptions{Tenant: tenant, SessionID: session, Decision: decision, Rule: rule, Decisions: !alertsOnly, Alerts: !decisionsOnly}
	if opts.Tenant == "*" {
		opts.Tenant = ""
	}
	if since > 0 {
		opts.From = time.Now().Add(-since)
	}
	if from != "" {
		t, err := time.Parse(time.RFC3339, from)
		if err != nil {
			return exitError, fmt.Errorf("--from %q: want an RFC 3339 time like 2026-12-01T09:00:00Z", from)
		}
		opts.From = t
	}
	var err error
	if opts.ReceiptKey, err = trustedReceiptKey(c, receiptKey); err != nil {
		return exitError, err
	}
	if keysFile != "" {
		if opts.Keys, err = acs.LoadKeyring(keysFile); err != nil {
			return exitError, fmt.Errorf("--keys: %w", err)
		}
	}
	paint := color == "always" || color == "auto" && isTerminal(stdout)
	src, closeFn, err := c.open(ctx)
	if err != nil {
		return exitError, err
	}
	defer closeFn()
	if opts.ReceiptKey == nil && !asJSON {
		fmt.Fprintln(stderr, "replay tail: no --receipt-key: receipts are not checked, every line says \"not checked\"")
	}
	n := 0
	err = src.Tail(ctx, opts, func(e replay.TailEvent) error {
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
	// Ctrl-C (the ctx of main) ends a tail as intended: exit 0.
	if err != nil && !errors.Is(err, replay.ErrTailDone) {
		return exitError, err
	}
	return exitOK, nil
}

// isTerminal reports whether w is a terminal: colours go there only.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}
