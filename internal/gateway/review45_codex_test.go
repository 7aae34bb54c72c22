package gateway

import (
	"fmt"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/hosthook"
)

// Review of stop 45's TG-CHAN-001 (510105c): on Codex, with no window open
// (the user asked for a shell, a REPL, a pod's console before any page),
// these lines start a program that reads what write_stdin types — later,
// inside a page's window, each typed line runs with no hook, and a fetch
// typed into it opens no window at all. TG-CHAN-001 denies "bash" and
// "python3 -i"; each line here is allowed. FAILS on fb59c1d.
func TestReview45CodexChannelSpellingsAllowed(t *testing.T) {
	for i, line := range []string{
		"bash -c bash",       // a shell's -c is not read
		"ssh build-box bash", // ssh with a shell as its command
		"docker run -e TERM=xterm -it ubuntu bash", // a valued option before -it
		"docker exec -u root -it web bash",
		"kubectl -n prod exec -it api-0 -- sh", // a global option before the subcommand
		"docker-compose exec web sh",
		"script -q /dev/null", // wrappers that start a shell on the terminal
		"rlwrap python3",
		"nsenter -t 1 -a",
		"python3 manage.py shell", // framework consoles
		"iex -S mix",
		"gdb -ex run ./app", // REPLs left open after their -ex/-cmd/-init
		"sqlite3 -cmd '.mode csv' dev.db",
		"sh < /dev/tty", // the terminal named (exec_command tty=true: a pty)
		"bash /dev/stdin",
		"head -n 100000 | sh",                   // a copier other than cat/tee
		"while read -r l; do eval \"$l\"; done", // a line runner
		"xargs -L1 sh -c",
		"$SHELL", // a program named through a variable
		"cmd",    // Windows (Codex's default shell there is PowerShell)
	} {
		t.Run(line, func(t *testing.T) {
			h := newNativeHost(t, hosthook.Codex)
			h.event(codexTurn(codexTurnA, "UserPromptSubmit", "prompt", "open a console on the app so we can poke at it"))
			r := codexBash(h, codexTurnA, fmt.Sprintf("call_ch%d", i), line)
			if r.Decision != "deny" {
				t.Errorf("Codex exec_command %q: %s %v — a program write_stdin types into, unhooked, inside any later window", line, r.Decision, r.Rules)
			}
		})
	}
}

// Review of stop 45's awaited holds (90d7b12): a Codex fetch still
// running is let go the label's window duration (30 min) after it was
// settled, though no PostToolUse says it ended — and a follow (kubectl
// logs -f, curl -N of an event stream, gh run watch) never ends by
// itself. Whoever writes what it prints (a log line carrying a request's
// header, a CI job of a pull request, the stream's server) writes past
// minute 30, and the model reads it in a write_stdin poll with no window.
// FAILS on fb59c1d.
func TestReview45CodexFollowOutlivesItsHold(t *testing.T) {
	for i, line := range []string{"kubectl logs -f deploy/api", "curl -sN https://events.example.net/stream"} {
		t.Run(line, func(t *testing.T) {
			h := newNativeHost(t, hosthook.Codex)
			h.event(codexTurn(codexTurnA, "UserPromptSubmit", "prompt", "watch the api's logs while I deploy"))
			in := map[string]any{"command": line}
			h.event(codexTurn(codexTurnA, "PreToolUse", "tool_name", "Bash", "tool_use_id", fmt.Sprintf("call_f%d", i), "tool_input", in))
			codexBash(h, codexTurnA, "call_s1", "git status")
			// write_stdin polls (no hook) keep returning lines; no PostToolUse: it still runs.
			h.now = h.now.Add(40 * time.Minute)
			h.event(codexTurn(codexTurnB, "UserPromptSubmit", "prompt", "anything odd in the logs yet?"))
			r := codexBash(h, codexTurnB, "call_e1", evilScript)
			if r.Decision != "deny" {
				t.Errorf("%q 40 minutes into %q, which has not ended (no PostToolUse): %s %v", evilScript, line, r.Decision, r.Rules)
			}
		})
	}
}
