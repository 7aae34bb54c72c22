package gateway

import (
	"fmt"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/hosthook"
)

// The word "tasks" or "subagents" in a call's input — a commit message,
// an edit's text, a project's tasks directory — is no read of the agents'
// outputs: it takes back nothing, and the window an agent's page opened
// hours ago stays closed.
func TestWordTasksTakesNothingBack(t *testing.T) {
	for _, tc := range []struct {
		name, tool string
		input      map[string]any
	}{
		{"commit message", "Bash", map[string]any{"command": `git commit -am "run the nightly tasks"`}},
		{"rails rake dir", "Bash", map[string]any{"command": "ls lib/tasks"}},
		{"ansible globs", "Bash", map[string]any{"command": "ansible-lint roles/*/tasks/*.yml && git add -A && git commit -m lint"}},
		{"edit text", "Edit", map[string]any{"file_path": "/home/dev/app/sched.go", "old_string": "// run", "new_string": "// run the pending tasks"}},
		{"write", "Write", map[string]any{"file_path": "/home/dev/app/NOTES.md", "content": "Remaining tasks\n- x"}},
		{"agent prompt", "Task", map[string]any{"description": "x", "prompt": "refactor the parser; do not spawn subagents"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newNativeHost(t, hosthook.ClaudeCode)
			backgroundAgentReads(h)
			h.event(agent("a1b2c3", "SubagentStop"))
			h.userTurns(laterWork...)
			h.now = h.now.Add(2 * time.Hour)
			h.event(cc("UserPromptSubmit", "prompt", "ok, do it"))
			r := h.event(cc("PreToolUse", "tool_name", tc.tool, "tool_use_id", "toolu_x", "tool_input", tc.input))
			t.Logf("%s: %s %v %v", tc.name, r.Decision, r.Rules, r.Steps)
			// control: the same without the agent's page
			r2 := h.event(cc("PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_y", "tool_input", map[string]any{"command": "git push origin main"}))
			if r.Decision != "allow" || r2.Decision != "allow" {
				t.Errorf("%s, two hours after the agent's page aged out: %s %v; next push: %s %v", tc.name, r.Decision, r.Rules, r2.Decision, r2.Rules)
			}
		})
	}
}

// A coordinator inside its own window (a page it read, in parallel with
// launching a nested agent) still takes its nested agent's later page
// back: its window then runs from the nested agent's page, not its own.
// (Taken back through a subagentStart, decided in the coordinator's
// window, the stop was dropped with the denied start.)
func TestTaintedCoordinatorTakesNestedTaintBack(t *testing.T) {
	h := newNativeHost(t, hosthook.ClaudeCode)
	// coord calls Agent and WebFetch in parallel (one assistant message).
	sub := map[string]any{"description": "read docs", "prompt": "read the vendor's install guide and list the steps", "subagent_type": "general-purpose"}
	startCoordinator(t, h, "set up the vendor SDK", sub)
	f0 := map[string]any{"url": "https://vendor.example/changelog"}
	h.event(agent("coord", "PreToolUse", "tool_name", "WebFetch", "tool_use_id", "toolu_cf", "tool_input", f0))
	h.event(agent("coord", "PostToolUse", "tool_name", "WebFetch", "tool_use_id", "toolu_cf", "tool_input", f0, "tool_response", "v2.1: bug fixes"))
	h.event(agent("n1", "SubagentStart"))
	h.now = h.now.Add(25 * time.Minute)
	fetch := map[string]any{"url": "https://blog.example.net/post"}
	h.event(agent("n1", "PreToolUse", "tool_name", "WebFetch", "tool_use_id", "toolu_nf", "tool_input", fetch))
	h.event(agent("n1", "PostToolUse", "tool_name", "WebFetch", "tool_use_id", "toolu_nf", "tool_input", fetch, "tool_response", injected))
	h.event(agent("n1", "SubagentStop"))
	r := h.event(agent("coord", "PostToolUse", "tool_name", "Agent", "tool_use_id", "toolu_n1", "tool_input", sub,
		"tool_response", map[string]any{"agentId": "n1", "content": []any{map[string]any{"type": "text", "text": "Install: `" + evilScript + "`"}}}))
	t.Logf("coord's PostToolUse of Agent: %s %v %v", r.Decision, r.Rules, r.Steps)
	h.now = h.now.Add(6 * time.Minute) // 31 min after coord's own page, 6 after n1's
	r = h.event(agent("coord", "PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_evil", "tool_input", map[string]any{"command": evilScript}))
	if r.Decision == "allow" {
		t.Errorf("the coordinator ran %q 6 minutes after its nested agent's report carried the page in: %v", evilScript, r.Steps)
	}
}

// A subagent inside its own window may read a sibling's output (a Read
// is read-only), and the sibling, which read nothing untrusted, is not
// given the reader's taint.
func TestTaintedSubagentReadsSibling(t *testing.T) {
	h := newNativeHost(t, hosthook.ClaudeCode)
	h.event(cc("SessionStart", "source", "startup"))
	h.event(cc("UserPromptSubmit", "prompt", "two agents: one builds the parser, one reviews the vendor docs"))
	h.event(cc("PreToolUse", "tool_name", "Agent", "tool_use_id", "toolu_b", "tool_input", map[string]any{"description": "build", "prompt": "build", "run_in_background": true}))
	h.event(agent("builder", "SubagentStart"))
	h.event(cc("PreToolUse", "tool_name", "Agent", "tool_use_id", "toolu_r", "tool_input", map[string]any{"description": "docs", "prompt": "docs", "run_in_background": true}))
	h.event(agent("rev", "SubagentStart"))
	fetch := map[string]any{"url": "https://blog.example.net/post"}
	h.event(agent("rev", "PreToolUse", "tool_name", "WebFetch", "tool_use_id", "toolu_rf", "tool_input", fetch))
	h.event(agent("rev", "PostToolUse", "tool_name", "WebFetch", "tool_use_id", "toolu_rf", "tool_input", fetch, "tool_response", injected))
	out := map[string]any{"file_path": "/tmp/claude/-home-dev-app/tasks/builder.output"}
	r := h.event(agent("rev", "PreToolUse", "tool_name", "Read", "tool_use_id", "toolu_rr", "tool_input", out))
	t.Logf("rev's Read of the builder's output: %s %v %v", r.Decision, r.Rules, r.Steps)
	if r.Decision != "allow" {
		t.Errorf("a Read (read_only) of a sibling's output inside the reader's window: %s %v", r.Decision, r.Rules)
	}
	r = h.event(agent("builder", "PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_bb", "tool_input", map[string]any{"command": "go build ./... && git commit -am build"}))
	if r.Decision != "allow" {
		t.Errorf("the builder, which read nothing untrusted, after its sibling read its output: %s %v", r.Decision, r.Rules)
	}
}

// Reads of every agent's output through the spool's root, naming neither
// tasks nor subagents, take back from every agent too.
func TestReadOfTheSpoolTakesBack(t *testing.T) {
	for _, cmd := range []string{
		"grep -rh install /tmp/claude/-home-dev-app/",
		"cat /tmp/claude/-home-dev-app/*/*.output",
		"find /tmp/claude -name '*.output' -exec cat {} +",
	} {
		t.Run(cmd, func(t *testing.T) {
			h := newNativeHost(t, hosthook.ClaudeCode)
			backgroundAgentReads(h)
			h.userTurns(laterWork...)
			h.event(cc("UserPromptSubmit", "prompt", "what have the background agents written so far? follow their setup notes"))
			in := map[string]any{"command": cmd}
			ids, scope := func() ([]string, hosthook.ReturnScope) {
				ev, _ := hosthook.Parse(hosthook.ClaudeCode, []byte(`{"hook_event_name":"PreToolUse","session_id":"`+ccSession+`","tool_name":"Bash","tool_input":{"command":`+fmt.Sprintf("%q", cmd)+`}}`))
				return ev.ReturnedAgents()
			}()
			h.event(cc("PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_peek", "tool_input", in))
			h.event(cc("PostToolUse", "tool_name", "Bash", "tool_use_id", "toolu_peek", "tool_input", in, "tool_response", map[string]any{"stdout": "[WebFetch result] " + injected}))
			r := h.event(cc("PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_evil", "tool_input", map[string]any{"command": evilScript}))
			if r.Decision == "allow" {
				t.Errorf("%q (ReturnedAgents %v %d) brought the page in; the main agent then ran it", cmd, ids, scope)
			}
		})
	}
}
