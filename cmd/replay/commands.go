package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/turnguard/turnguard/internal/cliflag"
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/keyfile"
	"github.com/turnguard/turnguard/internal/replay"
	rulepack "github.com/turnguard/turnguard/rules"
	"github.com/turnguard/turnguard/schema"
)

func sessionsCommand(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	var (
		c             conn
		rf            rangeFlags
		tenant, agent string
		format        string
	)
	fs := newFlagSet("sessions", "[--tenant T] [--since 24h | --from TIME --to TIME] [--agent A]", stderr)
	c.register(fs)
	rf.register(fs)
	registerTenant(fs, &tenant, "only this tenant's sessions")
	fs.StringVar(&agent, "agent", "", "only sessions of this agent_id")
	fs.StringVar(&format, "format", "table", "table or json")
	if err := parse(fs, args); err != nil {
		return exitError, err
	}
	if err := checkFormat(format, "table", "json"); err != nil {
		return exitError, err
	}
	if err := checkTenant(tenant); err != nil {
		return exitError, err
	}
	b, err := rf.bounds(time.Now())
	if err != nil {
		return exitError, err
	}
	src, r, closeFn, err := c.openRange(ctx, b)
	if err != nil {
		return exitError, err
	}
	defer closeFn()
	ss, err := src.Sessions(ctx, r, tenant, agent, stderr)
	if err != nil {
		return exitError, err
	}
	if format == "json" {
		return exitOK, writeJSONLines(stdout, ss)
	}
	return exitOK, replay.WriteSessions(stdout, ss)
}

func timelineCommand(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	var (
		c                       conn
		core                    cliflag.Core
		ruleFiles               cliflag.List
		tenant, session, format string
		output, receiptKey      string
	)
	fs := newFlagSet("timeline", "--session S [--format table|json|html] [--output FILE] [--receipt-key PEM]", stderr)
	c.register(fs)
	core.Register(fs)
	registerTenant(fs, &tenant, "tenant of the session")
	fs.StringVar(&session, "session", "", "session id (required)")
	fs.Var(&ruleFiles, "rules", "rules whose taint labels and windows to show, and to re-decide with (default builtin:default, the processor's default)")
	fs.StringVar(&format, "format", "table", "table, json (JSON Lines: one object per step) or html (one self-contained file)")
	fs.StringVar(&output, "output", "", "write to this file instead of standard output")
	fs.StringVar(&receiptKey, "receipt-key", "", "show only decisions and alerts whose receipts verify with this key (PEM, as <data-dir>/receipt-key.pub); default <data-dir>/receipt-key.pub where it exists (the store's own when opening --data-dir, the processor's data dir on this host when connecting to its NATS), else \"none\": the first message per step is shown")
	registerConfig(fs)
	if err := parse(fs, args); err != nil {
		return exitError, err
	}
	if session == "" {
		return exitError, errors.New("--session is required")
	}
	if err := checkFormat(format, "table", "json", "html"); err != nil {
		return exitError, err
	}
	if err := checkTenant(tenant); err != nil {
		return exitError, err
	}
	pub, err := trustedReceiptKey(c, receiptKey, stderr)
	if err != nil {
		return exitError, err
	}
	g, rs, err := guardianAndRules(core, ruleFiles)
	if err != nil {
		return exitError, err
	}
	src, r, closeFn, err := c.openRange(ctx, replay.Bounds{})
	if err != nil {
		return exitError, err
	}
	defer closeFn()
	src.SetTrustedKey(pub)
	if tenant, err = sessionTenant(ctx, src, r, tenant, session); err != nil {
		return exitError, err
	}
	tl, err := replay.BuildTimeline(ctx, src, g, rs, r, tenant, session)
	if err != nil {
		return exitError, err
	}
	if len(tl.Steps) == 0 {
		return exitError, fmt.Errorf("no envelopes of session %s (tenant %s)", session, tenant)
	}
	return exitOK, writeTo(output, stdout, func(w io.Writer) error {
		switch format {
		case "json":
			return replay.WriteJSON(w, tl)
		case "html":
			return replay.WriteHTML(w, tl)
		}
		return replay.WriteTable(w, tl)
	})
}

func runCommand(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	var (
		c                       conn
		rf                      rangeFlags
		core                    cliflag.Core
		ruleFiles               cliflag.List
		tenant, session, format string
		diff, failOnDiff        bool
		allowEmpty              bool
		samples                 int
	)
	fs := newFlagSet("run", "--rules FILE... [--tenant T] [--since D | --from T --to T | --session S] [--diff] [--fail-on-diff [--allow-empty]]", stderr)
	c.register(fs)
	rf.register(fs)
	core.Register(fs)
	fs.Var(&ruleFiles, "rules", "rule files to re-decide with; repeat or separate with commas (builtin:default is the embedded pack)")
	registerConfig(fs)
	registerTenant(fs, &tenant, "only this tenant's envelopes")
	fs.StringVar(&session, "session", "", "only this session")
	fs.BoolVar(&diff, "diff", false, "list every envelope whose decision or alerts change, with its evidence")
	fs.BoolVar(&failOnDiff, "fail-on-diff", false, "exit 1 when anything changes, and 3 when nothing was compared (for CI gates on rule changes)")
	fs.BoolVar(&allowEmpty, "allow-empty", false, "with --fail-on-diff, exit 0 when nothing was compared (no envelope selected in range with a recorded decision) instead of 3")
	fs.IntVar(&samples, "samples", 10, "changes listed as samples without --diff")
	fs.StringVar(&format, "format", "table", "table or json (the whole report, every change included)")
	if err := parse(fs, args); err != nil {
		return exitError, err
	}
	if len(ruleFiles) == 0 {
		return exitError, errors.New("--rules is required (builtin:default names the embedded pack)")
	}
	if err := checkFormat(format, "table", "json"); err != nil {
		return exitError, err
	}
	if err := checkTenant(tenant); err != nil {
		return exitError, err
	}
	b, err := rf.bounds(time.Now())
	if err != nil {
		return exitError, err
	}
	g, rs, err := guardianAndRules(core, ruleFiles)
	if err != nil {
		return exitError, err
	}
	src, r, closeFn, err := c.openRange(ctx, b)
	if err != nil {
		return exitError, err
	}
	defer closeFn()
	rep, err := replay.BackTest(ctx, src, g, rs, r, replay.Selection{Tenant: tenant, SessionID: session}, replay.Options{Progress: stderr})
	if err != nil && !rep.Interrupted {
		return exitError, err
	}
	if format == "json" {
		if werr := writeJSON(stdout, rep); werr != nil {
			return exitError, werr
		}
	} else {
		if diff {
			samples = len(rep.Changes)
		}
		if werr := replay.WriteReport(stdout, rep, samples); werr != nil {
			return exitError, werr
		}
	}
	if err != nil {
		return exitInterrupted, err
	}
	if failOnDiff && rep.Differs() {
		return exitDifferences, nil
	}
	if failOnDiff && rep.Empty() && !allowEmpty {
		// A gate that compared nothing has not passed: a wrong tenant or
		// range must not read as "the rules change nothing".
		fmt.Fprintf(stderr, "replay run: nothing was compared (%s, stream sequences %d–%d); --allow-empty accepts that\n", tenantText(tenant), rep.From, rep.To)
		return exitNothingCompared, nil
	}
	return exitOK, nil
}

func verifyCommand(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	f, err := parseVerifyFlags(args, stderr)
	if err != nil {
		return exitError, err
	}
	b, err := f.rf.bounds(time.Now())
	if err != nil {
		return exitError, err
	}
	pub, err := trustedReceiptKey(f.c, f.receiptKey, stderr)
	if err != nil {
		return exitError, err
	}
	// Rules do not enter the hash chain: verify decides with none.
	g, gcfg, err := newGuardian(f.core)
	if err != nil {
		return exitError, err
	}
	src, r, closeFn, err := f.c.openRange(ctx, replay.Bounds{})
	if err != nil {
		return exitError, err
	}
	defer closeFn()
	v, err := f.verify(ctx, src, g, gcfg.Keys, pub, r, b, stderr)
	if err != nil {
		return exitError, err
	}
	if f.format == "json" {
		err = writeJSON(stdout, struct {
			*replay.Verification
			Result string `json:"result"`
		}{v, v.Result()})
	} else {
		err = replay.WriteVerification(stdout, v)
	}
	if err != nil {
		return exitError, err
	}
	if !v.Verified() {
		// A verification that checked nothing, or not everything, proves
		// nothing about what it skipped: only "verified" passes, for a
		// session as for the whole stream.
		return exitDifferences, nil
	}
	return exitOK, nil
}

// verifyFlags are the flags of replay verify.
type verifyFlags struct {
	c                       conn
	rf                      rangeFlags
	core                    cliflag.Core
	tenant, session, format string
	receiptKey              string
	systemAlerts, all       bool
	maxRejected             int
}

// parseVerifyFlags defines the flags of replay verify, reads args and
// checks the flags that need no connection: alone and against each other.
func parseVerifyFlags(args []string, stderr io.Writer) (*verifyFlags, error) {
	f := &verifyFlags{}
	fs := newFlagSet("verify", "--session S | --all [--tenant T] [--since D | --from T --to T] [--keys FILE] [--receipt-key PEM] [--system-alerts]", stderr)
	f.c.register(fs)
	f.rf.register(fs)
	f.core.Register(fs)
	registerTenant(fs, &f.tenant, "with --all only this tenant's messages (\"*\" includes turnguard's own _system alerts); with --session the session's tenant")
	fs.StringVar(&f.session, "session", "", "session id (required unless --all or --system-alerts)")
	fs.BoolVar(&f.all, "all", false, "audit every message of ACS_DECISIONS and ACS_ALERTS stored in range (--since, --from, --to), of every tenant or --tenant: report each that is not a verified answer; no hash chains are recomputed (that is --session's); exit 1 unless something was checked, everything was, and nothing was rejected")
	fs.StringVar(&f.receiptKey, "receipt-key", "", "Ed25519 key (PEM: the public key as <data-dir>/receipt-key.pub holds it and GET /receipt-key serves it, or the processor's private key) to check receipts with; default <data-dir>/receipt-key.pub (or .pem) where it exists: the store's own when opening --data-dir, the processor's data dir on this host when connecting to its NATS")
	fs.BoolVar(&f.systemAlerts, "system-alerts", false, "also check the receipts of turnguard's own operational alerts (acs.alerts._system.>; --all without --tenant always does)")
	fs.IntVar(&f.maxRejected, "max-rejected", 10000, "with --all, list at most this many rejected messages and count the rest (0: list all)")
	registerConfig(fs)
	fs.StringVar(&f.format, "format", "table", "table or json")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if f.maxRejected < 0 {
		return nil, errors.New("--max-rejected must not be negative")
	}
	ranged := f.rf.since != 0 || f.rf.from != "" || f.rf.to != ""
	switch {
	case f.all && f.session != "":
		return nil, errors.New("--all and --session are alternatives")
	case ranged && !f.all:
		// A session is verified whole: its chain starts at its first
		// envelope.
		return nil, errors.New("--since, --from and --to select what --all audits; --session verifies the whole session")
	case !f.all && f.session == "" && !f.systemAlerts:
		return nil, errors.New("--session or --all is required")
	}
	if err := checkFormat(f.format, "table", "json"); err != nil {
		return nil, err
	}
	if err := checkTenant(f.tenant); err != nil {
		return nil, err
	}
	return f, nil
}

// verify runs what the flags ask for: the sweep of --all over b, or the
// session's chains, receipts and signatures over the whole stream r, and
// with --system-alerts the receipts of turnguard's own alerts, merged
// into one verification (alone when nothing else was asked for).
func (f *verifyFlags) verify(ctx context.Context, src *replay.Source, g *guardian.Guardian, keys *acs.Keyring, pub ed25519.PublicKey, r replay.Range, b replay.Bounds, stderr io.Writer) (*replay.Verification, error) {
	tenant, session, all := f.tenant, f.session, f.all
	v := &replay.Verification{Chain: replay.ChainVerdict{Intact: true}}
	var err error
	switch {
	case all:
		// The sweep's "" is every tenant, subjects of any shape included.
		sweep := tenant
		if sweep == "*" {
			sweep = ""
		}
		if v, err = replay.VerifyAll(ctx, src, pub, replay.SweepOptions{Tenant: sweep, Bounds: b, Progress: stderr, MaxRejected: f.maxRejected}); err != nil {
			return nil, err
		}
	case session != "":
		if tenant, err = sessionTenant(ctx, src, r, tenant, session); err != nil {
			return nil, err
		}
		if v, err = replay.Verify(ctx, src, g, keys, pub, r, tenant, session); err != nil {
			return nil, err
		}
		if len(v.Steps) == 0 {
			return nil, fmt.Errorf("no envelopes of session %s (tenant %s)", session, tenant)
		}
	}
	// A sweep of every tenant has read the _system alerts already.
	if f.systemAlerts && !(all && tenant == "*") {
		sys, err := replay.VerifySystemAlerts(ctx, src, pub)
		if err != nil {
			return nil, err
		}
		if !all && session == "" {
			v = sys
		} else {
			v.Merge(sys)
		}
	}
	return v, nil
}

// allTenants is the --tenant value, and default, for every tenant.
const allTenants = "*"

// registerTenant registers --tenant alike in every command: a tenant, or
// "*" (the default) for every tenant — for a session command, whichever
// tenant the session is of.
func registerTenant(fs *flag.FlagSet, tenant *string, what string) {
	fs.StringVar(tenant, "tenant", allTenants, what+`; "*" (the default): every tenant, and for --session the one tenant with that session`)
}

// checkTenant refuses a tenant that is neither "*" nor a tenant token: it
// becomes part of subject filters.
func checkTenant(tenant string) error {
	if tenant == allTenants {
		return nil
	}
	if err := acs.CheckTenant(tenant); err != nil {
		return fmt.Errorf("--tenant: %w", err)
	}
	return nil
}

// sessionTenant is the tenant of session: tenant itself, or with "*" the
// one tenant whose envelopes carry that session id.
func sessionTenant(ctx context.Context, src *replay.Source, r replay.Range, tenant, session string) (string, error) {
	if tenant != allTenants {
		return tenant, nil
	}
	tenants, err := src.SessionTenants(ctx, r, session)
	switch {
	case err != nil:
		return "", err
	case len(tenants) == 0:
		return "", fmt.Errorf("no envelopes of session %s in any tenant", session)
	case len(tenants) > 1:
		return "", fmt.Errorf("session %s is in tenants %s: choose one with --tenant", session, strings.Join(tenants, ", "))
	}
	return tenants[0], nil
}

// tenantText names a --tenant value in a message.
func tenantText(tenant string) string {
	if tenant == allTenants {
		return "every tenant"
	}
	return "tenant " + tenant
}

// trustedReceiptKey loads the receipt key a command trusts: flag (a PEM
// file, or "none"), else the data dir's key where the processor wrote one
// (the public key, or the private key of a processor from before public
// keys were written) — named on stderr, since it was not — else none (nil).
func trustedReceiptKey(c conn, flag string, stderr io.Writer) (ed25519.PublicKey, error) {
	switch {
	case flag == "none":
		return nil, nil
	case flag != "":
		return keyfile.ReceiptPublic(flag)
	case c.dataDir != "":
		// The store's own key when opening it; connected to a processor's
		// NATS, its data dir on this host (--data-dir, ./data by default)
		// when it is there: receipts are then checked without naming it.
		for _, name := range []string{"receipt-key.pub", "receipt-key.pem"} {
			if p := filepath.Join(c.dataDir, name); fileExists(p) {
				if !c.embedded() {
					fmt.Fprintf(stderr, "replay: checking receipts with %s (--receipt-key names another)\n", p)
				}
				return keyfile.ReceiptPublic(p)
			}
		}
	}
	return nil, nil
}

// newGuardian builds the decision core as the processor had it (it signs
// nothing: signing is Guardian.Seal's, which replay never calls).
func newGuardian(core cliflag.Core) (*guardian.Guardian, guardian.Config, error) {
	if err := core.Validate(); err != nil {
		return nil, guardian.Config{}, err
	}
	cfg, err := core.GuardianConfig()
	if err != nil {
		return nil, cfg, err
	}
	v, err := schema.New()
	if err != nil {
		return nil, cfg, err
	}
	return guardian.New(v, cfg), cfg, nil
}

// guardianAndRules builds the core and loads the rule files, the embedded
// default pack when none.
func guardianAndRules(core cliflag.Core, files []string) (*guardian.Guardian, *policy.Set, error) {
	g, _, err := newGuardian(core)
	if err != nil {
		return nil, nil, err
	}
	if len(files) == 0 {
		files = []string{rulepack.DefaultPath}
	}
	rs, err := rulepack.Load(files...)
	if err != nil {
		return nil, nil, fmt.Errorf("rules:\n%w", err)
	}
	return g, rs, nil
}

func checkFormat(format string, allowed ...string) error {
	for _, a := range allowed {
		if format == a {
			return nil
		}
	}
	return fmt.Errorf("--format %q: want one of %v", format, allowed)
}

func writeTo(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == "" {
		return write(stdout)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func writeJSONLines[T any](w io.Writer, items []T) error {
	enc := json.NewEncoder(w)
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			return err
		}
	}
	return nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
