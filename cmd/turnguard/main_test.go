package main

import (
	"bytes"
	"context"
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/clidoc"
)

var update = flag.Bool("update", false, "rewrite docs/reference/turnguard.md from the flag definitions")

// TestHelpReference: docs/reference/turnguard.md is what --help prints
// (go test -update rewrites it).
func TestHelpReference(t *testing.T) {
	page := clidoc.Reference("turnguard", "What `--help` prints, generated from the flag definitions (`go test ./cmd/turnguard -run TestHelpReference -update`);\n"+
		"the test fails when the two differ. How hosts run it: [HOOKS.md](../HOOKS.md#codex-and-command-hooks).",
		[][]string{{"hook", "claude-code", "--help"}}, func(args []string) string {
			var out bytes.Buffer
			run(context.Background(), args, strings.NewReader(""), &out, &out)
			return out.String()
		})
	clidoc.Check(t, filepath.Join("..", "..", "docs", "reference", "turnguard.md"), page, *update)
}

// The command's own refusals, which need no processor: input that is no
// hook event exits 2 (a blocking error to the host), an unknown host and
// no command are usage errors, and without a token a tool call is denied.
func TestHookRefusals(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		stdin string
		code  int
		out   string
	}{
		{"no command", nil, "", 2, ""},
		{"an unknown host", []string{"hook", "windsurf"}, "{}", 2, ""},
		{"input that is no hook event", []string{"hook", "claude-code"}, "not json", 2, ""},
		{"no token: the tool call is denied", []string{"hook", "claude-code", "--url", "http://127.0.0.1:1"},
			`{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}`, 0, `"permissionDecision":"deny"`},
		{"no token on Stop: no answer", []string{"hook", "claude-code", "--url", "http://127.0.0.1:1"},
			`{"session_id":"s","hook_event_name":"Stop"}`, 0, ""},
		{"Cursor's prompt without a processor is not continued", []string{"hook", "cursor", "--url", "http://127.0.0.1:1"},
			`{"conversation_id":"c","hook_event_name":"beforeSubmitPrompt","prompt":"hi"}`, 0, `{"continue":false`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("TURNGUARD_HOOK_TOKEN", "")
			var out, errOut bytes.Buffer
			code := run(context.Background(), tt.args, strings.NewReader(tt.stdin), &out, &errOut)
			if code != tt.code || !strings.Contains(out.String(), tt.out) || (tt.out == "" && out.Len() != 0) {
				t.Fatalf("exit %d (want %d), stdout %q (want %q), stderr %s", code, tt.code, out.String(), tt.out, errOut.String())
			}
		})
	}
}
