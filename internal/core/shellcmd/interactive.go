package shellcmd

import (
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Interactive reports whether the shell line starts a program that reads
// what to do from its standard input while that input is the terminal the
// line runs in: a shell, an interpreter's REPL, a database client, ssh to
// a host with no command (or with a shell for one), an editor, a console
// — bash, python3, psql app_dev, ssh build-box, vim, rails c. A host that
// lets the agent type into a running command (Codex's write_stdin) then
// has a channel no hook sees: each line typed runs with no tool call.
//
// The line is read as the shell runs it: a shell's -c script, eval's
// words and what a wrapper runs (sudo, env, timeout, script, rlwrap,
// chroot, nsenter, a runner's run or shell, ssh's remote command, docker
// and kubectl exec/run with -i) are read in turn, with the terminal still
// their input. The terminal named as the input (< /dev/tty, bash
// /dev/stdin, psql -f -), a pipe from a program that copies what it reads
// (cat, head, tee, awk 1, sed ”, stdbuf … cat) and a line runner reading
// the terminal (while read l; do eval "$l"; done, xargs sh -c, awk
// '{system($0)}', sed e, perl -ne 'system $_') are the terminal too; so is
// a program named by $SHELL, ${X:-bash} or $(command -v bash).
//
// A program whose standard input the line gives it — a pipe from another
// program (echo x | python3, curl … | sh), a here-document, a file (psql
// < dump.sql) — or that is given its code or script (python3 -c …, bash
// build.sh, ssh host uptime) reads nothing typed, and is not interactive;
// nor is a command run in the background or detached (tmux new -d, screen
// -dm), or asked only for its version or help, or an editor in batch mode
// that quits. A line the parser refuses, or a program named through an
// expansion the reading cannot resolve ($PY), is not taken for one; a line
// whose reading exceeds the work budget (maxWork, maxDepth) is
// (fail closed).
func Interactive(line string) bool {
	if len(line) > MaxParsed {
		return false
	}
	var r ireader
	return r.line(line, 0, nil) || r.over
}

// ArgvInteractive is Interactive for a program run directly by its
// argument vector, its standard input the terminal.
func ArgvInteractive(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	var r ireader
	return r.argv(argv, 0) || r.over
}

// ireader reads one line for Interactive, within the package's budget.
type ireader struct {
	work int
	// over: the budget is spent, and the answer is true (fail closed).
	over bool
	// typed: an earlier command put what is typed into a variable or a
	// substitution (read l, $(cat)): a later command that runs an
	// expansion as code (eval "$l", sh -c "$l", $l) runs it.
	typed bool
}

// spend charges n words to the budget (maxWork: the words looked at,
// summed over every command read and every line parsed); past it the
// reading stops.
func (r *ireader) spend(n int) bool {
	r.work += n
	if r.over || r.work > maxWork {
		r.over = true
		return false
	}
	return true
}

// line reads a shell line whose standard input is the terminal; pos are
// the positional parameters of a -c script ($0, $1, …).
func (r *ireader) line(line string, depth int, pos []string) bool {
	if depth > maxDepth {
		r.over = true
		return true
	}
	if len(line) > MaxParsed || !r.spend(len(line)/2+1) {
		r.over = r.over || len(line) > MaxParsed
		return r.over
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		return false
	}
	for _, st := range f.Stmts {
		if i, _ := r.stmt(st, true, depth, pos); i || r.over {
			return true
		}
	}
	return false
}

// ttyPath reports whether a path is the terminal when the standard input
// is: /dev/tty, /dev/stdin, descriptor 0, a pty.
func ttyPath(a string) bool {
	return a == "/dev/tty" || a == "/dev/stdin" || a == "/dev/fd/0" || a == "/proc/self/fd/0" || strings.HasPrefix(a, "/dev/pts/")
}

// stdinArg reports whether an operand names the standard input: - or a
// ttyPath.
func stdinArg(a string) bool { return a == "-" || ttyPath(a) }

// stmt reports whether the statement runs an interactive program
// (interactive), and whether what it writes is what the terminal gives it
// (passes: cat, head, tee, awk 1 reading the terminal), given whether its
// standard input is the terminal (term) or what the line feeds it.
func (r *ireader) stmt(st *syntax.Stmt, term bool, depth int, pos []string) (interactive, passes bool) {
	if st == nil || st.Cmd == nil || r.over {
		return r.over, false
	}
	if r.work++; depth > maxDepth || r.work > maxWork {
		r.over = true
		return true, false
	}
	if st.Background || st.Coprocess {
		// A background job's standard input is not the terminal
		// (/dev/null in a shell without job control); a coprocess's is
		// a pipe.
		return false, false
	}
	outer := term
	// What each descriptor the statement redirects reads: the terminal
	// or not (3< f, 3<<EOF), for a later <&3.
	fds := map[string]bool{"0": term, "1": term, "2": term}
	for _, rd := range st.Redirs {
		n := "0"
		if rd.N != nil {
			n = rd.N.Value
		}
		in := true
		switch rd.Op {
		case syntax.RdrIn, syntax.RdrInOut:
			w, ok := literal(rd.Word)
			if !ok {
				w, ok = resolveWord(rd.Word, pos)
			}
			in = ok && ttyPath(w)
		case syntax.DplIn:
			// <&1, <&2: the terminal (the pty, open both ways) when the
			// input was; a descriptor the line does not show may be one
			// opened on it (fail closed); <&- closes it.
			w, ok := literal(rd.Word)
			v, seen := fds[w]
			in = term && (!ok || w != "-" && (!seen || v))
		case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
			// A here-document or here-string is the line's text, unless
			// what is typed is in it: "$(cat)", "$l" after read l.
			w := rd.Word
			if rd.Op != syntax.WordHdoc {
				w = rd.Hdoc
			}
			in = false
			if w != nil {
				typed := r.typed
				r.typed = false
				if r.substs([]*syntax.Word{w}, outer, depth, pos) {
					return true, false
				}
				_, lit := literal(w)
				in = r.typed || typed && !lit && rd.Op == syntax.WordHdoc
				if rd.Op != syntax.WordHdoc {
					_, lit = hdocBody(w)
					in = in || typed && !lit
				}
				r.typed = r.typed || typed
			}
		default:
			continue
		}
		fds[n] = in
		if n == "0" {
			term = in
		}
	}
	stmts := func(list []*syntax.Stmt) (bool, bool) {
		var pass bool
		for _, s := range list {
			i, p := r.stmt(s, term, depth+1, pos)
			if i {
				return true, false
			}
			pass = pass || p
		}
		return false, pass
	}
	switch c := st.Cmd.(type) {
	case *syntax.CallExpr:
		words := c.Args
		for _, a := range c.Assigns {
			if a.Value != nil {
				words = append(words[:len(words):len(words)], a.Value)
			}
		}
		if r.substs(words, outer, depth, pos) {
			return true, false
		}
		if len(c.Args) == 0 {
			return false, false
		}
		if !term {
			return false, false
		}
		return r.call(c.Args, depth, pos)
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.Pipe, syntax.PipeAll:
			i, p := r.stmt(c.X, term, depth+1, pos)
			if i {
				return true, false
			}
			return r.stmt(c.Y, p, depth+1, pos)
		default:
			i, p := r.stmt(c.X, term, depth+1, pos)
			if i {
				return true, false
			}
			i2, p2 := r.stmt(c.Y, term, depth+1, pos)
			return i2, p || p2
		}
	case *syntax.Block:
		return stmts(c.Stmts)
	case *syntax.Subshell:
		return stmts(c.Stmts)
	case *syntax.IfClause:
		for ic := c; ic != nil; ic = ic.Else {
			if i, _ := stmts(ic.Cond); i {
				return true, false
			}
			if i, _ := stmts(ic.Then); i {
				return true, false
			}
		}
	case *syntax.WhileClause:
		i, p := stmts(c.Cond)
		if i {
			return true, false
		}
		i2, p2 := stmts(c.Do)
		return i2, p || p2
	case *syntax.ForClause:
		return stmts(c.Do)
	case *syntax.CaseClause:
		for _, item := range c.Items {
			if i, _ := stmts(item.Stmts); i {
				return true, false
			}
		}
	case *syntax.TimeClause:
		return r.stmt(c.Stmt, term, depth+1, pos)
	case *syntax.FuncDecl:
		// Its body runs when it is called, which the line may do: read
		// it as if it ran here.
		return r.stmt(c.Body, term, depth+1, pos)
	}
	return false, false
}

// substs reads the command and process substitutions in a command's
// words, whose standard input is the shell's (term): one that starts an
// interactive program is one; one that copies the terminal (sh -c
// "$(cat)") makes what is typed a word of the command.
func (r *ireader) substs(words []*syntax.Word, term bool, depth int, pos []string) bool {
	found := false
	for _, w := range words {
		syntax.Walk(w, func(n syntax.Node) bool {
			if found || r.over {
				return false
			}
			var list []*syntax.Stmt
			switch n := n.(type) {
			case *syntax.CmdSubst:
				list = n.Stmts
			case *syntax.ProcSubst:
				list = n.Stmts
			default:
				return true
			}
			for _, s := range list {
				i, p := r.stmt(s, term, depth+1, pos)
				if i {
					found = true
					return false
				}
				r.typed = r.typed || p
			}
			return false
		})
	}
	return found || r.over
}

// unknownWord stands for a word the reading cannot resolve: an expansion
// of nothing it knows, which names no program.
const unknownWord = "$_TG_UNKNOWN"

// call reads a simple command whose standard input is the terminal.
func (r *ireader) call(words []*syntax.Word, depth int, pos []string) (bool, bool) {
	argv := make([]string, len(words))
	known := make([]bool, len(words))
	for i, w := range words {
		a, ok := literal(w)
		if !ok {
			a, ok = resolveWord(w, pos)
		}
		if !ok {
			a = unknownWord
		}
		argv[i], known[i] = a, ok
	}
	unknown := slices.Contains(known, false)
	if r.typed && unknown && runsWords(argv, known) {
		// eval "$l", sh -c "$l", $l after read l: what is typed runs.
		return true, false
	}
	if !known[0] {
		return false, r.typed && unknown
	}
	switch ProgramName(argv[0]) {
	case "read", "mapfile", "readarray":
		if !slices.ContainsFunc(argv[1:], func(a string) bool { return strings.HasPrefix(a, "-u") }) {
			r.typed = true
		}
		return false, false
	}
	return r.argv(argv, depth), r.passes(argv, depth) || r.typed && unknown
}

// runsWords reports whether a command runs one of its words that is not
// literal as code or as a program: eval, source, a shell, an
// interpreter, a wrapper, or the word as its program.
func runsWords(argv []string, known []bool) bool {
	if !known[0] {
		return true
	}
	n := ProgramName(argv[0])
	return n == "eval" || n == "source" || n == "." || shells[n] || interpreter(n) || wrappers[n] || n == "cmd" ||
		awks[n] || n == "sed" || remoteRunners[n]
}

// resolveWord is the value of a word the reading can tell though it is
// not literal: $SHELL (a shell), a -c script's positional parameters,
// ${X:-word} (word, or bash for SHELL), $(command -v X) or `which X` (X).
func resolveWord(w *syntax.Word, pos []string) (string, bool) {
	parts := w.Parts
	if len(parts) == 1 {
		if dq, ok := parts[0].(*syntax.DblQuoted); ok && len(dq.Parts) == 1 {
			parts = dq.Parts
		}
	}
	if len(parts) != 1 {
		return "", false
	}
	switch p := parts[0].(type) {
	case *syntax.ParamExp:
		if p.Param == nil || p.Excl || p.Length || p.Width || p.Index != nil || p.Slice != nil || p.Repl != nil || p.Names != 0 {
			return "", false
		}
		name := p.Param.Value
		if p.Exp != nil {
			switch p.Exp.Op {
			case syntax.DefaultUnset, syntax.DefaultUnsetOrNull:
			default:
				return "", false
			}
		}
		switch name {
		case "SHELL", "BASH":
			return "bash", true
		case "EDITOR", "VISUAL", "GIT_EDITOR":
			return "vi", true
		case "@", "*":
			name = "1"
		}
		if n, err := strconv.Atoi(name); err == nil && n >= 0 && n < len(pos) {
			return pos[n], true
		}
		if p.Exp != nil && p.Exp.Word != nil {
			if d, ok := literal(p.Exp.Word); ok && d != "" {
				return d, true // ${PY:-python3}: what runs when it is unset
			}
		}
	case *syntax.CmdSubst:
		if len(p.Stmts) != 1 {
			return "", false
		}
		call, ok := p.Stmts[0].Cmd.(*syntax.CallExpr)
		if !ok || len(call.Args) < 1 {
			return "", false
		}
		var argv []string
		for _, a := range call.Args {
			s, ok := literal(a)
			if !ok {
				return "", false
			}
			argv = append(argv, s)
		}
		last := argv[len(argv)-1]
		switch ProgramName(argv[0]) {
		case "tty":
			return "/dev/tty", true
		case "which", "whence", "where":
			return last, true
		case "command", "type":
			if slices.ContainsFunc(argv[1:len(argv)-1], func(a string) bool { return a == "-v" || a == "-p" || a == "-P" || a == "-V" }) {
				return last, true
			}
		}
	}
	return "", false
}

// infoOptions only print something and exit, for every program.
// (-h is not among them: psql's and mysql's host; nor -v, verbose for
// many: see versionV.)
var infoOptions = map[string]bool{"--version": true, "-version": true, "-V": true, "-VV": true, "--help": true, "-help": true, "-?": true}

// versionV are the programs whose -v prints their version and exits
// (ruby, perl, php, lua, julia, redis-cli, node and its runners).
var versionV = map[string]bool{"ruby": true, "perl": true, "php": true, "lua": true, "luajit": true, "julia": true,
	"redis-cli": true, "valkey-cli": true, "node": true, "nodejs": true, "ts-node": true, "tsx": true, "deno": true,
	"bun": true, "iex": true, "elixir": true, "erl": true, "mongosh": true, "sqlplus": true}

// info reports whether a program's options, before its first operand,
// ask only for its version or help.
func info(name string, args []string) bool {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") || a == "-" {
			return false
		}
		if infoOptions[a] || a == "-v" && versionV[name] || name == "php" && (a == "-m" || a == "-i" || a == "-h") {
			return true
		}
		if a == "-c" || a == "-e" || a == "--" {
			return false
		}
	}
	return false
}

// argv reports whether a program run with the terminal as its standard
// input reads what it does from it.
func (r *ireader) argv(argv []string, depth int) bool {
	if len(argv) == 0 || r.over {
		return r.over
	}
	if depth > maxDepth || !r.spend(len(argv)) {
		r.over = true
		return true
	}
	name := ProgramName(argv[0])
	args := argv[1:]
	if info(name, args) {
		return false
	}
	if interpreter(name) && inlineCode(args, func(code string) bool { return r.codeChannel(code, depth) }) {
		return true // python3 -c 'import pty; pty.spawn("/bin/bash")', perl -e 'exec "sh"'
	}
	if shells[name] {
		return r.shell(args, depth)
	}
	if strings.HasPrefix(name, "python") || name == "pypy" || name == "pypy3" {
		return pythonInteractive(args)
	}
	if spec, ok := wrapperSpecs[name]; ok {
		return r.wrapper(name, spec, args, depth)
	}
	if rn, ok := runners[name]; ok {
		if i, decided := r.runner(name, rn, argv, depth); decided {
			return i
		}
	}
	switch name {
	case "trap":
		// trap 'bash' EXIT: the handler runs, the terminal its input.
		return len(args) > 1 && !strings.HasPrefix(args[0], "-") && r.line(args[0], depth+1, nil)
	case "source", ".":
		return len(args) > 0 && stdinArg(args[0])
	case "eval":
		return r.line(strings.Join(args, " "), depth+1, nil)
	case "cmd":
		// cmd /c line runs it; /k runs it and stays; none: a prompt.
		for i, a := range args {
			switch strings.ToLower(a) {
			case "/c", "/r":
				return r.line(strings.Join(args[i+1:], " "), depth+1, nil)
			case "/k":
				return true
			}
		}
		return true
	case "wsl":
		return r.wsl(args, depth)
	case "pwsh", "powershell":
		return powershellInteractive(args)
	case "node", "nodejs":
		return nodeInteractive(args)
	case "ts-node", "tsx", "ts-node-esm":
		if len(args) > 0 && (args[0] == "watch" || args[0] == "--watch") {
			return false
		}
		return nodeInteractive(args)
	case "deno":
		return len(args) == 0 || args[0] == "repl" || len(args) > 1 && args[0] == "run" && stdinArg(args[len(args)-1])
	case "bun":
		return len(args) > 0 && args[0] == "repl"
	case "ruby", "perl", "php":
		return scriptInterpreter(name, args)
	case "rails":
		return len(args) > 0 && (args[0] == "console" || args[0] == "c" || args[0] == "dbconsole" || args[0] == "db")
	case "manage.py", "django-admin", "flask":
		return len(args) > 0 && consoleCommand(args[0])
	case "artisan":
		return len(args) > 0 && args[0] == "tinker"
	case "ssh", "tsh", "autossh":
		return r.ssh(args, depth)
	case "nc", "ncat", "netcat":
		// What is typed goes to the host (or to whoever connects), unless
		// it only scans (-z) or reads nothing (-d, --recv-only).
		for _, a := range args {
			if a == "--recv-only" || a == "-h" || strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") &&
				(strings.Contains(a, "z") || name != "ncat" && strings.Contains(a, "d")) {
				return false
			}
		}
		return true
	case "socat":
		return socatInteractive(args)
	case "su":
		for i, a := range args {
			if a == "-c" || a == "--command" || a == "--session-command" {
				return i+1 < len(args) && r.line(args[i+1], depth+1, nil)
			}
			if v, ok := strings.CutPrefix(a, "--command="); ok {
				return r.line(v, depth+1, nil)
			}
		}
		return true
	case "runuser":
		if slices.ContainsFunc(args, func(a string) bool { return a == "-u" || a == "--user" || strings.HasPrefix(a, "--user=") }) {
			return r.wrapper(name, wrapSpec{values: "ugG", longValues: []string{"--user", "--group", "--supp-group"}, line: []string{"-c", "--command"}}, args, depth)
		}
		return r.argv(append([]string{"su"}, args...), depth+1)
	case "sudo", "doas", "sudoedit":
		return r.sudo(name, args, depth)
	case "newgrp":
		return true
	case "sg":
		switch {
		case len(args) <= 1:
			return true
		case args[1] == "-c" && len(args) > 2:
			return r.line(args[2], depth+1, nil)
		}
		return r.line(strings.Join(args[1:], " "), depth+1, nil)
	case "script":
		// With no command, script runs $SHELL on the terminal.
		for i, a := range args {
			if a == "-c" || a == "--command" {
				return i+1 < len(args) && r.line(args[i+1], depth+1, nil)
			}
			if v, ok := strings.CutPrefix(a, "--command="); ok {
				return r.line(v, depth+1, nil)
			}
			if len(a) > 2 && a[0] == '-' && a[1] != '-' && strings.HasSuffix(a, "c") {
				return i+1 < len(args) && r.line(args[i+1], depth+1, nil)
			}
		}
		return true
	case "busybox", "toybox":
		return len(args) > 0 && !strings.HasPrefix(args[0], "-") && r.argv(args, depth+1)
	case "xargs":
		return r.xargs(args, depth)
	case "parallel":
		return r.parallel(args, depth)
	case "find":
		for i, a := range args {
			if a == "-exec" || a == "-execdir" || a == "-ok" || a == "-okdir" {
				end := slices.IndexFunc(args[i+1:], func(b string) bool { return b == ";" || b == "+" })
				if end < 0 {
					end = len(args) - i - 1
				}
				if r.argv(args[i+1:i+1+end], depth+1) {
					return true
				}
			}
		}
		return false
	case "systemd-run":
		return r.systemdRun(args, depth)
	case "awk", "gawk", "mawk", "nawk":
		return r.awkRunsInput(args, depth)
	case "sed", "gsed":
		return sedRunsInput(args)
	case "docker", "podman", "nerdctl", "docker-compose", "podman-compose", "finch":
		return r.container(argv, depth)
	case "kubectl", "oc":
		return r.kubectl(name, argv, depth)
	case "tmux":
		return r.tmux(args, depth)
	case "screen":
		letters := ""
		for _, a := range args {
			switch a {
			case "-ls", "-list", "-X", "-Q", "-v", "-version":
				return false
			}
			if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") {
				letters += a[1:]
			}
		}
		return !(strings.ContainsAny(letters, "dD") && strings.Contains(letters, "m"))
	case "vi", "vim", "nvim", "view", "ex", "vimdiff", "gvim", "rvim":
		return vimInteractive(name, args)
	case "emacs":
		return !slices.ContainsFunc(args, func(a string) bool {
			return a == "--batch" || a == "-batch" || a == "--script" || a == "-script" || strings.HasPrefix(a, "--script=")
		})
	case "emacsclient":
		return !slices.ContainsFunc(args, func(a string) bool { return a == "-e" || a == "--eval" || strings.HasPrefix(a, "--eval=") })
	case "expect":
		for i, a := range args {
			switch {
			case a == "-i":
				return true
			case a == "-c":
				if i+1 < len(args) && strings.Contains(args[i+1], "interact") {
					return true
				}
			case a == "-f" || a == "-b":
				return i+1 < len(args) && stdinArg(args[i+1])
			case !strings.HasPrefix(a, "-"):
				return stdinArg(a) // a script
			}
		}
		return !slices.Contains(args, "-c")
	case "iex", "groovysh", "mysqlsh", "valkey-cli", "redis-cli", "jshell", "ghci", "irb", "pry", "ipython", "bpython",
		"ptpython", "utop", "psysh", "tinker", "bc", "dc", "ed", "gdb", "lldb", "erl", "sqlite3", "sqlite", "duckdb",
		"psql", "mysql", "mariadb", "mongosh", "mongo", "sqlcmd", "sqlplus", "cypher-shell", "lua", "luajit", "julia",
		"racket", "scala", "sbcl", "guile", "ocaml", "clj", "clojure", "tclsh", "wish", "r", "litecli", "pgcli", "mycli",
		"usql", "cqlsh", "clickhouse-client", "telnet", "sftp", "ftp", "lftp", "mosh", "nano", "pico", "micro", "joe",
		"rlwrap", "fakeroot", "kotlinc", "kotlin", "clisp", "chez", "scheme", "spark-shell", "pyspark", "beeline", "hive",
		"impala-shell", "influx", "ksql", "gp", "maxima", "octave", "swipl", "gforth", "coqtop", "idris2", "elm",
		"spark-sql", "ipdb", "pdb", "fsi", "csi":
		return r.repl(name, args, depth)
	case "npx", "bunx", "pnpx", "uvx", "pipx":
		if name == "pipx" {
			if len(args) == 0 || args[0] != "run" {
				return false
			}
			args = args[1:]
		}
		return r.wrapper(name, wrapSpec{values: "pcw", longValues: []string{"--package", "--from", "--with", "--python", "--spec"}}, args, depth)
	case "git":
		// git -c alias.x='!bash' x: the alias's line, the terminal its input.
		if at := gitAt(argv); at > 0 {
			for i := 1; i+1 < at; i++ {
				if k, v, _ := strings.Cut(args[i], "="); args[i-1] == "-c" && strings.HasPrefix(strings.ToLower(k), "alias.") &&
					strings.HasPrefix(v, "!") && r.line(v[1:], depth+1, nil) {
					return true
				}
			}
		}
		return false
	case "at", "batch":
		// The commands to run, read from the terminal unless -f names a
		// file; -l, -r, -c only list, remove or print jobs.
		return !slices.ContainsFunc(args, func(a string) bool {
			return a == "-f" || a == "-l" || a == "-r" || a == "-d" || a == "-c" || a == "-V"
		})
	case "crontab":
		for _, a := range args {
			switch {
			case a == "-e":
				return true // an editor
			case a == "-l" || a == "-r" || a == "-i" && len(args) == 1:
				return false
			case !strings.HasPrefix(a, "-") || a == "-":
				return stdinArg(a)
			}
		}
		return true
	case "mc", "ranger", "vifm", "nnn", "lf", "yazi", "k9s", "lazydocker", "cgdb", "jdb", "r2", "radare2", "byebug", "rdbg",
		"evcxr", "irust", "gore", "amm", "sage", "zellij", "byobu", "wscat", "websocat", "gnutls-cli", "dotnet-script",
		"zkcli.sh", "zookeeper-shell", "zookeeper-shell.sh", "snowsql", "trino", "presto":
		// File managers and dashboards that run typed commands (!, s for a
		// pod's shell), debuggers, REPLs, multiplexers, a socket typed into.
		if len(args) > 0 && !strings.HasPrefix(args[0], "-") && (name == "zellij" || name == "byobu") {
			return args[0] == "attach" || args[0] == "a" || args[0] == "new-session" || args[0] == "new"
		}
		return !slices.ContainsFunc(args, func(a string) bool {
			k, _, _ := strings.Cut(a, "=")
			return k == "-q" || k == "--execute" || k == "-f" || k == "--file" || k == "--headless" ||
				k == "-x" && name == "wscat" || k == "-e" && name != "wscat"
		})
	case "dtach", "abduco":
		return slices.ContainsFunc(args, func(a string) bool { return a == "-a" || a == "-A" || a == "-c" })
	case "dlv":
		return len(args) > 0 && slices.Contains([]string{"debug", "exec", "attach", "test", "core", "connect", "replay"}, args[0]) &&
			!slices.ContainsFunc(args, func(a string) bool { return a == "--headless" || strings.HasPrefix(a, "--headless=") })
	case "openssl":
		return len(args) > 0 && args[0] == "s_client"
	case "smbclient":
		return !slices.ContainsFunc(args, func(a string) bool { return a == "-c" || a == "--command" || a == "-L" || a == "--list" })
	case "nsupdate":
		return !slices.ContainsFunc(args, func(a string) bool { return !strings.HasPrefix(a, "-") && !stdinArg(a) })
	case "curl":
		return slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(strings.ToLower(a), "telnet://") })
	case "hbase":
		return len(args) > 0 && args[0] == "shell"
	case "cockroach":
		return len(args) > 0 && (args[0] == "sql" || args[0] == "demo") &&
			!slices.ContainsFunc(args, func(a string) bool { return a == "-e" || a == "--execute" || a == "-f" || a == "--file" })
	case "bq":
		return len(args) > 0 && args[0] == "shell"
	case "matlab":
		return !slices.ContainsFunc(args, func(a string) bool { return a == "-batch" })
	case "wolframscript", "math", "wolfram":
		return !slices.ContainsFunc(args, func(a string) bool {
			return a == "-code" || a == "-c" || a == "-file" || a == "-f" || a == "-script" || a == "-run"
		})
	case "ghc":
		return slices.Contains(args, "--interactive")
	case "bb":
		return len(args) > 0 && (args[0] == "repl" || args[0] == "--repl")
	case "dune":
		return len(args) > 0 && args[0] == "utop"
	case "wp":
		return len(args) > 0 && (args[0] == "shell" || len(args) > 1 && args[0] == "db" && (args[1] == "cli" || args[1] == "query" && len(args) == 2))
	case "drush":
		return len(args) > 0 && (args[0] == "php" || args[0] == "core:cli" || args[0] == "sql-cli" || args[0] == "sqlc" || args[0] == "php:cli")
	case "limactl", "colima":
		return len(args) > 0 && (args[0] == "shell" || args[0] == "ssh") && !slices.Contains(args, "--")
	case "doctl":
		return len(args) > 1 && args[0] == "compute" && args[1] == "ssh" &&
			!slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--ssh-command") })
	case "swift":
		return len(args) == 0 || args[0] == "repl"
	case "sbt":
		for _, a := range args {
			if !strings.HasPrefix(a, "-") {
				return a == "shell" || a == "console" || a == "consoleQuick" || a == "consoleProject"
			}
		}
		return true
	case "lein":
		return len(args) > 0 && args[0] == "repl"
	case "jupyter":
		return len(args) > 0 && (args[0] == "console" || args[0] == "jupyter-console")
	case "jupyter-console":
		return true
	case "cabal":
		return len(args) > 0 && (args[0] == "repl" || args[0] == "v2-repl" || args[0] == "new-repl")
	case "stack":
		return len(args) > 0 && (args[0] == "ghci" || args[0] == "repl")
	case "dotnet":
		if len(args) > 0 && args[0] == "fsi" {
			return !slices.ContainsFunc(args[1:], func(a string) bool {
				return !strings.HasPrefix(a, "-") && (strings.HasSuffix(a, ".fsx") || strings.HasSuffix(a, ".fs"))
			}) && !slices.Contains(args[1:], "--exec")
		}
		return false
	case "mix":
		return false
	case "scala-cli":
		return len(args) > 0 && (args[0] == "repl" || args[0] == "console")
	case "vagrant", "minikube", "docker-machine", "multipass", "lxc", "incus", "machinectl", "toolbox", "distrobox",
		"gcloud", "aws", "heroku", "fly", "flyctl", "gh", "az", "railway", "eb", "systemd-nspawn":
		return r.cloudShell(name, args, depth)
	}
	return false
}
