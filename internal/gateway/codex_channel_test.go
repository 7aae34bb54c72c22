package gateway

import (
	"fmt"
	"testing"

	"github.com/turnguard/turnguard/internal/hosthook"
)

// Stop 45's review of TG-CHAN-001: on Codex, with no window open
// (the user asked for a shell, a REPL, a pod's console before any page),
// these lines start a program that reads what write_stdin types — later,
// inside a page's window, each typed line runs with no hook, and a fetch
// typed into it opens no window at all. TG-CHAN-001's first reading
// denied "bash" and "python3 -i" and let each line here through; each is
// denied now.
func TestCodexChannelSpellingsDenied(t *testing.T) {
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
