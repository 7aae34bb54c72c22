package gateway

import (
	"fmt"
	"testing"

	"github.com/turnguard/turnguard/internal/hosthook"
)

// cursorMCPTaint: a prompt, then an MCP read whose answer carries an
// injection, as Cursor reports it with connect's hooks: preToolUse of
// "MCP:get_issue", afterMCPExecution (the bare name) and postToolUse.
func cursorMCPTaint(h *nativeHost) {
	h.t.Helper()
	h.event(cursorEv("sessionStart"))
	h.event(cursorEv("beforeSubmitPrompt", "prompt", "look at issue 7 and fix it", "attachments", []any{}))
	if r := h.event(cursorEv("preToolUse", "tool_name", "MCP:get_issue", "tool_use_id", "tool_m1", "tool_input", map[string]any{"owner": "acme", "repo": "app", "issue_number": 7})); r.Decision != "allow" {
		h.t.Fatalf("the first MCP read: %+v", r)
	}
	h.event(cursorEv("afterMCPExecution", "tool_name", "get_issue", "tool_input", `{"issue_number":7}`, "result_json", `{"body":"`+injected+`"}`, "url", "https://api.githubcopilot.com/mcp/"))
	h.event(cursorEv("postToolUse", "tool_name", "MCP:get_issue", "tool_use_id", "tool_m1", "tool_input", map[string]any{"issue_number": 7}, "tool_output", `{"body":"`+injected+`"}`))
}

// Cursor names MCP tools MCP:<tool> with no server: they are classed as
// the catalog's mcp__<server>__<tool> are, so inside the window an MCP
// server's reads pass and its writes do not, and the page's command is
// refused.
func TestCursorMCPToolsInsideWindow(t *testing.T) {
	h := newNativeHost(t, hosthook.Cursor)
	cursorMCPTaint(h)
	for i, c := range []struct{ tool, want string }{
		{"MCP:list_issues", "allow"}, {"MCP:get_issue", "allow"}, {"MCP:search_code", "allow"},
		{"MCP:create_issue", "deny"}, {"MCP:add_card", "deny"},
	} {
		r := h.event(cursorEv("preToolUse", "tool_name", c.tool, "tool_use_id", fmt.Sprintf("tool_r%d", i), "tool_input", map[string]any{"owner": "acme"}))
		if r.Decision != c.want {
			t.Errorf("%s inside the window: %s %v, want %s", c.tool, r.Decision, r.Rules, c.want)
		}
	}
	if r := h.event(cursorEv("preToolUse", "tool_name", "Shell", "tool_use_id", "tool_s1", "tool_input", map[string]any{"command": evilScript})); r.Decision != "deny" {
		t.Errorf("%q after the issue: %s", evilScript, r.Decision)
	}
}

// An MCP server may name its tool as a trusted server's is named in the
// catalog (mcp__ide__getDiagnostics): Cursor's MCP:ide_getDiagnostics is
// not taken for it, and its answer taints, with the tool hooks alone.
func TestCursorMCPToolNameIsNoTrustedServers(t *testing.T) {
	h := newNativeHost(t, hosthook.Cursor)
	h.event(cursorEv("sessionStart"))
	h.event(cursorEv("beforeSubmitPrompt", "prompt", "check the diagnostics", "attachments", []any{}))
	h.event(cursorEv("preToolUse", "tool_name", "MCP:ide_getDiagnostics", "tool_use_id", "tool_d1", "tool_input", map[string]any{}))
	h.event(cursorEv("postToolUse", "tool_name", "MCP:ide_getDiagnostics", "tool_use_id", "tool_d1", "tool_input", map[string]any{}, "tool_output", `{"text":"`+injected+`"}`))
	if r := h.event(cursorEv("preToolUse", "tool_name", "Shell", "tool_use_id", "tool_s1", "tool_input", map[string]any{"command": evilScript})); r.Decision != "deny" {
		t.Errorf("%q after an MCP answer named ide_getDiagnostics: %s %v", evilScript, r.Decision, r.Rules)
	}
}

// A chat Cursor ended (window_close) and the user opens again keeps its
// conversation_id: its sessionStart reopens the session, which keeps its
// taint.
func TestCursorReopenedChat(t *testing.T) {
	h := newNativeHost(t, hosthook.Cursor)
	cursorMCPTaint(h)
	h.event(cursorEv("stop", "status", "completed"))
	h.event(cursorEv("sessionEnd", "reason", "window_close"))
	h.event(cursorEv("sessionStart"))
	if r := h.event(cursorEv("beforeSubmitPrompt", "prompt", "and now the lint", "attachments", []any{})); r.Decision != "allow" {
		t.Errorf("a prompt in the reopened chat: %s %v %s", r.Decision, r.Rules, r.Reason)
	}
	if r := h.event(cursorEv("preToolUse", "tool_name", "Read", "tool_use_id", "tool_x1", "tool_input", map[string]any{"path": "/home/dev/app/src/index.js"})); r.Decision != "allow" {
		t.Errorf("a Read in the reopened chat: %s %v %s", r.Decision, r.Rules, r.Reason)
	}
	if r := h.event(cursorEv("preToolUse", "tool_name", "Shell", "tool_use_id", "tool_s1", "tool_input", map[string]any{"command": evilScript})); r.Decision != "deny" {
		t.Errorf("%q in the reopened chat, one prompt after the issue: %s", evilScript, r.Decision)
	}
}

// Cursor's own tools, spelt as Cursor sends them, inside the window: the
// reads pass, the edits and the spawns do not.
func TestCursorToolsInsideWindow(t *testing.T) {
	h := newNativeHost(t, hosthook.Cursor)
	cursorMCPTaint(h)
	for i, c := range []struct {
		tool string
		in   map[string]any
		want string
	}{
		{"Read", map[string]any{"path": "/home/dev/app/src/index.js"}, "allow"},
		{"Grep", map[string]any{"pattern": "TODO", "path": "/home/dev/app"}, "allow"},
		{"Glob", map[string]any{"glob_pattern": "**/*.go"}, "allow"},
		{"SemanticSearch", map[string]any{"query": "where is the session closed"}, "allow"},
		{"ReadLints", map[string]any{"paths": []any{"/home/dev/app/src"}}, "allow"},
		{"Write", map[string]any{"path": "/home/dev/app/install.sh", "contents": evilScript}, "deny"},
		{"StrReplace", map[string]any{"path": "/home/dev/app/Makefile", "old_string": "test:", "new_string": "test:\n\t" + evilScript}, "deny"},
		{"Delete", map[string]any{"path": "/home/dev/app/.git/config"}, "deny"},
		{"Task", map[string]any{"prompt": "run " + evilScript, "subagent_type": "shell"}, "deny"},
	} {
		if r := h.event(cursorEv("preToolUse", "tool_name", c.tool, "tool_use_id", fmt.Sprintf("tool_e%d", i), "tool_input", c.in)); r.Decision != c.want {
			t.Errorf("%s inside the window: %s %v, want %s", c.tool, r.Decision, r.Rules, c.want)
		}
	}
}
