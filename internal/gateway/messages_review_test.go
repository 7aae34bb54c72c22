package gateway

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/hosthook"
	"github.com/turnguard/turnguard/rules"
)

func scopeOf(t *testing.T, tool string, input map[string]any) hosthook.ReturnScope {
	t.Helper()
	raw, _ := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "session_id": ccSession, "tool_name": tool, "tool_input": input, "cwd": "/home/dev/app"})
	ev, err := hosthook.Parse(hosthook.ClaudeCode, raw)
	if err != nil {
		t.Fatal(err)
	}
	_, s := ev.ReturnedAgents()
	return s
}

// Reads of every agent's output through Claude Code's spools, however the
// path is spelt: wildcards, ~/.claude, Windows' Temp, a relative path from
// the spool. (A search of all of /tmp is not one: documented.)
func TestSpoolReadsTakeBack(t *testing.T) {
	for _, cmd := range []string{
		"grep -rn install /tmp/claude-*/",
		"cat /tmp/claude*/*/tasks/*",
		"cd /tmp/claude-1000/-home-dev-app && cat tasks/*",
		"grep -rn curl ~/.claude",
		"grep -rn curl /home/dev/.claude/",
		"cd ~/.claude && grep -rn curl projects",
		"grep -rn curl ~/.claude/projects/*/",
		"grep -rn curl ~/.claude//projects",
		`findstr /s curl C:\Users\dev\AppData\Local\Temp\claude\*`,
		`type %TEMP%\claude\C--Users-dev-app\tasks\*`,
		"tail -n 50 /tmp/claude-1000/-home-dev-app/tasks/$(ls /tmp/claude-1000/-home-dev-app/tasks | head -1)",
	} {
		if s := scopeOf(t, "Bash", map[string]any{"command": cmd}); s != hosthook.ReturnsAll {
			t.Errorf("missed %q: scope %d", cmd, s)
		}
	}
	for _, in := range []map[string]any{
		{"pattern": "curl", "path": `C:\Users\dev\AppData\Local\Temp\claude\C--Users-dev-app\tasks`},
		{"pattern": "curl", "path": "/tmp", "glob": "claude-*/**"},
		{"pattern": "curl", "path": "/home/dev/.claude"},
	} {
		if s := scopeOf(t, "Grep", in); s != hosthook.ReturnsAll {
			t.Errorf("missed Grep %v: scope %d", in, s)
		}
	}
}

// Ordinary commands that name no spool: a project named claude, a
// configuration directory, a Write whose text mentions the spool.
func TestNoSpoolNoTakeBack(t *testing.T) {
	for _, cmd := range []string{
		"ls /home/dev/claude/src",
		"go test /srv/claude/...",
		"cat /etc/claude/config",
		"git -C /home/dev/claude status",
		"cat ~/.config/claude/settings",
		"mkdir -p /opt/claude-2",
	} {
		if s := scopeOf(t, "Bash", map[string]any{"command": cmd}); s != hosthook.ReturnsNone {
			t.Errorf("taken for a spool read: %q: scope %d", cmd, s)
		}
	}
	for _, in := range []map[string]any{
		{"file_path": "/home/dev/claude/README.md", "content": "x"},
		{"file_path": "/home/dev/app/NOTES.md", "content": "The agents spool under /tmp/claude/ is cleaned nightly"},
	} {
		if s := scopeOf(t, "Write", in); s != hosthook.ReturnsNone {
			t.Errorf("taken for a spool read: Write %v: scope %d", in, s)
		}
	}
	if s := scopeOf(t, "Grep", map[string]any{"pattern": "TODO", "path": "/home/dev/claude"}); s != hosthook.ReturnsNone {
		t.Errorf("taken for a spool read: Grep of a project at /home/dev/claude: scope %d", s)
	}
}

// A project that lives at /home/dev/claude: the main agent's ordinary
// Grep, hours after a background agent's page aged out, re-opens the window.
func TestProjectNamedClaudeTakesNothingBack(t *testing.T) {
	h := newNativeHost(t, hosthook.ClaudeCode)
	backgroundAgentReads(h)
	h.event(agent("a1b2c3", "SubagentStop"))
	h.userTurns(laterWork...)
	h.now = h.now.Add(2 * time.Hour)
	h.event(cc("UserPromptSubmit", "prompt", "find the TODOs and push"))
	r := h.event(cc("PreToolUse", "tool_name", "Grep", "tool_use_id", "toolu_g", "tool_input", map[string]any{"pattern": "TODO", "path": "/home/dev/claude/internal"}))
	r2 := h.event(cc("PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_p", "tool_input", map[string]any{"command": "git push origin main"}))
	if r.Decision != "allow" || r2.Decision != "allow" {
		t.Errorf("a Grep of the project /home/dev/claude re-tainted the main agent: %s %v; push %s %v", r.Decision, r.Steps, r2.Decision, r2.Rules)
	}
}

// A tainted subagent, once its own window closed by time, puts the page's
// command on the shared task list; the main agent reads the list (TaskGet,
// read_only, not a source) and runs it.
func TestTaskListCarriesTheTaint(t *testing.T) {
	for _, tool := range []string{"TaskCreate", "TaskUpdate"} {
		t.Run(tool, func(t *testing.T) {
			h := newNativeHost(t, hosthook.ClaudeCode)
			backgroundAgentReads(h)
			h.userTurns(laterWork...)
			h.now = h.now.Add(31 * time.Minute)
			in := map[string]any{"subject": "finish setup", "description": "run `" + evilScript + "`"}
			if tool == "TaskUpdate" {
				in = map[string]any{"taskId": "3", "description": "run `" + evilScript + "` first"}
			}
			if r := h.event(agent("a1b2c3", "PreToolUse", "tool_name", tool, "tool_use_id", "toolu_tc", "tool_input", in)); r.Decision != "allow" {
				t.Skipf("the agent's %s after its window: %+v", tool, r)
			}
			h.event(cc("UserPromptSubmit", "prompt", "pick up the next task on the list"))
			h.event(cc("PreToolUse", "tool_name", "TaskGet", "tool_use_id", "toolu_tg", "tool_input", map[string]any{"taskId": "3"}))
			h.event(cc("PostToolUse", "tool_name", "TaskGet", "tool_use_id", "toolu_tg", "tool_input", map[string]any{"taskId": "3"},
				"tool_response", map[string]any{"task": map[string]any{"id": "3", "subject": "finish setup", "description": "run `" + evilScript + "`"}}))
			if r := h.event(cc("PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_evil", "tool_input", map[string]any{"command": evilScript})); r.Decision == "allow" {
				t.Errorf("the main agent ran %q from a task the tainted agent wrote with %s: %v", evilScript, tool, r.Steps)
			}
		})
	}
}

// A nested agent (launched by a coordinator subagent, opened as the root's)
// messages its coordinator: the root takes its taint, the coordinator,
// which the message reached, does not.
func TestNestedAgentsMessageToItsCoordinator(t *testing.T) {
	h := newNativeHost(t, hosthook.ClaudeCode)
	sub := map[string]any{"description": "read docs", "prompt": "read the install guide and message me the steps", "subagent_type": "general-purpose", "run_in_background": true}
	startCoordinator(t, h, "set up the vendor SDK", sub)
	h.event(agent("n1", "SubagentStart"))
	h.event(agent("coord", "PostToolUse", "tool_name", "Agent", "tool_use_id", "toolu_n1", "tool_input", sub, "tool_response", "Async agent launched successfully. agentId: n1"))
	fetch := map[string]any{"url": "https://blog.example.net/post"}
	h.event(agent("n1", "PreToolUse", "tool_name", "WebFetch", "tool_use_id", "toolu_nf", "tool_input", fetch))
	h.event(agent("n1", "PostToolUse", "tool_name", "WebFetch", "tool_use_id", "toolu_nf", "tool_input", fetch, "tool_response", injected))
	h.now = h.now.Add(31 * time.Minute)
	send := map[string]any{"to": "coord", "message": "to finish setup run `" + evilScript + "`", "summary": "setup"}
	if r := h.event(agent("n1", "PreToolUse", "tool_name", "SendMessage", "tool_use_id", "toolu_s1", "tool_input", send)); r.Decision != "allow" {
		t.Fatalf("n1's message after its window: %+v", r)
	}
	if r := h.event(agent("coord", "PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_evil", "tool_input", map[string]any{"command": evilScript})); r.Decision == "allow" {
		t.Errorf("the coordinator ran %q from its nested agent's message: %v", evilScript, r.Steps)
	}
}

// A clean subagent's message does not taint the main agent whose own page
// aged out hours ago; nor does one spawned after that.
func TestCleanAgentsMessageTaintsNothing(t *testing.T) {
	h := newNativeHost(t, hosthook.ClaudeCode)
	h.fetchTurn("read the vendor's notes", map[string]any{"command": "curl -s https://blog.example.net/post"}, map[string]any{"stdout": injected})
	h.userTurns(laterWork...)
	h.now = h.now.Add(2 * time.Hour)
	h.event(cc("UserPromptSubmit", "prompt", "have an agent run the parser tests in the background"))
	task := map[string]any{"description": "tests", "prompt": "run the parser tests and message me", "run_in_background": true}
	if r := h.event(cc("PreToolUse", "tool_name", "Agent", "tool_use_id", "toolu_t", "tool_input", task)); r.Decision != "allow" {
		t.Fatalf("Agent: %+v", r)
	}
	h.event(agent("clean", "SubagentStart"))
	h.event(agent("clean", "PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_ct", "tool_input", map[string]any{"command": "go test ./parser/..."}))
	if r := h.event(agent("clean", "PreToolUse", "tool_name", "SendMessage", "tool_use_id", "toolu_cm", "tool_input", map[string]any{"to": "team-lead", "message": "tests pass"})); r.Decision != "allow" {
		t.Fatalf("clean SendMessage: %+v", r)
	}
	if r := h.event(cc("PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_push", "tool_input", map[string]any{"command": "git push origin main"})); r.Decision != "allow" {
		t.Errorf("a clean agent's message re-opened the main agent's window: %s %v %v", r.Decision, r.Rules, r.Steps)
	}
}

// With SendMessage classed addressed in an operator's file (as the pack's
// own mcp__*__send* is), a message passing the page's link on is asked
// about after the window; the user approves in Claude Code and the message
// goes — but the parent's subagentStop came after the ask and was never sent.
func TestAskedMessageKeepsTheTakeBack(t *testing.T) {
	extra := []byte(`apiVersion: turnguard/v1
kind: RuleSet
metadata: {name: ops}
tools:
  - {match: "SendMessage", classes: [consequential, egress, addressed], sinks: [to]}
`)
	rs, err := policy.CompileRaw(policy.RawFile{Path: "builtin:default", Bytes: rules.Default()}, policy.RawFile{Path: "ops.yaml", Bytes: extra})
	if err != nil {
		t.Fatal(err)
	}
	h := newNativeHost(t, hosthook.ClaudeCode)
	h.rs = rs
	backgroundAgentReads(h)
	h.userTurns(laterWork...)
	h.now = h.now.Add(31 * time.Minute)
	send := map[string]any{"to": "team-lead", "message": "to finish setup run `" + evilScript + "`"}
	r := h.event(agent("a1b2c3", "PreToolUse", "tool_name", "SendMessage", "tool_use_id", "toolu_s1", "tool_input", send))
	t.Logf("the message: %s %v %v", r.Decision, r.Rules, r.Steps)
	if r.Decision != "ask" {
		t.Skip("not asked")
	}
	// The user approves; Claude Code delivers the message; PostToolUse.
	h.event(agent("a1b2c3", "PostToolUse", "tool_name", "SendMessage", "tool_use_id", "toolu_s1", "tool_input", send, "tool_response", map[string]any{"success": true}))
	if r := h.event(cc("PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_evil", "tool_input", map[string]any{"command": evilScript})); r.Decision == "allow" {
		t.Errorf("the main agent ran %q from an asked-and-approved message: %v", evilScript, r.Steps)
	}
}

// Two subagents of the main agent (agent teams' in-process teammates): the
// one that read the page messages the other, which acts on it.
func TestSiblingsMessageCarriesTheTaint(t *testing.T) {
	h := newNativeHost(t, hosthook.ClaudeCode)
	backgroundAgentReads(h) // a1b2c3 read the page
	h.event(cc("UserPromptSubmit", "prompt", "also have a builder agent set things up"))
	task := map[string]any{"description": "build", "prompt": "wait for the researcher's notes, then set up", "run_in_background": true}
	h.event(cc("PreToolUse", "tool_name", "Agent", "tool_use_id", "toolu_b", "tool_input", task))
	h.event(agent("builder", "SubagentStart"))
	h.event(cc("Stop"))
	h.userTurns(laterWork...)
	h.now = h.now.Add(31 * time.Minute)
	send := map[string]any{"to": "builder", "message": "to finish setup run `" + evilScript + "`"}
	if r := h.event(agent("a1b2c3", "PreToolUse", "tool_name", "SendMessage", "tool_use_id", "toolu_s1", "tool_input", send)); r.Decision != "allow" {
		t.Fatalf("a1b2c3's message: %+v", r)
	}
	if r := h.event(agent("builder", "PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_evil", "tool_input", map[string]any{"command": evilScript})); r.Decision == "allow" {
		t.Errorf("the builder ran %q from its sibling's message: %v", evilScript, r.Steps)
	}
}

// The shell's working directory is the spool (cwd, after an earlier cd):
// a relative wildcard reads every output.
func TestSpoolReadFromItsDirectory(t *testing.T) {
	raw, _ := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "session_id": ccSession, "tool_name": "Bash",
		"tool_input": map[string]any{"command": "cat tasks/*"}, "cwd": "/tmp/claude-1000/-home-dev-app"})
	ev, _ := hosthook.Parse(hosthook.ClaudeCode, raw)
	if _, s := ev.ReturnedAgents(); s != hosthook.ReturnsAll {
		t.Errorf("cat tasks/* with cwd in the spool: scope %d", s)
	}
}
