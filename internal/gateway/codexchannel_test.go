package gateway

import (
	"slices"
	"testing"

	"github.com/turnguard/turnguard/internal/hosthook"
)

// TG-CHAN-001: on Codex, a program reading its commands from the terminal
// is denied at its start, as the review's lines are
// (TestCodexInteractiveInterpreterIsAnUnhookedChannel); a program given
// its code, its script or its input runs, and so does the same program on
// a host whose later input to it is hooked or does not exist.
func TestCodexUnhookedChannelPrecision(t *testing.T) {
	h := newNativeHost(t, hosthook.Codex)
	r := codexBash(h, codexTurnA, "call_repl", "python3")
	if r.Decision != "deny" || !slices.Contains(r.Rules, "TG-CHAN-001") {
		t.Errorf("python3 on Codex: %+v, want TG-CHAN-001's deny", r)
	}
	for i, line := range []string{
		"python3 -c 'import sys; print(sys.version)'", "python3 scripts/migrate.py --dry-run", "echo 'select 1;' | psql app_dev",
		"psql app_dev <<'SQL'\nselect count(*) from users;\nSQL", "bash scripts/ci.sh", "ssh build-box 'uptime'", "node --version",
		"docker exec web ls /srv", "go test ./...", "git log --oneline -5",
	} {
		if r := codexBash(h, codexTurnA, "call_"+string(rune('a'+i)), line); r.Decision != "allow" {
			t.Errorf("%q on Codex: %+v", line, r)
		}
	}
	c := newNativeHost(t, hosthook.ClaudeCode)
	c.event(cc("SessionStart", "source", "startup"))
	c.event(cc("UserPromptSubmit", "prompt", "check the python version"))
	if r := c.event(cc("PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_py", "tool_input", map[string]any{"command": "python3"})); r.Decision != "allow" {
		t.Errorf("python3 on Claude Code (no write_stdin): %+v", r)
	}
}
