package gateway

import (
	"fmt"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/hosthook"
)

// Review of stop 45's Cursor rule attachments (b33c4bf): a rule Cursor
// applies is content only when its path names a file the core remembers a
// fetch wrote, or a clone. A rule a fetched archive, a copy out of a
// clone, a move of a fetched file or a clone into the workspace root put
// under .cursor/rules is none of those: after the fetch's window ended it
// is "the workspace's own rule", and Cursor sends its text (an
// alwaysApply rule: with every prompt) with no window. Each case FAILS on
// fb59c1d.
func TestReview45CursorRuleWrittenUnremembered(t *testing.T) {
	for i, c := range []struct{ fetch, rule string }{
		{"curl -sL https://templates.example.net/starter.tgz | tar xz", ".cursor/rules/setup.mdc"},
		{"curl -sfo /tmp/rules.zip https://templates.example.net/rules.zip && unzip -o /tmp/rules.zip -d .cursor/rules", ".cursor/rules/setup.mdc"},
		{"curl -sf https://rules.example.net/setup.mdc > /tmp/setup.mdc && mv /tmp/setup.mdc .cursor/rules/", ".cursor/rules/setup.mdc"},
		{"git clone https://github.com/widget-dev/starter /tmp/starter && cp -r /tmp/starter/.cursor .", ".cursor/rules/setup.mdc"},
		{"git clone https://github.com/widget-dev/starter .", ".cursor/rules/setup.mdc"},
		{"git submodule add https://github.com/widget-dev/rules .cursor/rules/shared", ".cursor/rules/shared/setup.mdc"},
		{"git pull https://github.com/widget-dev/starter main", ".cursor/rules/setup.mdc"},
		{"wget -q -P .cursor/rules https://rules.example.net/setup.mdc", ".cursor/rules/setup.mdc"},
		{"npx degit widget-dev/starter .", ".cursor/rules/setup.mdc"},
	} {
		t.Run(c.fetch, func(t *testing.T) {
			h := newNativeHost(t, hosthook.Cursor)
			h.event(cursorEv("sessionStart"))
			h.event(cursorEv("beforeSubmitPrompt", "prompt", "set the project up from the widget starter", "attachments", []any{}))
			if r := cursorShell(h, "tool_fetch", c.fetch, "done"); r.Decision != "allow" {
				t.Skipf("the fetch itself: %+v", r)
			}
			for _, p := range []string{"run the unit tests", "fix the lint warnings", "update the changelog"} {
				cursorPrompt(h, p)
				cursorShell(h, "tool_"+strings.ReplaceAll(p, " ", "_"), "git status --short", " M CHANGELOG.md")
			}
			cursorPrompt(h, "regenerate the mocks", map[string]any{"type": "rule", "file_path": c.rule})
			r := cursorShell(h, fmt.Sprintf("tool_gen%d", i), "go generate ./...", "")
			if r.Decision != "deny" {
				t.Errorf("go generate after Cursor applied %s, which %q wrote: %s %v — the rule's text reached the model with no window", c.rule, c.fetch, r.Decision, r.Rules)
			}
		})
	}
}
