package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnguard/turnguard/examples"
)

func TestTailCommand(t *testing.T) {
	data := t.TempDir()
	recordExamples(t, data)()

	// The deny and its alert, read from the start of the recording, with
	// the data dir's receipt key.
	code, out, stderr := runReplay(t, "tail", "--data-dir", data, "--since", "1h", "--rule", "TG-TAINT-001", "--count", "2", "--color", "always")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "replay tail: connected; waiting for decisions and alerts") || strings.Contains(out, "waiting") {
		t.Errorf("tail does not say on stderr (and only there) that it is connected and waiting:\nstdout %s\nstderr %s", out, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(out, "ALERT") || !strings.Contains(out, "deny") || !strings.Contains(out, "toolCallRequest Bash") || strings.Contains(out, "NOT VERIFIED") {
		t.Fatalf("tail:\n%s", out)
	}
	for _, l := range lines {
		if !strings.Contains(l, "verified") || !strings.Contains(l, "\x1b[") {
			t.Errorf("line not verified, or not coloured with --color always: %q", l)
		}
	}

	// Piped (not a terminal): no colour by default; JSON for scripts.
	code, out, stderr = runReplay(t, "tail", "--data-dir", data, "--from", time.Now().Add(-time.Hour).Format(time.RFC3339), "--alerts-only", "--json", "--count", "1")
	if code != exitOK || strings.Contains(out, "\x1b") {
		t.Fatalf("exit %d: %s %s", code, out, stderr)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if m["kind"] != "alert" || m["session_id"] != examples.TaintSessionID || m["verdict"] != "verified" {
		t.Errorf("json: %s", out)
	}

	for _, args := range [][]string{
		{"tail", "--data-dir", data, "--color", "sometimes"},
		{"tail", "--data-dir", data, "--alerts-only", "--decisions-only"},
		{"tail", "--data-dir", data, "--since", "1h", "--from", "2026-12-01T00:00:00Z"},
		{"tail", "--data-dir", data, "--tenant", "a.>"},
		{"tail", "--data-dir", data, "--session", "*"},
	} {
		if code, _, _ := runReplay(t, args...); code != exitError {
			t.Errorf("%v: exit %d, want %d", args, code, exitError)
		}
	}
}

// TestTailInterrupted: Ctrl-C (the end of main's ctx) ends a tail with
// exit 0 — following is what it was asked to do.
func TestTailInterrupted(t *testing.T) {
	data := t.TempDir()
	recordExamples(t, data)()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &cancelOnLine{cancel: cancel}
	var stderr strings.Builder
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"tail", "--data-dir", data, "--since", "1h"}, out, &stderr) }()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("tail did not end on cancel")
	}
	if !strings.Contains(out.String(), "verified") {
		t.Errorf("output: %q", out.String())
	}
}

// cancelOnLine cancels once a line has been written.
type cancelOnLine struct {
	mu     sync.Mutex
	b      strings.Builder
	cancel context.CancelFunc
}

func (c *cancelOnLine) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.b.Write(p)
	if strings.Contains(c.b.String(), "\n") {
		c.cancel()
	}
	return len(p), nil
}

func (c *cancelOnLine) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b.String()
}
