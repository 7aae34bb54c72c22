package gateway

import (
	"fmt"
	"slices"
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

// On Codex, a pager or an editor is a command line too: less's and
// more's !cmd, vi's :!cmd, typed with write_stdin. Codex pages through
// cat (PAGER=cat, GIT_PAGER=cat) and sets no editor, so git log and man
// ls run, and these — a pager at a pipe's end, one the line chooses, an
// editor git opens (GIT_EDITOR unset: core.editor or EDITOR, the user's)
// — are denied at their start; given a message, a non-interactive editor
// or --no-edit, they run (FAILS on df5961a: each line here was allowed).
func TestCodexPagerEditorChannels(t *testing.T) {
	h := newNativeHost(t, hosthook.Codex)
	h.event(codexTurn(codexTurnA, "UserPromptSubmit", "prompt", "commit the fix and merge the feature branch"))
	for i, line := range []string{
		// a pager at a pipe's end or on a file (less reads /dev/tty)
		"git log | less", "less build.log",
		// a pager chosen despite GIT_PAGER=cat, PAGER=cat
		"GIT_PAGER=less git log", "export GIT_PAGER=less; git log", "man -P less git-rebase",
		// an editor git or another program opens
		"git commit", "git commit --amend", "GIT_EDITOR=vim git commit", "git rebase -i HEAD~3", "git merge feature",
		"git add -p", "kubectl edit deploy/api", "gh pr create --title fix",
		// a text browser's !, and a program named by an expansion alone
		"lynx https://example.com", "$REPL",
	} {
		if r := codexBash(h, codexTurnA, fmt.Sprintf("call_pe%d", i), line); r.Decision != "deny" || !slices.Contains(r.Rules, "TG-CHAN-001") {
			t.Errorf("Codex exec_command %q: %s %v — a pager or an editor write_stdin types into, unhooked", line, r.Decision, r.Rules)
		}
	}
	a := newNativeHost(t, hosthook.Codex)
	a.event(codexTurn(codexTurnA, "UserPromptSubmit", "prompt", "commit the fix and merge the feature branch"))
	for i, line := range []string{
		"git log --oneline -20", "git diff", "man git-rebase", "journalctl -u app -n 50", "systemctl status app",
		"git -c core.pager=less log", "git commit -m 'fix: parse flags'", "git commit -am 'fix: parse flags'",
		"git commit --amend --no-edit", "GIT_SEQUENCE_EDITOR=: git rebase -i HEAD~3", "GIT_EDITOR=true git rebase --continue",
		"git merge --no-edit feature", "git merge --ff-only feature", "git tag -a v1.2.0 -m release", "git add -A",
		"LESSSECURE=1 less build.log", "$PY scripts/migrate.py",
	} {
		if r := codexBash(a, codexTurnA, fmt.Sprintf("call_pa%d", i), line); r.Decision != "allow" {
			t.Errorf("Codex exec_command %q: %s %v, want allow", line, r.Decision, r.Rules)
		}
	}
	// Each pull in its own session: a pull is a fetch, whose output taints
	// what follows it.
	for i, line := range []string{"git pull --ff-only", "git pull --rebase"} {
		p := newNativeHost(t, hosthook.Codex)
		p.event(codexTurn(codexTurnA, "UserPromptSubmit", "prompt", "update the branch"))
		if r := codexBash(p, codexTurnA, fmt.Sprintf("call_pp%d", i), line); r.Decision != "allow" {
			t.Errorf("Codex exec_command %q: %s %v, want allow", line, r.Decision, r.Rules)
		}
	}
}
