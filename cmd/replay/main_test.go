package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/embedded"
	"github.com/turnguard/turnguard/internal/keyfile"
	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/internal/testkit/guardiantest"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
	rulepack "github.com/turnguard/turnguard/rules"
)

// recordExamples runs a processor on an embedded server over dataDir, as
// `processor --data-dir` does, and publishes the README's two example
// sessions. It returns a function that stops processor and server.
func recordExamples(t *testing.T, dataDir string) (stop func()) {
	t.Helper()
	srv, err := embedded.Start(embedded.Config{DataDir: dataDir, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	signer, _, err := keyfile.ReceiptSigner(filepath.Join(dataDir, "receipt-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	// As the processor does: the public key next to the private one,
	// which verify picks by default.
	if err := keyfile.WriteReceiptPublic(filepath.Join(dataDir, "receipt-key.pub"), signer); err != nil {
		t.Fatal(err)
	}
	rs := guardiantest.DefaultRules(t)
	nc, err := nats.Connect("", nats.InProcessServer(srv))
	if err != nil {
		t.Fatal(err)
	}
	cfg := stream.DefaultConfig()
	p, err := stream.New(nc, guardiantest.New(t, guardian.Config{Receipts: signer}), policy.NewSource(rs), cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	n := uint64(0)
	for _, s := range []struct {
		id   string
		envs []examples.Envelope
	}{{examples.SessionID, examples.Session("")}, {examples.TaintSessionID, examples.Taint("")}} {
		for _, e := range s.envs {
			if _, err := js.Publish(ctx, acs.InboundPrefix+".default."+s.id+"."+e.Hook, e.Data); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	testwait.Eventually(t, 20*time.Second, 5*time.Millisecond, "examples not processed", func() bool {
		return p.Stats().Processed.Load() >= n
	})
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("processor: %v", err)
		}
		nc.Close()
		srv.Shutdown()
		srv.WaitForShutdown()
	}
	t.Cleanup(stop)
	return stop
}

func TestReplayCommands(t *testing.T) {
	data := t.TempDir()
	stop := recordExamples(t, data)

	// While the processor holds the store, replay must not open it.
	code, _, stderr := runReplay(t, "sessions", "--data-dir", data)
	if code != exitError || !strings.Contains(stderr, "a processor is running on") {
		t.Fatalf("replay on a store in use: exit %d, %q", code, stderr)
	}
	stop()

	shadow := filepath.Join(t.TempDir(), "shadow.yaml")
	const taintWhen = "    on: [toolCallRequest]\n    when: $consequential_call && !$users_own_call && !$per_value_call && !$reading_command\n"
	pack := strings.Replace(string(rulepack.Default()), taintWhen, "    mode: shadow\n"+taintWhen, 1)
	if pack == string(rulepack.Default()) {
		t.Fatal("TG-TAINT-001's condition is not in the default pack as this test expects")
	}
	if err := os.WriteFile(shadow, []byte(pack), 0o644); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(t.TempDir(), "report.html")
	otherKey := filepath.Join(t.TempDir(), "other.pem")
	if _, _, err := keyfile.ReceiptSigner(otherKey); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		// want are substrings of standard output, or of standard error
		// when the command fails.
		want []string
	}{
		{"sessions", []string{"sessions", "--data-dir", data}, exitOK,
			[]string{examples.SessionID + "  acme-coder", examples.TaintSessionID, "closed", "open"}},
		{"sessions of another agent", []string{"sessions", "--data-dir", data, "--agent", "nobody"}, exitOK,
			[]string{"SESSION"}},
		{"sessions as JSON", []string{"sessions", "--data-dir", data, "--format", "json"}, exitOK,
			[]string{`"session_id":"` + examples.TaintSessionID + `"`, `"denies":1`}},
		{"timeline", []string{"timeline", "--data-dir", data, "--session", examples.TaintSessionID}, exitOK,
			[]string{"chain   intact", "toolCallRequest Bash", "deny", "TG-TAINT-001", "set untrusted_content by toolCallResult web_fetch until turn 3"}},
		{"timeline as JSON", []string{"timeline", "--data-dir", data, "--session", examples.TaintSessionID, "--format", "json"}, exitOK,
			[]string{`"hook":"toolCallRequest"`, `"decision":"deny"`}},
		{"timeline as HTML", []string{"timeline", "--data-dir", data, "--session", examples.TaintSessionID, "--format", "html", "--output", report}, exitOK, nil},
		{"run with the live rules", []string{"run", "--data-dir", data, "--rules", "builtin:default", "--fail-on-diff"}, exitOK,
			[]string{"no differences", "compared  14 envelopes in 2 sessions"}},
		{"run of one tenant", []string{"run", "--data-dir", data, "--rules", "builtin:default", "--tenant", "default", "--fail-on-diff"}, exitOK,
			[]string{"selected  tenant default", "compared  14 envelopes in 2 sessions"}},
		{"run of one session, its tenant found", []string{"run", "--data-dir", data, "--rules", "builtin:default", "--session", examples.TaintSessionID, "--fail-on-diff"}, exitOK,
			[]string{"compared  6 envelopes in 1 session ", "no differences"}},
		{"a gate over a tenant with nothing recorded fails", []string{"run", "--data-dir", data, "--rules", "builtin:default", "--tenant", "acme", "--fail-on-diff"}, exitNothingCompared,
			[]string{"compared  0 envelopes in 0 sessions", "NOTHING COMPARED"}},
		{"a gate after the last envelope fails", []string{"run", "--data-dir", data, "--rules", "builtin:default", "--from", "2099-01-01T00:00:00Z", "--fail-on-diff"}, exitNothingCompared,
			[]string{"NOTHING COMPARED"}},
		{"a gate told an empty range is fine", []string{"run", "--data-dir", data, "--rules", "builtin:default", "--tenant", "acme", "--fail-on-diff", "--allow-empty"}, exitOK,
			[]string{"NOTHING COMPARED"}},
		{"a report without a gate over nothing", []string{"run", "--data-dir", data, "--rules", "builtin:default", "--tenant", "acme"}, exitOK,
			[]string{"NOTHING COMPARED"}},
		{"sessions of every tenant, said so", []string{"sessions", "--data-dir", data, "--tenant", "*"}, exitOK,
			[]string{examples.SessionID, examples.TaintSessionID}},
		{"sessions of another tenant", []string{"sessions", "--data-dir", data, "--tenant", "acme", "--format", "json"}, exitOK, nil},
		{"a tenant that is no tenant", []string{"sessions", "--data-dir", data, "--tenant", "a.b"}, exitError, []string{"--tenant"}},
		{"timeline of a session in another tenant", []string{"timeline", "--data-dir", data, "--tenant", "acme", "--session", examples.TaintSessionID}, exitError,
			[]string{"no envelopes of session " + examples.TaintSessionID + " (tenant acme)"}},
		{"timeline of a session in no tenant", []string{"timeline", "--data-dir", data, "--session", "nope"}, exitError,
			[]string{"no envelopes of session nope in any tenant"}},
		{"verify without the receipt key", []string{"verify", "--data-dir", data, "--session", examples.TaintSessionID, "--receipt-key", "none"}, exitDifferences,
			[]string{"result     partly checked: 6 chain entries sound; not checked: 7 receipts (no --receipt-key): not verified"}},
		{"run with the taint rule in shadow mode", []string{"run", "--data-dir", data, "--rules", shadow, "--diff", "--fail-on-diff"}, exitDifferences,
			[]string{"deny→allow       1", "TG-TAINT-001  shadow  1", "decision deny → allow"}},
		{"run without --fail-on-diff", []string{"run", "--data-dir", data, "--rules", shadow}, exitOK, []string{"1 envelope differs"}},
		{"run as JSON", []string{"run", "--data-dir", data, "--rules", shadow, "--format", "json"}, exitOK, []string{`"deny→allow": 1`}},
		{"verify with the store's receipt key", []string{"verify", "--data-dir", data, "--session", examples.TaintSessionID}, exitOK,
			[]string{"chain      intact: 6 chain entries of 6 envelopes", "messages   6 on the decision subject: 6 checked, 0 not checked; 1 alert: 1 checked", "result     verified: 6 chain entries, 7 receipts checked"}},
		{"verify with the operational alerts", []string{"verify", "--data-dir", data, "--session", examples.TaintSessionID, "--system-alerts"}, exitOK,
			[]string{"result     verified"}},
		{"verify the operational alerts alone, when there are none", []string{"verify", "--data-dir", data, "--system-alerts"}, exitDifferences,
			[]string{"0 alerts", "result     nothing checked"}},
		{"verify without a session", []string{"verify", "--data-dir", data}, exitError, []string{"--session or --all is required"}},
		{"verify --all", []string{"verify", "--data-dir", data, "--all"}, exitOK,
			[]string{"sweep      all tenants", "decisions  14: 14 checked, 0 not checked", "alerts     1: 1 checked, 0 not checked", "rejected   0", "result     verified"}},
		{"verify --all of one tenant in a range", []string{"verify", "--data-dir", data, "--all", "--tenant", "default", "--since", "1h"}, exitOK,
			[]string{"sweep      tenant default, stored ", "decisions  14: 14 checked", "result     verified"}},
		{"verify --all of another tenant", []string{"verify", "--data-dir", data, "--all", "--tenant", "acme"}, exitDifferences,
			[]string{"decisions  0: 0 checked", "alerts     0:", "result     nothing checked"}},
		{"verify --all after the last message", []string{"verify", "--data-dir", data, "--all", "--from", "2099-01-01T00:00:00Z"}, exitDifferences,
			[]string{"decisions  0:", "result     nothing checked"}},
		{"verify --all as JSON", []string{"verify", "--data-dir", data, "--all", "--format", "json"}, exitOK,
			[]string{`"sweep": {`, `"tenant": "*"`, `"decisions": 14`, `"rejected": []`}},
		{"verify --all with another key", []string{"verify", "--data-dir", data, "--all", "--receipt-key", otherKey}, exitDifferences,
			[]string{"rejected   15", "result     15 messages rejected", "ACS_DECISIONS", "ACS_ALERTS", "receipt made with key"}},
		{"verify --all and --session", []string{"verify", "--data-dir", data, "--all", "--session", examples.TaintSessionID}, exitError,
			[]string{"--all and --session are alternatives"}},
		{"verify a session in a range", []string{"verify", "--data-dir", data, "--session", examples.TaintSessionID, "--since", "1h"}, exitError,
			[]string{"--session verifies the whole session"}},
		{"run without rules", []string{"run", "--data-dir", data}, exitError, []string{"--rules is required"}},
		{"bad format", []string{"timeline", "--data-dir", data, "--session", "x", "--format", "pdf"}, exitError, []string{`--format "pdf"`}},
		{"bad time", []string{"sessions", "--data-dir", data, "--from", "yesterday"}, exitError, []string{"RFC 3339"}},
		{"no store", []string{"sessions", "--data-dir", t.TempDir()}, exitError, []string{"no turnguard store under"}},
		{"unknown command", []string{"rewind"}, exitError, []string{`unknown command "rewind"`}},
		{"version", []string{"version"}, exitOK, []string{"replay "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if slices.Contains([]string{"timeline", "run", "verify"}, args[0]) {
				// The processor above decided without a skew window (the
				// examples carry timestamps of their own); replay is given
				// the processor's core flags, as the README says.
				args = append(slices.Clone(args), "--skew-window", "0")
			}
			code, stdout, stderr := runReplay(t, args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, stdout, stderr)
			}
			out := stdout
			if code == exitError {
				out = stderr
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	// Every command takes --tenant alike, "*" by default, and says so.
	for _, cmd := range []string{"sessions", "timeline", "run", "verify"} {
		code, _, help := runReplay(t, cmd, "--help")
		if code != exitOK || !strings.Contains(help, "-tenant string") || !strings.Contains(help, `"*" (the default): every tenant`) || !strings.Contains(help, `(default "*")`) {
			t.Errorf("replay %s --help: exit %d, --tenant not documented alike:\n%s", cmd, code, help)
		}
	}
	// Without a receipt key nothing can be checked: --all then fails, as
	// an audit that proves nothing must.
	for _, name := range []string{"receipt-key.pub", "receipt-key.pem"} {
		if err := os.Rename(filepath.Join(data, name), filepath.Join(data, name+".away")); err != nil {
			t.Fatal(err)
		}
	}
	if code, stdout, stderr := runReplay(t, "verify", "--data-dir", data, "--all"); code != exitDifferences ||
		!strings.Contains(stdout, "decisions  14: 0 checked, 14 not checked") || !strings.Contains(stdout, "not verified") {
		t.Errorf("verify --all without a key: exit %d\n%s%s", code, stdout, stderr)
	}
	// A range after the last envelope is empty, at once.
	if code, stdout, stderr := runReplay(t, "sessions", "--data-dir", data, "--from", "2099-01-01T00:00:00Z", "--format", "json"); code != exitOK || stdout != "" {
		t.Errorf("sessions after the last envelope: exit %d, %q %q", code, stdout, stderr)
	}
	html, err := os.ReadFile(report)
	if err != nil || !strings.Contains(string(html), "Session "+examples.TaintSessionID) {
		t.Fatalf("HTML report: %v", err)
	}
}

func runReplay(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr strings.Builder
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}
