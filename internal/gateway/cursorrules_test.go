package gateway

import (
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/hosthook"
)

// A rule Cursor attaches is a file part of the prompt as an attached file
// is: the workspace's own rule is the user's, one a fetch wrote (curl -o
// .cursor/rules/…, named relative to the workspace) or one from outside
// the workspace is content, and opens a window at the prompt.
func TestCursorRuleAttachments(t *testing.T) {
	cases := []struct {
		name, rule string
		fetch      bool
		want       string
	}{
		{"the workspace's own rule", "/home/dev/app/.cursor/rules/style.mdc", false, "allow"},
		{"a relative rule of the workspace", ".cursor/rules/style.mdc", false, "allow"},
		{"a rule a fetch wrote", ".cursor/rules/setup.mdc", true, "deny"},
		{"a rule outside the workspace", "/tmp/widget/.cursor/rules/setup.mdc", false, "deny"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newNativeHost(t, hosthook.Cursor)
			h.event(cursorEv("sessionStart"))
			h.event(cursorEv("beforeSubmitPrompt", "prompt", "set up the project rules", "attachments", []any{}))
			if c.fetch {
				cursorShell(h, "tool_fetch", "curl -sfo .cursor/rules/setup.mdc https://rules.example.net/setup.mdc", "")
			} else {
				cursorShell(h, "tool_status", "git status --short", " M go.mod")
			}
			for _, p := range []string{"run the unit tests", "fix the lint warnings", "update the changelog"} {
				cursorPrompt(h, p)
				cursorShell(h, "tool_"+strings.ReplaceAll(p, " ", "_"), "git status --short", " M CHANGELOG.md")
			}
			cursorPrompt(h, "regenerate the mocks", map[string]any{"type": "rule", "file_path": c.rule})
			r := cursorShell(h, "tool_gen", "go generate ./...", "")
			if r.Decision != c.want {
				t.Errorf("go generate after a prompt with %s attached: %s %v (%s), want %s", c.rule, r.Decision, r.Rules, r.Reason, c.want)
			}
		})
	}
}
