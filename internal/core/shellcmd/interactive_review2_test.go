package shellcmd

import "testing"

// Review B of TG-CHAN-001 after stop 46 (FAILS on df97e6a): command lines a Codex
// agent can start with tty=true that leave a program reading what
// write_stdin types — a shell, a REPL, a pager's or an editor's shell
// escape — which Interactive did not report.
func TestInteractiveReview2Holes(t *testing.T) {
	for _, l := range []string{
		// the program's name spelled so the reading did not know it:
		// an ANSI-C string, a brace expansion
		"$'less' notes.txt", "$'\\x6cess' notes.txt", "$'\\154ess' notes.txt", "$'vim' notes.txt", "$'python3' -i x.py",
		"{less,} notes.txt", "{le,}ss notes.txt", "{vim,} x", "git log | {less,}", "sudo {bash,}",
		// an alias the line defines (expand_aliases, a later line of the script)
		"shopt -s expand_aliases\nalias l=less\nl notes.txt", "shopt -s expand_aliases\nalias p='python3 -i'\np x.py",
		// the terminal reaching the program through a redirect or a substitution
		"bash < <(cat)", "python3 < <(cat)", "cat < <(bash)", "cat < \"$(bash)\"", "git log > >(less)",
		"bash -c \"$(< /dev/tty)\"", "eval \"$(< /dev/stdin)\"", "x=$(</dev/stdin); eval \"$x\"",
		"select x in a; do eval \"$REPLY\"; done", "select c in a b; do $REPLY; done",
		// xargs -o gives the command the terminal, and appends what it read
		"ls | xargs -o less", "xargs -o less", "find . -name '*.md' | xargs -o more",
		"cat x | busybox less", "cat x | toybox more",
		// editors and pagers with a shell escape the reading did not list
		"nvi notes.txt", "vile notes.txt", "elvis notes.txt", "jove notes.txt", "qemacs notes.txt", "mg notes.txt",
		"jed notes.txt", "ne notes.txt", "hx notes.txt", "helix notes.txt", "kak notes.txt", "jmacs notes.txt",
		"jstar notes.txt", "jpico notes.txt", "rjoe notes.txt", "vis notes.txt", "zile notes.txt", "mcedit notes.txt",
		"dte notes.txt", "vim.tiny notes.txt", "vim.basic notes.txt", "vim.nox notes.txt", "nvim.appimage notes.txt",
		"pager notes.txt", "git log | pager", "editor notes.txt", "sensible-editor notes.txt", "ncdu", "ncdu -r /",
		"vipe", "git log | vipe | cat", "PAGER=less sensible-pager notes.txt", "unset PAGER; sensible-pager notes.txt",
		"sensible-browser https://example.com", "www-browser https://example.com", "xdg-open https://example.com",
		// programs that open the user's editor
		"edquota app", "npm edit lodash", "hg commit", "hg ci -A", "hg commit --amend", "hg histedit", "sl commit",
		"svn commit", "svn ci src/", "svn propedit svn:ignore .", "bzr commit", "brz commit", "cvs commit",
		"cvs -d /cvs ci", "jj describe", "jj desc", "jj commit", "jj split", "jj describe -r @-",
		"gh pr review 12", "gh pr merge 12", "gh release create v1.0.0", "gh gist edit abc123", "gh pr edit 12",
		"gh issue edit 3", "glab mr create", "glab issue create",
		// git: an alias that is a command, the pager grep -O opens, replace --edit,
		// an alias the line defines
		"git -c alias.ci=commit ci", "git -c alias.x='commit --amend' x", "git grep -Ovim TODO", "git grep -Oless TODO",
		"git grep --open-files-in-pager=vim TODO", "git replace --edit HEAD",
		"git config alias.x '!bash' && git x", "git config --global alias.ci commit; git ci",
		// REPLs and debuggers the reading did not list
		"gnuplot", "gnuplot -", "m4", "m4 -", "cpan", "perl -MCPAN -e shell", "gawk -D 'BEGIN{}'", "awk --debug '{print}'",
		"ruby -r debug/start app.rb", "ruby -rdebug app.rb", "pudb app.py", "pudb3 app.py", "ipython3", "ptipython",
		"lua5.4", "php8.2 -a", "ruby3.2", "tclsh8.6", "virsh", "virsh console vm1", "lxc-console -n c1", "login",
		// shells the reading did not list
		"rbash", "tcsh", "csh", "ksh93", "nu", "xonsh", "elvish", "osh", "ysh", "yash", "posh", "rc", "oksh",
		// wrappers that run their command with the terminal, or a shell
		"ssh-agent bash", "dbus-run-session bash", "dbus-run-session -- bash", "xvfb-run bash", "setpriv --reuid 1000 bash",
		"capsh --", "capsh -- -i", "prlimit --nofile=100 bash", "cgexec -g cpu:x bash", "numactl -C 0 bash", "run0",
		"run0 bash", "gosu app bash", "su-exec app bash", "chpst -u app bash", "setuidgid app bash", "dumb-init bash",
		"tini bash", "tini -- bash", "linux32", "linux32 bash", "setarch x86_64 -R bash", "setarch x86_64",
		"bwrap --bind / / bash", "bwrap --ro-bind /usr /usr --dev /dev --proc /proc bash", "proot bash", "proot -0",
		"schroot", "schroot -c sid", "lxc-attach -n c1", "arch-chroot /mnt", "fakechroot chroot / bash",
		"faketime '2020-01-01' bash", "torify bash", "lima", "copilot svc exec", "aws ec2-instance-connect ssh --instance-id i-1",
		// batch editors told to run a shell, inline code reading the terminal
		"vim -es -c '!bash' -c q", "vim -es -c sh -c q", "ex -s -c shell -c q notes.txt", "vim -es +'!bash' +q",
		"vim -E -s -c 'silent !bash' -c q", "emacs -Q --batch --eval '(while t (print (eval (read))))'",
		"emacs --script /dev/stdin", "python3 -c 'exec(open(0).read())'", "python3 -c 'import os;[os.system(l) for l in open(0)]'",
		"python3 -c 'import os;[os.system(l) for l in open(\"/dev/tty\")]'",
		"node -e 'require(\"child_process\").execSync(require(\"fs\").readFileSync(0,\"utf8\"),{stdio:\"inherit\"})'",
	} {
		if !Interactive(l) {
			t.Errorf("Interactive(%q) = false: a channel write_stdin types into", l)
		}
	}
}

// Review B (FAILS on df97e6a for ipython): ordinary commands that must stay
// allowed, beside the programs the review added.
func TestInteractiveReview2Allowed(t *testing.T) {
	for _, l := range []string{
		"ipython -c 'print(1)'", "ipython script.py", "ipython3 -m pytest", "bpython --version",
		"'{less,}' notes.txt", "echo {a,b}", "{echo,hi}", "cat {a,b}.txt", "$'echo' hi",
		"alias ll='ls -la'; ll", "shopt -s expand_aliases\nalias ls='ls -la'\nls", "alias g=git\ng status",
		"m4 in.m4 > out.txt", "m4 -D X=1 in.m4", "gnuplot plot.gp", "gnuplot -e 'set term png' plot.gp", "cpan JSON",
		"hg commit -m fix", "hg ci -l msg.txt", "svn commit -m fix", "svn ci -F msg.txt", "bzr commit -m x", "cvs commit -m x",
		"jj describe -m x", "jj commit -m x", "jj log", "jj new", "sl commit -m x", "hg status", "svn status",
		"gh pr review 12 --approve", "gh pr review 12 -c -b ok", "gh pr merge 12 --squash", "gh pr merge 12 -s --auto",
		"gh release create v1 --notes x", "gh release create v1 --generate-notes", "gh release create v1 -F notes.md",
		"gh pr edit 12 --body x", "gh issue edit 3 --add-label bug", "glab mr create --fill --yes",
		"glab mr create -t x -d y", "glab issue create -t x -d y",
		"git -c alias.st=status st", "git config alias.co checkout", "git config --global alias.lg 'log --oneline'",
		"git grep -n TODO", "git grep -O TODO", "git replace --graft HEAD",
		"gawk '{print}' f", "ruby -r json x.rb", "lua5.4 x.lua", "php8.2 -r 'echo 1;'", "tclsh8.6 x.tcl",
		"tcsh -c 'echo hi'", "nu -c 'ls'", "xonsh script.xsh",
		"eval \"$(ssh-agent -s)\"", "ssh-agent -k", "dumb-init node server.js", "tini -- node server.js", "gosu app npm start",
		"setpriv --reuid 1000 make", "bwrap --ro-bind / / --dev /dev make test", "numactl -C 0 ./bench", "numactl -H",
		"prlimit --nofile=1024 ./server", "prlimit -p 123", "xvfb-run npm test", "dbus-run-session -- npm test",
		"faketime '2020-01-01' date", "setarch x86_64 -R ./app", "capsh --print", "schroot -l", "run0 systemctl restart x",
		"virsh list --all", "vim -es -c 'g/x/d' -c wq f", "vim -es -c 'wq!' f", "python3 -c 'print(open(\"x\").read())'",
		"emacs --batch -l ert -f ert-run-tests-batch-and-exit", "ls | xargs -o echo", "ncdu -o out.json /",
		"ncdu -rr /", "sensible-pager notes.txt", "x=$(< notes.txt); echo \"$x\"", "select x in a; do echo $x; done < list",
		"kak -f 'ggd' f.txt", "hx --health", "copilot svc deploy", "aws ec2 describe-instances",
	} {
		if Interactive(l) {
			t.Errorf("Interactive(%q) = true: nothing it starts reads what is typed as a command", l)
		}
	}
}
