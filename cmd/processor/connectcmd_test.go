package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/gateway"
)

// TestConnectClaudeCode: connect claude-code adds a caller whose token it
// prints once, and merges Claude Code's hooks into the settings file,
// keeping what was there, without hooking an event twice when run again;
// a settings file it cannot merge leaves the callers file untouched.
func TestConnectClaudeCode(t *testing.T) {
	dir := t.TempDir()
	callers, settings := filepath.Join(dir, "callers.yaml"), filepath.Join(dir, ".claude", "settings.local.json")
	if err := os.MkdirAll(filepath.Dir(settings), 0o755); err != nil {
		t.Fatal(err)
	}
	mine := `{"model": "opus", "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint.sh"}]}]}}`
	if err := os.WriteFile(settings, []byte(mine), 0o600); err != nil {
		t.Fatal(err)
	}
	connect := func() string {
		t.Helper()
		var out, errOut bytes.Buffer
		args := []string{"connect", "claude-code", "--tokens", callers, "--settings", settings, "--url", "http://127.0.0.1:8787/"}
		if code := run(context.Background(), args, &out, &errOut); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
		return strings.TrimSpace(out.String())
	}
	first, second := connect(), connect()
	cs, err := gateway.LoadCallers(callers)
	if err != nil || cs.Len() != 2 || first == second {
		t.Fatalf("callers %v (%v), tokens %q %q", cs, err, first, second)
	}
	raw, _ := os.ReadFile(callers)
	for _, tok := range []string{first, second} {
		if !strings.HasPrefix(tok, gateway.TokenPrefix) || strings.Contains(string(raw), tok) || !strings.Contains(string(raw), gateway.HashToken(tok)) {
			t.Fatalf("token %q, callers file:\n%s", tok, raw)
		}
	}
	var doc struct {
		Model string                      `json:"model"`
		Hooks map[string][]map[string]any `json:"hooks"`
	}
	raw, _ = os.ReadFile(settings)
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Model != "opus" {
		t.Errorf("the settings' own keys were lost:\n%s", raw)
	}
	for _, e := range connectHosts["claude-code"].events {
		groups := doc.Hooks[e.event]
		want := 1
		if e.event == "PreToolUse" {
			want = 2 // the user's own lint hook, and turnguard's
		}
		if len(groups) != want {
			t.Fatalf("%s has %d hook groups, want %d:\n%s", e.event, len(groups), want, raw)
		}
		hook := groups[len(groups)-1]["hooks"].([]any)[0].(map[string]any)
		if hook["url"] != "http://127.0.0.1:8787/hooks/claude-code" || hook["headers"].(map[string]any)["Authorization"] != "Bearer $TURNGUARD_HOOK_TOKEN" ||
			(hook["onFailure"] == "block") != e.block || strings.Contains(string(raw), first) {
			t.Errorf("%s hook %v", e.event, hook)
		}
	}
	if err := os.WriteFile(settings, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"connect", "claude-code", "--tokens", callers, "--settings", settings}, &out, &errOut); code != 1 || out.Len() != 0 {
		t.Fatalf("unreadable settings: exit %d, stdout %q", code, out.String())
	}
	if cs, _ := gateway.LoadCallers(callers); cs.Len() != 2 {
		t.Fatalf("a failed connect added a caller: %d", cs.Len())
	}
	for _, args := range [][]string{{"connect"}, {"connect", "windsurf"}, {"connect", "claude-code"}, {"connect", "claude-code", "--tokens", callers, "--url", "ftp://x"}} {
		if code := run(context.Background(), args, &out, &errOut); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}

// TestConnectCodex: connect codex hooks UserPromptSubmit, PreToolUse and PostToolUse with the
// turnguard command, once however often it runs.
func TestConnectCodex(t *testing.T) {
	dir := t.TempDir()
	callers, settings := filepath.Join(dir, "callers.yaml"), filepath.Join(dir, ".codex", "hooks.json")
	for range 2 {
		var out, errOut bytes.Buffer
		args := []string{"connect", "codex", "--tokens", callers, "--settings", settings, "--hook-command", "/opt/turnguard/bin/turnguard"}
		if code := run(context.Background(), args, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), gateway.TokenPrefix) {
			t.Fatalf("exit %d, stdout %q: %s", code, out.String(), errOut.String())
		}
	}
	var doc struct {
		Hooks map[string][]struct {
			Hooks []map[string]any `json:"hooks"`
		} `json:"hooks"`
	}
	raw, _ := os.ReadFile(settings)
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, event := range []string{"UserPromptSubmit", "PreToolUse", "PostToolUse"} {
		groups := doc.Hooks[event]
		if len(groups) != 1 || groups[0].Hooks[0]["command"] != "/opt/turnguard/bin/turnguard hook codex --url http://127.0.0.1:8787" {
			t.Errorf("%s: %+v", event, groups)
		}
	}
	if len(doc.Hooks) != 3 {
		t.Errorf("hooks %v, want UserPromptSubmit, PreToolUse and PostToolUse only", doc.Hooks)
	}
}

// TestConnectCursor: connect cursor writes Cursor's flat hooks.json
// (version 1, a list of hooks per event), failClosed where a hook can
// stop something, keeping the user's own hooks, once however often it runs.
func TestConnectCursor(t *testing.T) {
	dir := t.TempDir()
	callers, settings := filepath.Join(dir, "callers.yaml"), filepath.Join(dir, ".cursor", "hooks.json")
	if err := os.MkdirAll(filepath.Dir(settings), 0o755); err != nil {
		t.Fatal(err)
	}
	mine := `{"version": 1, "hooks": {"afterFileEdit": [{"command": "./format.sh"}], "preToolUse": [{"command": "./audit.sh", "matcher": "Shell"}]}}`
	if err := os.WriteFile(settings, []byte(mine), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), []string{"connect", "cursor", "--tokens", callers, "--settings", settings}, &out, &errOut); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
	}
	var doc struct {
		Version int                         `json:"version"`
		Hooks   map[string][]map[string]any `json:"hooks"`
	}
	raw, _ := os.ReadFile(settings)
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Version != 1 || len(doc.Hooks["afterFileEdit"]) != 1 || len(doc.Hooks["preToolUse"]) != 2 {
		t.Fatalf("the user's hooks or the version were not kept, or turnguard's doubled:\n%s", raw)
	}
	for _, e := range connectHosts["cursor"].events {
		hooks := doc.Hooks[e.event]
		h := hooks[len(hooks)-1]
		if h["command"] != "turnguard hook cursor --url http://127.0.0.1:8787" || (h["failClosed"] == true) != e.block {
			t.Errorf("%s: %v", e.event, h)
		}
	}
}
