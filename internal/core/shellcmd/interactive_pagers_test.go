package shellcmd

import "testing"

// TestInteractivePagersEditors: programs that reach a command line
// through a pager (less's and more's !cmd, a text browser's !) or an
// editor (vi's :!cmd), run directly, at a pipe's end or by another
// program, which TG-CHAN-001 let through (FAILS on df5961a). Codex pages
// through cat and sets no editor (codexEnv): what counts is a pager or
// an editor the line chooses, and what opens the user's editor itself.
func TestInteractivePagersEditors(t *testing.T) {
	for _, l := range []string{
		// a pager on a file or a pipe's end: less reads keys from
		// /dev/tty whatever its input; -F still waits on a long file
		"less README.md", "more notes.txt", "most notes.txt", "pg notes.txt", "zless log.gz", "git log | less",
		"ls -la | less", "cat big.log | less -F", "git diff | more", "git log | timeout 600 less", "git log | sudo less",
		"echo | bash -c 'git log | less'", "ls | xargs less", "less notes.txt &",
		// a pager chosen despite Codex's PAGER=cat
		"GIT_PAGER=less git log", "env GIT_PAGER=less git diff", "PAGER=less man ls", "MANPAGER=less man git",
		"man -P less ls", "man --pager=less ls", "SYSTEMD_PAGER=less journalctl", "GH_PAGER=less gh pr diff",
		"PSQL_PAGER=less psql -c 'select * from users' app_dev", "export GIT_PAGER=less; git log", "unset GIT_PAGER; git log",
		"env -u GIT_PAGER git log", "GIT_PAGER='diff-so-fancy | less' git diff", "sudo git log", "unset PAGER; journalctl",
		"echo | GIT_PAGER=less git log", "eval 'export GIT_PAGER=less'; git log", "export PAGER=less; make docs",
		// an editor git opens: its editor is GIT_EDITOR, or core.editor
		// (the user's configuration, unseen), else EDITOR, vi
		"git commit", "git commit -a", "git commit --amend", "git commit -e -m wip", "git commit -c HEAD",
		"git commit --fixup=amend:HEAD~1", "git commit --squash HEAD~1", "git commit -p -m x", "git rebase -i HEAD~3",
		"git rebase --interactive main", "git rebase --edit-todo", "git rebase --continue", "git tag -a v1.2.0",
		"git tag -s v1.2.0", "git tag -a v1 -m x -e", "git merge feature", "git merge --no-ff feature", "git merge --continue",
		"git pull", "git pull origin main", "git pull --no-rebase", "git pull --rebase=interactive", "git add -p", "git add -i",
		"git add -e", "git add --patch src/", "git checkout -p", "git reset -p", "git stash -p", "git stash push --patch",
		"git notes add", "git notes edit", "git config --edit", "git config -e --global", "git send-email --compose 0001.patch",
		"git revert HEAD", "git cherry-pick -e abc123", "git am -i series.mbox", "git difftool", "git mergetool",
		"GIT_EDITOR=vim git commit", "GIT_EDITOR=myeditor git commit", "EDITOR=cat git commit", "git -c core.editor=vim commit",
		"TERM=xterm-256color git commit", "GIT_SEQUENCE_EDITOR='sed -i s/pick/squash/' git rebase -i HEAD~3",
		"GIT_SEQUENCE_EDITOR=: git rebase -i --autosquash HEAD~3", "if true; then export GIT_EDITOR=true; fi; git commit",
		"(export GIT_EDITOR=true); git commit", "GIT_EDITOR=true; git commit", "GIT_EDITOR=\"sh -c bash\" git commit",
		// commands git runs with the terminal
		"git rebase -x bash HEAD~1", "git submodule foreach bash", "git bisect run bash",
		// other programs' editors
		"kubectl edit deploy/api", "oc edit dc/api", "kubectl create -f pod.yaml --edit", "systemctl edit nginx",
		"sudo systemctl edit nginx", "visudo", "vipw", "vigr", "fc", "gh pr create", "gh pr create -t 'fix'", "gh pr create -e", "gh issue create",
		"gh pr comment 12", "gh issue comment 7",
		// text browsers, mail and git interfaces with a shell escape
		"lynx https://example.com", "links example.com", "elinks example.com", "w3m example.com",
		"curl -s https://example.com | w3m -T text/html", "mutt", "neomutt", "mutt -s hi dev@example.com", "tig",
		"git log | tig", "lazygit", "gitui",
		// vim reading its text from the pipe, its keys from the terminal
		"cat notes.txt | vim -",
		// a program named through an expansion the reading cannot tell,
		// or one the line names
		"$PY", "\"$REPL\"", "${TOOL}", "$(cat cmd.txt)", "exec \"$@\"", "timeout 5 $CMD", "$NOTHING python3",
		"$VENV/bin/python", "X=python3; $X -i", "PY=python3; $PY", "for c in python3; do $c; done", "cat notes | $P",
		"export X=$(python3)",
	} {
		if !Interactive(l) {
			t.Errorf("Interactive(%q) = false: it reaches a command line through a pager or an editor", l)
		}
	}
}

// TestInteractivePagersEditorsAllowed: what stays allowed — Codex pages
// through cat (PAGER=cat, GIT_PAGER=cat, GH_PAGER=cat, which outrank
// core.pager and pager.<cmd>), a pager whose output is not the terminal
// prints and exits, a message or a non-interactive editor given opens no
// editor, and a merge that makes no commit edits nothing.
func TestInteractivePagersEditorsAllowed(t *testing.T) {
	for _, l := range []string{
		"git log", "git log --oneline -20", "git diff", "git show HEAD", "git blame main.go", "git branch -a", "git tag",
		"git stash list", "git --paginate log", "git -p log", "git -c core.pager=less log", "git -c pager.log=less log",
		"PAGER=less git log", "PAGER=less gh pr view 3", "gh pr diff", "man ls", "man git-commit", "git help log",
		"git log --help", "journalctl", "journalctl -u nginx -n 100", "systemctl status", "systemctl status nginx",
		"sudo journalctl -u nginx", "SYSTEMD_PAGERSECURE=1 SYSTEMD_PAGER=less journalctl", "aws s3 ls", "psql -c 'select 1' app_dev",
		"LESSSECURE=1 less notes.txt", "export LESSSECURE=1; less notes.txt", "git log | LESSSECURE=1 less",
		"GIT_PAGER='LESSSECURE=1 less' git log", "less notes.txt | head", "less notes.txt > /tmp/out", "git log | less > /tmp/log",
		"x=$(less notes.txt)", "nohup less notes.txt &", "git log | cat", "GIT_PAGER=cat git log", "git --no-pager log",
		"command -v less", "less --version", "sudo -E git log", "sudo apt-get install -y jq && git log", "env -i make; git log",
		"(export GIT_PAGER=less); git log", "bash -c 'export GIT_PAGER=less'; git log", "GIT_PAGER=less true; git log",
		// a message given, or an editor that reads nothing typed
		"git commit -m 'fix: x'", "git commit -am 'fix: x'", "git commit -am 'fix -p parsing'", "git commit -F msg.txt",
		"git commit --amend --no-edit", "git commit --amend -m 'x'", "git commit -C HEAD", "git commit --fixup HEAD~1",
		"git commit --fixup=HEAD~1", "git commit --no-edit", "git commit -sm x", "git commit -m x -S", "git commit --dry-run",
		"echo msg | git commit -F -", "git commit < /dev/null", "GIT_EDITOR=true git commit", "GIT_EDITOR=: git commit",
		"export GIT_EDITOR=true; git commit", "export GIT_EDITOR=true && git commit", "git -c core.editor=true commit",
		"GIT_EDITOR='code --wait' git commit", "GIT_EDITOR='vim -es +wq' git commit",
		"git rebase main", "git rebase --onto main a b", "git rebase --abort", "git rebase -x 'make test' main",
		"GIT_SEQUENCE_EDITOR=: git rebase -i HEAD~3", "GIT_SEQUENCE_EDITOR=true git rebase -i main",
		"git -c sequence.editor=: rebase -i HEAD~3", "GIT_EDITOR=true git rebase --continue",
		"GIT_SEQUENCE_EDITOR='sed -i s/pick/fixup/' GIT_EDITOR=true git rebase -i HEAD~3",
		// a merge that opens no editor, or a rebase pull
		"git merge --no-edit feature", "git merge --ff-only feature", "git merge -m 'merge feature' feature",
		"git merge --squash feature", "git merge --no-commit feature", "git merge --abort", "GIT_MERGE_AUTOEDIT=no git merge feature",
		"git merge feature > /tmp/merge.log", "git pull --ff-only", "git pull --no-edit", "git pull --rebase", "git pull -r",
		"git pull --rebase=merges origin main",
		"git tag v1.2.0", "git tag -a v1.2.0 -m 'release'", "git tag -s v1.2.0 -m x", "git tag -l", "git tag -d v1", "git tag -n5",
		"git add -A", "git add .", "git add -u", "git stash", "git stash pop", "git stash show -p", "git log -p",
		"git notes add -m 'ok'", "git notes list", "git config --list", "git config user.name dev",
		"git send-email --confirm=never 0001.patch", "git revert --no-edit HEAD", "git revert -n HEAD", "git cherry-pick abc123",
		"git difftool --tool-help", "git difftool -t meld", "git bisect run make test", "git submodule foreach git pull --ff-only",
		"kubectl get pods", "kubectl apply -f app.yaml", "KUBE_EDITOR=true kubectl edit deploy/api", "EDITOR=true crontab -e",
		"crontab -l", "visudo -c", "fc -l", "SUDO_EDITOR=true sudoedit /etc/hosts", "systemctl edit --stdin nginx <<<'[Service]'",
		"gh pr create --fill", "gh pr create -t fix -b body", "gh pr create --body body", "gh pr create --body-file pr.md",
		"gh pr create -F pr.md", "gh pr create --web", "gh pr create --fill-first", "gh pr create --fill-verbose",
		"gh issue create -t x -b y", "gh pr comment 12 --body ok", "gh pr view 12", "gh pr create --title x | cat",
		"lynx -dump https://example.com", "w3m -dump example.com", "elinks -dump example.com", "links -dump example.com",
		"lynx -source https://example.com", "mutt -s hi dev@example.com < body.txt",
		"$PY script.py", "\"$CC\" -o app main.c", "$CC -o app main.c", "\"$(git rev-parse --show-toplevel)/scripts/ci.sh\"",
		"$DIR/run.sh --fast", "X=make; $X", "for c in 'make build' 'make test'; do $c; done", "cat notes | $PAGER",
		"vim -es -c wq notes.txt", "sudo apt-get install -y jq", "docker ps | less > ps.txt",
	} {
		if Interactive(l) {
			t.Errorf("Interactive(%q) = true: nothing it starts reads what is typed as a command", l)
		}
	}
}
