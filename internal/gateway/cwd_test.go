package gateway

import (
	"testing"

	"github.com/turnguard/turnguard/internal/hosthook"
)

// Claude Code's Grep names the directory it searches by its absolute
// path; a clone the session made by a relative name (vendor/widget) sits
// under it. The core compares them through the working directory the hook
// reports (metadata.cwd): a search of the project reads the clone.
func TestSearchOfTheProjectReadsItsClone(t *testing.T) {
	for _, tc := range []struct {
		dir  string
		deny bool
	}{{"/home/dev/app", true}, {"/home/dev/app/vendor", true}, {"/home/dev/app/src", false}} {
		t.Run(tc.dir, func(t *testing.T) {
			h := newNativeHost(t, hosthook.ClaudeCode)
			clone := map[string]any{"command": "git clone https://github.com/someone/widget.git vendor/widget"}
			h.fetchTurn("vendor the widget library", clone, map[string]any{"stdout": "", "stderr": "Cloning into 'vendor/widget'..."})
			h.userTurns(laterWork...)
			grep := map[string]any{"pattern": "TODO", "path": tc.dir, "output_mode": "content"}
			h.event(cc("UserPromptSubmit", "prompt", "list the TODOs"))
			h.event(cc("PreToolUse", "tool_name", "Grep", "tool_use_id", "toolu_g", "tool_input", grep))
			h.event(cc("PostToolUse", "tool_name", "Grep", "tool_use_id", "toolu_g", "tool_input", grep, "tool_response", injected))
			r := h.event(cc("PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_evil", "tool_input", map[string]any{"command": evilScript}))
			if denied := r.Decision == "deny"; denied != tc.deny {
				t.Fatalf("after a Grep of %s: %q %s, want denied %v", tc.dir, evilScript, r.Decision, tc.deny)
			}
		})
	}
}
