package shellcmd

import "testing"

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
		"kubectl get pods", "tmux send-keys -t work 'make' Enter", "tmux ls", "screen -ls", "git log", "less README.md",
		"man git", "ls", "cat README.md", "rails server", "uv run pytest", "pwsh -c 'Get-Date'", "pwsh ./build.ps1",
		"$PY", "\"$SHELL\" -c 'ls'", "go test ./...", "make", "npm test",
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
