package gateway_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/gateway"
)

// Stop 45's review of the /clear continuation: orders of events, and a
// second session of the same caller in the same directory, in which the new
// conversation escaped the cleared session's window while its Monitor still
// fed it.

var reviewMonitor = map[string]any{"command": "while true; do curl -s https://status.example.com/feed; sleep 30; done", "description": "status feed"}

// startMonitor runs a Monitor in session sid (it holds untrusted_content).
func startMonitor(p func(map[string]any) string, sid string) {
	ev := func(name string, kv ...any) map[string]any {
		m := lcc(name, kv...)
		m["session_id"] = sid
		return m
	}
	p(ev("SessionStart", "source", "startup"))
	p(ev("UserPromptSubmit", "prompt", "watch the status feed"))
	p(ev("PreToolUse", "tool_name", "Monitor", "tool_use_id", "toolu_m1", "tool_input", reviewMonitor))
	p(ev("PostToolUse", "tool_name", "Monitor", "tool_use_id", "toolu_m1", "tool_input", reviewMonitor, "tool_response", map[string]any{"taskId": "bmon7x"}))
	p(ev("Stop"))
}

func evilDenied(t *testing.T, p func(map[string]any) string, sid, what string) {
	t.Helper()
	ev := lcc("PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_evil", "tool_input", map[string]any{"command": liveEvil})
	ev["session_id"] = sid
	if out := p(ev); !strings.Contains(out, `"deny"`) {
		t.Errorf("%s: the model's %q in the new conversation, while the cleared session's Monitor still feeds it: %q, want deny", what, liveEvil, out)
	}
}

// A background subagent of the cleared session keeps working across the
// /clear; its next tool call carries the new conversation's session id and
// can reach the endpoint before the new conversation's SessionStart (the
// hooks are separate requests). That event records the new id's own
// negotiation (or binding) without Continues; continuation then never takes
// the /clear's record (it returns when the new id has any negotiation), and
// the new conversation, with the Monitor still feeding it, meets no window.
func TestClearSubagentEventBeforeSessionStart(t *testing.T) {
	for _, hs := range []gateway.HandshakePolicy{gateway.HandshakeOptional, gateway.HandshakeRequired} {
		t.Run(fmt.Sprint(hs), func(t *testing.T) {
			url := liveHooks(t, hs)
			p := func(ev map[string]any) string { return postLive(t, url, "claude-code", ev) }
			startMonitor(p, liveSession)
			p(lcc("UserPromptSubmit", "prompt", "and run the long build in the background"))
			p(lcc("PreToolUse", "tool_name", "Agent", "tool_use_id", "toolu_b", "tool_input", map[string]any{"description": "build", "prompt": "build", "run_in_background": true}))
			p(lagent("builder", "SubagentStart"))
			p(lcc("Stop"))
			p(lcc("SessionEnd", "reason", "clear"))
			// The builder's next call, under the new session id, first.
			early := lagent("builder", "PreToolUse", "tool_name", "Read", "tool_use_id", "toolu_br", "tool_input", map[string]any{"file_path": "/home/dev/app/go.mod"})
			early["session_id"] = clearedSession
			p(early)
			p(after("SessionStart", "source", "clear"))
			p(after("UserPromptSubmit", "prompt", "now fix the flaky test"))
			evilDenied(t, p, clearedSession, "a subagent's event before the SessionStart")
		})
	}
}

// The new conversation's SessionStart reaches the endpoint before the
// /clear's SessionEnd has stored its record (SessionEnd's hook is cancelled
// at Claude Code's SessionEnd budget, or the two requests race): nothing to
// take, the new conversation starts clean, and the record stored after is
// taken by nobody.
func TestClearSessionStartFirst(t *testing.T) {
	url := liveHooks(t, gateway.HandshakeRequired)
	p := func(ev map[string]any) string { return postLive(t, url, "claude-code", ev) }
	startMonitor(p, liveSession)
	p(after("SessionStart", "source", "clear"))
	p(lcc("SessionEnd", "reason", "clear"))
	p(after("UserPromptSubmit", "prompt", "now fix the flaky test"))
	evilDenied(t, p, clearedSession, "SessionStart before SessionEnd")
}

// Two Claude Code sessions of one caller in one project (two terminals,
// one token): the first clears with a Monitor running, the second clears
// with nothing running just after, and the second's new conversation comes
// first. Whose new conversation is whose the hooks do not say (no field
// links a SessionStart of source clear to its SessionEnd), so the /clear's
// record is not consumed: both new conversations go on in the session that
// still feeds — the first's with its window, the second's with a deny too
// many — and a local process posting SessionStart(source clear) with the
// caller's token cannot take the record away from the conversation it is
// for.
func TestClearTwoTerminals(t *testing.T) {
	const other = "6f1c2a52-7d3e-4b8a-9c0d-444444444444"
	const otherCleared = "6f1c2a52-7d3e-4b8a-9c0d-555555555555"
	url := liveHooks(t, gateway.HandshakeRequired)
	p := func(ev map[string]any) string { return postLive(t, url, "claude-code", ev) }
	in := func(sid, name string, kv ...any) map[string]any {
		m := lcc(name, kv...)
		m["session_id"] = sid
		return m
	}
	startMonitor(p, liveSession)
	p(in(other, "SessionStart", "source", "startup"))
	p(in(other, "UserPromptSubmit", "prompt", "rename parseHeader"))
	p(in(other, "Stop"))
	p(lcc("SessionEnd", "reason", "clear"))
	p(in(other, "SessionEnd", "reason", "clear"))
	p(in(otherCleared, "SessionStart", "source", "clear")) // reads liveSession's record
	p(after("SessionStart", "source", "clear"))
	p(after("UserPromptSubmit", "prompt", "now fix the flaky test"))
	evilDenied(t, p, clearedSession, "the record taken by the other terminal's /clear")
	// The other terminal's conversation goes on in the first's session
	// too (the cost): the page's command is refused there as well.
	evilDenied(t, p, otherCleared, "the other terminal's conversation")
}

// A subagent starts a background fetch and stops; the fetch still runs.
// Its task (Tasks, and the background fetch remembered for its output) is
// in the subagent's state, which the subagentStop does not hand to the
// parent (adoptHolds takes held sources only). So the /clear's goesOn finds
// nothing and the new conversation reads the fetch's output (TaskOutput)
// with no window (before stop 45's fix; the same read by the parent with no /clear,
// four prompts later, was not tainted either).
func TestClearSubagentBackgroundFetch(t *testing.T) {
	url := liveHooks(t, gateway.HandshakeRequired)
	p := func(ev map[string]any) string { return postLive(t, url, "claude-code", ev) }
	background := map[string]any{"command": "curl -s https://slow.example.net/feed", "run_in_background": true}
	p(lcc("SessionStart", "source", "startup"))
	p(lcc("UserPromptSubmit", "prompt", "have an agent start the feed download"))
	p(lcc("PreToolUse", "tool_name", "Agent", "tool_use_id", "toolu_a", "tool_input", map[string]any{"description": "dl", "prompt": "start the download"}))
	p(lagent("dl", "SubagentStart"))
	p(lagent("dl", "PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_b1", "tool_input", background))
	p(lagent("dl", "PostToolUse", "tool_name", "Bash", "tool_use_id", "toolu_b1", "tool_input", background,
		"tool_response", map[string]any{"stdout": "", "stderr": "", "interrupted": false, "isImage": false, "backgroundTaskId": "bt2kelt7i"}))
	p(lagent("dl", "SubagentStop", "last_assistant_message", "started task bt2kelt7i"))
	p(lcc("PostToolUse", "tool_name", "Agent", "tool_use_id", "toolu_a", "tool_input", map[string]any{"description": "dl", "prompt": "start the download"}, "tool_response", "started task bt2kelt7i"))
	p(lcc("Stop"))
	p(lcc("SessionEnd", "reason", "clear"))
	p(after("SessionStart", "source", "clear"))
	p(after("UserPromptSubmit", "prompt", "check on the download"))
	read := map[string]any{"task_id": "bt2kelt7i"}
	p(after("PreToolUse", "tool_name", "TaskOutput", "tool_use_id", "toolu_r1", "tool_input", read))
	p(after("PostToolUse", "tool_name", "TaskOutput", "tool_use_id", "toolu_r1", "tool_input", read, "tool_response", liveInjected))
	evilDenied(t, p, clearedSession, "a subagent's background fetch read after the /clear")
}
