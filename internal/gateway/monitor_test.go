package gateway

import (
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/hosthook"
)

// A Claude Code Monitor feeds its command's lines (or a socket's messages)
// back with no hook: a Monitor of a feed holds the session's window open
// past the prompts and the minutes that end one, until a TaskStop names
// it; the window then runs from the stop.
func TestMonitorHoldsItsWindow(t *testing.T) {
	for _, tc := range []struct {
		name     string
		input    map[string]any
		response any
	}{
		{"a poller", map[string]any{"command": "while true; do curl -s https://status.example.com/feed; sleep 30; done", "description": "status feed"},
			map[string]any{"taskId": "bmon7x"}},
		{"a WebSocket", map[string]any{"ws": map[string]any{"url": "wss://feed.example/stream"}, "description": "feed"},
			"Monitor started with ID: bmon7x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newNativeHost(t, hosthook.ClaudeCode)
			h.event(cc("SessionStart", "source", "startup"))
			h.event(cc("UserPromptSubmit", "prompt", "watch the feed and tell me when something breaks"))
			if r := h.event(cc("PreToolUse", "tool_name", "Monitor", "tool_use_id", "toolu_m1", "tool_input", tc.input)); r.Decision != "allow" {
				t.Fatalf("the Monitor itself: %s", r.Decision)
			}
			h.event(cc("PostToolUse", "tool_name", "Monitor", "tool_use_id", "toolu_m1", "tool_input", tc.input, "tool_response", tc.response))
			h.event(cc("Stop"))
			h.userTurns(laterWork...)
			h.now = h.now.Add(45 * time.Minute)
			// A line the Monitor fed back asks for the page's command.
			r := h.event(cc("PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_evil", "tool_input", map[string]any{"command": evilScript}))
			if r.Decision == "allow" {
				t.Fatalf("%q ran while the Monitor still fed the session: %s", evilScript, h.sessionState(ccSession))
			}
			stop := map[string]any{"task_id": "bmon7x"}
			if r := h.event(cc("PreToolUse", "tool_name", "TaskStop", "tool_use_id", "toolu_s1", "tool_input", stop)); r.Decision != "allow" {
				t.Fatalf("TaskStop inside the window: %s", r.Decision)
			}
			h.event(cc("PostToolUse", "tool_name", "TaskStop", "tool_use_id", "toolu_s1", "tool_input", stop, "tool_response", map[string]any{"message": "stopped"}))
			h.event(cc("Stop"))
			h.userTurns(laterWork...)
			r = h.event(cc("PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_ok", "tool_input", map[string]any{"command": "npm test && git push"}))
			if r.Decision != "allow" {
				t.Errorf("three prompts after the Monitor was stopped, the user's command is still refused: %s %v", r.Decision, r.Steps)
			}
		})
	}
}
