package gateway_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/gateway"
)

// clearedSession is the id Claude Code gives the conversation a /clear
// starts.
const clearedSession = "6f1c2a52-7d3e-4b8a-9c0d-333333333333"

// after is a Claude Code event of the conversation after the /clear.
func after(name string, kv ...any) map[string]any {
	m := lcc(name, kv...)
	m["session_id"] = clearedSession
	return m
}

// Claude Code keeps background work running across /clear (its CHANGELOG:
// "Fixed /clear killing background agent/bash tasks — only foreground
// tasks are now cleared"), and the new conversation has a new session id.
// A Monitor polling a page, or a background fetch whose output the agent
// reads later, fed the new conversation with no window: its session knew
// neither. The new conversation now goes on in the cleared session while
// such work runs; a cleared session with none starts the new one clean.
func TestClearKeepsWhatStillFeeds(t *testing.T) {
	monitor := map[string]any{"command": "while true; do curl -s https://status.example.com/feed; sleep 30; done", "description": "status feed"}
	background := map[string]any{"command": "curl -s https://slow.example.net/feed", "run_in_background": true}
	page := map[string]any{"url": "https://blog.example.net/post"}
	for _, tc := range []struct {
		name string
		// before runs in the session the /clear ends; then is the new
		// conversation's first call after its prompt, or nil.
		before   func(p func(map[string]any) string)
		then     func(p func(map[string]any) string)
		cwd      string
		evilDeny bool
	}{
		{name: "a Monitor", evilDeny: true, before: func(p func(map[string]any) string) {
			p(lcc("PreToolUse", "tool_name", "Monitor", "tool_use_id", "toolu_m1", "tool_input", monitor))
			p(lcc("PostToolUse", "tool_name", "Monitor", "tool_use_id", "toolu_m1", "tool_input", monitor, "tool_response", map[string]any{"taskId": "bmon7x"}))
		}},
		{name: "a background fetch read after", evilDeny: true, before: func(p func(map[string]any) string) {
			p(lcc("PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_b1", "tool_input", background))
			p(lcc("PostToolUse", "tool_name", "Bash", "tool_use_id", "toolu_b1", "tool_input", background,
				"tool_response", map[string]any{"stdout": "", "stderr": "", "interrupted": false, "isImage": false, "backgroundTaskId": "bt2kelt7i"}))
		}, then: func(p func(map[string]any) string) {
			read := map[string]any{"task_id": "bt2kelt7i"}
			p(after("PreToolUse", "tool_name", "TaskOutput", "tool_use_id", "toolu_r1", "tool_input", read))
			p(after("PostToolUse", "tool_name", "TaskOutput", "tool_use_id", "toolu_r1", "tool_input", read, "tool_response", liveInjected))
		}},
		{name: "a Monitor, cleared in another directory", cwd: "/home/dev/other", before: func(p func(map[string]any) string) {
			p(lcc("PreToolUse", "tool_name", "Monitor", "tool_use_id", "toolu_m1", "tool_input", monitor))
			p(lcc("PostToolUse", "tool_name", "Monitor", "tool_use_id", "toolu_m1", "tool_input", monitor, "tool_response", map[string]any{"taskId": "bmon7x"}))
		}},
		{name: "a page read before, nothing running", before: func(p func(map[string]any) string) {
			p(lcc("PreToolUse", "tool_name", "WebFetch", "tool_use_id", "toolu_f1", "tool_input", page))
			p(lcc("PostToolUse", "tool_name", "WebFetch", "tool_use_id", "toolu_f1", "tool_input", page, "tool_response", liveInjected))
		}},
	} {
		for _, hs := range []gateway.HandshakePolicy{gateway.HandshakeOptional, gateway.HandshakeRequired} {
			t.Run(fmt.Sprintf("%s/%s", tc.name, hs), func(t *testing.T) {
				url := liveHooks(t, hs)
				p := func(ev map[string]any) string {
					if ev["session_id"] == clearedSession && tc.cwd != "" {
						ev["cwd"] = tc.cwd
					}
					return postLive(t, url, "claude-code", ev)
				}
				p(lcc("SessionStart", "source", "startup"))
				p(lcc("UserPromptSubmit", "prompt", "watch the feed and read the post"))
				tc.before(p)
				p(lcc("Stop"))
				p(lcc("SessionEnd", "reason", "clear"))
				p(after("SessionStart", "source", "clear"))
				p(after("UserPromptSubmit", "prompt", "now fix the flaky test"))
				if tc.then != nil {
					tc.then(p)
				}
				out := p(after("PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_evil", "tool_input", map[string]any{"command": liveEvil}))
				if denied := strings.Contains(out, `"deny"`); denied != tc.evilDeny {
					t.Fatalf("after /clear, the model's %q: denied %v, want %v (%s)", liveEvil, denied, tc.evilDeny, out)
				}
				if !tc.evilDeny {
					return
				}
				// The new conversation goes on in the old session: stopping
				// the Monitor there, then the user's prompts, end the window.
				stop := map[string]any{"task_id": "bmon7x"}
				if tc.then != nil {
					stop = map[string]any{"task_id": "bt2kelt7i"}
				}
				p(after("PreToolUse", "tool_name", "TaskStop", "tool_use_id", "toolu_s1", "tool_input", stop))
				p(after("PostToolUse", "tool_name", "TaskStop", "tool_use_id", "toolu_s1", "tool_input", stop, "tool_response", map[string]any{"message": "stopped"}))
				p(after("Stop"))
				for i, prompt := range []string{"rename parseHeader to readHeader", "now add a test for it", "run the tests"} {
					p(after("UserPromptSubmit", "prompt", prompt))
					if i < 2 {
						p(after("Stop"))
					}
				}
				if out := p(after("PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_ok", "tool_input", map[string]any{"command": "npm test && git push"})); out != "" {
					t.Errorf("three prompts after the stop, the user's command in the new conversation: %s", out)
				}
			})
		}
	}
}
