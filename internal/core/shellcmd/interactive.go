package shellcmd

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Interactive reports whether the shell line starts a program that reads
// what to do from its standard input while that input is the terminal the
// line runs in: a shell, an interpreter's REPL, a database client, ssh to
// a host with no command, an editor — bash, python3, psql app_dev, ssh
// build-box, vim. A host that lets the agent type into a running command
// (Codex's write_stdin) then has a channel no hook sees: each line typed
// runs with no tool call. A program whose standard input the line gives it
// — a pipe (echo x | python3), a here-document (python3 <<EOF), a file
// (psql < dump.sql) — or that is given its code or script (python3 -c …,
// bash build.sh, ssh host uptime) reads nothing typed, and is not
// interactive; nor is a command run in the background, or asked only for
// its version or help. A pipe from a program that passes the terminal on
// (cat, tee with no file to read) does not feed what follows. A line the
// parser refuses, or a program named through an expansion, is not taken
// for one.
func Interactive(line string) bool {
	if len(line) > MaxParsed {
		return false
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		return false
	}
	budget := maxCalls
	for _, st := range f.Stmts {
		if r, _ := stmtReadsTerminal(st, false, &budget, 0); r {
			return true
		}
	}
	return false
}

// ArgvInteractive is Interactive for a program run directly by its
// argument vector, its standard input the terminal.
func ArgvInteractive(argv []string) bool {
	return len(argv) > 0 && argvInteractive(argv, 0)
}

// stmtReadsTerminal reports whether the statement runs an interactive
// program (interactive), and whether what it writes is what the terminal
// gives it (passes: cat or tee reading the terminal), given whether its
// standard input is fed by the line (fed: a pipe or a redirection of an
// enclosing command).
func stmtReadsTerminal(st *syntax.Stmt, fed bool, budget *int, depth int) (interactive, passes bool) {
	if st == nil || st.Cmd == nil || depth > maxDepth || *budget <= 0 {
		return false, false
	}
	*budget--
	if st.Background || st.Coprocess {
		// A background job's standard input is not the terminal
		// (/dev/null in a shell without job control); a coprocess's is
		// a pipe.
		return false, false
	}
	for _, r := range st.Redirs {
		switch r.Op {
		case syntax.RdrIn, syntax.RdrInOut, syntax.DplIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
			if r.N == nil || r.N.Value == "0" {
				fed = true
			}
		}
	}
	stmts := func(list []*syntax.Stmt) (bool, bool) {
		var pass bool
		for _, s := range list {
			i, p := stmtReadsTerminal(s, fed, budget, depth+1)
			if i {
				return true, false
			}
			pass = pass || p
		}
		return false, pass
	}
	switch c := st.Cmd.(type) {
	case *syntax.CallExpr:
		if fed || len(c.Args) == 0 {
			return false, false
		}
		argv := make([]string, len(c.Args))
		for i, w := range c.Args {
			a, ok := literal(w)
			if !ok {
				if i == 0 {
					return false, false
				}
				a = "$"
			}
			argv[i] = a
		}
		return argvInteractive(argv, 0), passesTerminal(argv)
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.Pipe, syntax.PipeAll:
			i, p := stmtReadsTerminal(c.X, fed, budget, depth+1)
			if i {
				return true, false
			}
			return stmtReadsTerminal(c.Y, !p, budget, depth+1)
		default:
			i, p := stmtReadsTerminal(c.X, fed, budget, depth+1)
			if i {
				return true, false
			}
			i2, p2 := stmtReadsTerminal(c.Y, fed, budget, depth+1)
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
		if i, _ := stmts(c.Cond); i {
			return true, false
		}
		return stmts(c.Do)
	case *syntax.ForClause:
		return stmts(c.Do)
	case *syntax.CaseClause:
		for _, item := range c.Items {
			if i, _ := stmts(item.Stmts); i {
				return true, false
			}
		}
	case *syntax.TimeClause:
		return stmtReadsTerminal(c.Stmt, fed, budget, depth+1)
	}
	return false, false
}

// passesTerminal reports whether a command reading the terminal writes
// what it reads: cat with no file (or -), tee.
func passesTerminal(argv []string) bool {
	switch ProgramName(argv[0]) {
	case "tee":
		return true
	case "cat":
		for _, a := range argv[1:] {
			if a == "-" || !strings.HasPrefix(a, "-") {
				return a == "-"
			}
		}
		return true
	}
	return false
}

// replPrograms read commands, statements or keystrokes from the terminal
// however they are run, unless given a script, code, or an option that
// makes them run something and exit (handled per program below, or the
// generic reading of operands in plainInteractive).
var replPrograms = map[string]bool{
	// Shells and REPLs
	"irb": true, "pry": true, "ipython": true, "bpython": true, "ptpython": true, "jshell": true, "ghci": true,
	"scala": true, "sbcl": true, "guile": true, "racket": true, "ocaml": true, "utop": true, "erl": true, "iex": true,
	"clj": true, "clojure": true, "tclsh": true, "wish": true, "lua": true, "luajit": true, "julia": true, "r": true,
	"psysh": true, "gdb": true, "lldb": true, "bc": true, "dc": true, "ed": true, "ex": true,
	// Database clients
	"psql": true, "mysql": true, "mariadb": true, "sqlite3": true, "sqlite": true, "duckdb": true, "mongosh": true,
	"mongo": true, "redis-cli": true, "cqlsh": true, "clickhouse-client": true, "sqlcmd": true, "usql": true,
	"litecli": true, "pgcli": true, "mycli": true,
	// Another host's shell or a connection typed into
	"telnet": true, "sftp": true, "ftp": true, "lftp": true, "mosh": true,
	// Editors, whose keystrokes edit files and run commands (:!)
	"vi": true, "vim": true, "nvim": true, "view": true, "nano": true, "pico": true, "emacs": true, "micro": true,
	"joe": true, "tmux": true, "screen": true,
}

// codeOptions are the options by which a REPL program is given what to
// run, and exits: code on the command line, a script, a command, a batch.
var codeOptions = map[string][]string{
	"psql":      {"-c", "--command", "-f", "--file", "-l", "--list"},
	"mysql":     {"-e", "--execute"},
	"mariadb":   {"-e", "--execute"},
	"sqlite3":   {"-cmd", "-batch", "-bail", "-init", "-version", "-help"},
	"duckdb":    {"-c", "-s", "-f", "-init", "-version"},
	"mongosh":   {"--eval", "-f", "--file", "--nodb"},
	"mongo":     {"--eval"},
	"sqlcmd":    {"-q", "-Q", "-i"},
	"gdb":       {"-batch", "--batch", "-ex", "-x", "--command", "-p", "--pid"},
	"lldb":      {"-b", "--batch", "-o", "-s", "--source"},
	"julia":     {"-e", "--eval", "-E", "--print"},
	"r":         {"-e", "-f", "--file", "CMD"},
	"lua":       {"-e"},
	"luajit":    {"-e"},
	"erl":       {"-eval", "-s", "-run", "-noshell", "-detached"},
	"iex":       {"-e", "--eval", "-S"},
	"tmux":      {"send-keys", "send", "kill-server", "kill-session", "ls", "list-sessions", "has-session", "capture-pane", "-V"},
	"screen":    {"-ls", "-list", "-X", "-Q", "-d"},
	"redis-cli": {"--scan", "--bigkeys", "--stat", "--latency", "--rdb", "--pipe", "-x", "--eval"},
	"clojure":   {"-e", "-m", "-M", "-X", "-T"},
	"clj":       {"-e", "-m", "-M", "-X", "-T"},
	"scala":     {"-e"},
	"ghci":      {"-e"},
	"jshell":    {"-c"},
	"bc":        {},
	"ed":        {},
	"ocaml":     {},
	"racket":    {"-e", "--eval", "-f", "--load", "-t", "--require"},
}

// needsOperand: these read the terminal with an operand that names what
// they read or connect to (a database, a host, a file to edit), and run
// something else only when given it as a further operand (redis-cli GET
// k, sqlite3 db 'select 1'): with two operands or more, not interactive.
var needsOperand = map[string]bool{
	"psql": true, "mysql": true, "mariadb": true, "sqlite3": true, "sqlite": true, "duckdb": true, "redis-cli": true,
	"mongosh": true, "mongo": true, "cqlsh": true, "clickhouse-client": true, "usql": true, "litecli": true,
	"pgcli": true, "mycli": true,
}

// clientArgOptions are the one-letter options of the database clients
// that take a value as the next word (a host, a port, a user).
var clientArgOptions = map[string]string{"psql": "hpUdvPTLoFR", "mysql": "hPuDSO", "mariadb": "hPuDSO", "redis-cli": "hpanu",
	"mongosh": "up", "mongo": "up", "cqlsh": "ukt", "clickhouse-client": "hud", "pgcli": "hpUdW", "mycli": "hPuDS", "usql": "",
	"litecli": "", "sqlite3": "", "duckdb": ""}

// valueOptions are long options that take the next word as their value.
var valueOptions = map[string]bool{"--host": true, "--port": true, "--user": true, "--username": true, "--dbname": true,
	"--database": true, "--set": true, "--variable": true, "--pset": true, "--password": true, "--authenticationDatabase": true}

// infoOptions only print something and exit.
// (-h is not among them: psql's and mysql's host.)
var infoOptions = map[string]bool{"--version": true, "-version": true, "-V": true, "--help": true, "-help": true, "-?": true}

func argvInteractive(argv []string, depth int) bool {
	if depth > maxDepth || len(argv) == 0 {
		return false
	}
	name := ProgramName(argv[0])
	args := argv[1:]
	for _, a := range args {
		if infoOptions[a] {
			return false
		}
	}
	switch {
	case shells[name]:
		return shellInteractive(args)
	case name == "pwsh" || name == "powershell":
		for _, a := range args {
			l := strings.ToLower(a)
			if !strings.HasPrefix(l, "-") {
				return false // a script
			}
			for _, o := range []string{"-c", "-command", "-f", "-file", "-e", "-ec", "-encodedcommand", "-cwa", "-commandwithargs"} {
				if l == o {
					return false
				}
			}
		}
		return true
	case strings.HasPrefix(name, "python") || name == "pypy" || name == "pypy3":
		return pythonInteractive(args)
	case name == "node" || name == "nodejs":
		return nodeInteractive(args)
	case name == "deno" || name == "bun":
		if len(args) == 0 {
			return name == "deno"
		}
		return args[0] == "repl"
	case name == "ruby" || name == "perl" || name == "php":
		// With no program they read one from the terminal; php -a and
		// perl -d are their REPLs.
		for _, a := range args {
			switch {
			case a == "-a" && name == "php", a == "-d" && name == "perl":
				return true
			case a == "-e" || a == "-E" || a == "-r" || a == "-n" && name == "perl" || a == "-p" && name == "perl":
				return false
			case a == "-":
				return true
			case !strings.HasPrefix(a, "-"):
				return false
			}
		}
		return true
	case name == "rails":
		return len(args) > 0 && (args[0] == "console" || args[0] == "c" || args[0] == "dbconsole" || args[0] == "db")
	case name == "ssh":
		return sshInteractive(args)
	case name == "nc" || name == "ncat" || name == "netcat":
		// What is typed goes to the host (or to whoever connects).
		return true
	case name == "su":
		for _, a := range args {
			if a == "-c" || a == "--command" || strings.HasPrefix(a, "--command=") {
				return false
			}
		}
		return true
	case name == "sudo" || name == "doas":
		return sudoInteractive(name, args, depth)
	case name == "docker" || name == "podman" || name == "kubectl" || name == "oc":
		return containerInteractive(name, args)
	case name == "env" || name == "nice" || name == "timeout" || name == "stdbuf" || name == "time" || name == "command" ||
		name == "exec" || name == "builtin" || name == "unbuffer" || name == "setsid":
		if rest := wrapped(name, args); rest != nil {
			return argvInteractive(rest, depth+1)
		}
		return false
	case name == "uv" || name == "poetry" || name == "pipenv" || name == "pdm" || name == "hatch" || name == "rye":
		if len(args) >= 2 && args[0] == "run" {
			rest := args[1:]
			for len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
				rest = rest[1:]
			}
			return argvInteractive(rest, depth+1)
		}
		return false
	case name == "bundle" || name == "npx" || name == "bunx" || name == "pnpm" || name == "yarn":
		if len(args) >= 2 && (args[0] == "exec" || name == "npx" || name == "bunx") {
			rest := args
			if args[0] == "exec" {
				rest = args[1:]
			}
			return argvInteractive(rest, depth+1)
		}
		return false
	case replPrograms[name]:
		return plainInteractive(name, args)
	}
	return false
}

// plainInteractive reads a REPL program's options: one of its codeOptions
// (or a redirecting -c/-e style option) means it runs what it is given;
// needsOperand programs take one operand (the database, the host) and run
// a second; the others take files to edit or scripts to run only when
// they are not editors or pagers of commands.
func plainInteractive(name string, args []string) bool {
	operands := 0
	for i := 0; i < len(args); i++ {
		a := args[i]
		for _, o := range codeOptions[name] {
			if a == o || strings.HasPrefix(a, o+"=") || strings.HasPrefix(o, "-") && len(o) == 2 && strings.HasPrefix(a, o) && !strings.HasPrefix(a, "--") {
				return false
			}
		}
		switch {
		case len(a) == 2 && a[0] == '-' && strings.Contains(clientArgOptions[name], a[1:]), valueOptions[a]:
			i++ // the option's value
		case !strings.HasPrefix(a, "-"):
			operands++
		}
	}
	switch {
	case needsOperand[name]:
		return operands <= 1
	case editors[name] || name == "gdb" || name == "lldb" || name == "telnet" || name == "sftp" || name == "ftp" ||
		name == "lftp" || name == "mosh" || name == "bc" || name == "dc" || name == "ed" || name == "ex" || name == "tmux" || name == "screen":
		// A file to edit, a program to debug, a host: still the terminal.
		return true
	}
	// An interpreter given a script runs it.
	return operands == 0
}

var editors = map[string]bool{"vi": true, "vim": true, "nvim": true, "view": true, "nano": true, "pico": true,
	"emacs": true, "micro": true, "joe": true}

// shellInteractive: a shell with no -c and no script reads commands from
// its standard input (-s, -i too).
func shellInteractive(args []string) bool {
	stdin := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return stdin || i+1 >= len(args)
		case a == "-o" || a == "+o" || a == "-O" || a == "+O" || a == "--rcfile" || a == "--init-file":
			i++
		case strings.HasPrefix(a, "--"):
			if a == "--command" {
				return false
			}
		case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+"):
			if strings.Contains(a[1:], "c") {
				return false
			}
			if strings.Contains(a[1:], "s") || strings.Contains(a[1:], "i") {
				stdin = true
			}
		default:
			// A script, unless -s says the operands are its arguments.
			return stdin
		}
	}
	return true
}

// pythonInteractive: -i always ends at the REPL; -c, -m or a script run
// and exit; - or nothing reads the terminal.
func pythonInteractive(args []string) bool {
	for _, a := range args {
		if a == "-i" || strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && len(a) > 2 && strings.Contains(a[1:], "i") && !strings.ContainsAny(a[1:], "cmWX") {
			return true
		}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-":
			return true
		case a == "-W" || a == "-X" || a == "--check-hash-based-pycs":
			i++
		case a == "-c" || a == "-m" || strings.HasPrefix(a, "-c") || strings.HasPrefix(a, "-m"):
			return false
		case strings.HasPrefix(a, "-"):
		default:
			return false
		}
	}
	return true
}

// nodeInteractive: -i or --interactive ends at the REPL; -e, -p, --test
// or a script run and exit.
func nodeInteractive(args []string) bool {
	for _, a := range args {
		if a == "-i" || a == "--interactive" {
			return true
		}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-":
			return true
		case a == "-e" || a == "--eval" || a == "-p" || a == "--print" || a == "-c" || a == "--check" || a == "--test" ||
			a == "-v" || strings.HasPrefix(a, "--eval=") || strings.HasPrefix(a, "--print="):
			return false
		case a == "-r" || a == "--require" || a == "--import" || a == "--loader" || a == "-C" || a == "--conditions":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return false
		}
	}
	return true
}

// sshInteractive: ssh to a host with no command is a login shell on it,
// unless -N (no command) or -W forwards; a command after the host runs it.
var sshArgOptions = "BbcDEeFIiJLlmOoPpQRSWw"

func sshInteractive(args []string) bool {
	host := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case host:
			return false // a command
		case a == "--":
			continue
		case strings.HasPrefix(a, "-") && len(a) >= 2:
			if strings.ContainsAny(a[1:], "NWfG") || strings.Contains(a[1:], "V") {
				return false
			}
			if last := a[len(a)-1:]; strings.Contains(sshArgOptions, last) && len(a) == 2 {
				i++
			}
		default:
			host = true
		}
	}
	return host
}

// sudoInteractive: sudo -i / -s with no command is a root shell, sudo su
// too; with a command, the command.
func sudoInteractive(name string, args []string, depth int) bool {
	shell := false
	withArg := "ugCDhprtTU"
	if name == "doas" {
		withArg = "uC"
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) {
				return argvInteractive(args[i+1:], depth+1)
			}
			return shell
		case strings.HasPrefix(a, "--"):
			if a == "--login" || a == "--shell" {
				shell = true
			}
			if (a == "--user" || a == "--group") && i+1 < len(args) {
				i++
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if strings.ContainsAny(a[1:], "is") {
				shell = true
			}
			if strings.Contains(a[1:], "l") || strings.Contains(a[1:], "v") || strings.Contains(a[1:], "k") && len(a) == 2 {
				if len(args) == 1 {
					return false
				}
			}
			if len(a) == 2 && strings.Contains(withArg, a[1:]) {
				i++
			}
		default:
			return argvInteractive(args[i:], depth+1)
		}
	}
	return shell
}

// containerInteractive: docker/podman exec or run with -i, attach;
// kubectl exec or attach with -i (--stdin), kubectl run -i: what is typed
// reaches the container's process.
func containerInteractive(name string, args []string) bool {
	if len(args) == 0 {
		return false
	}
	sub := args[0]
	rest := args[1:]
	if (name == "docker" || name == "podman") && (sub == "compose" || sub == "container") && len(rest) > 0 {
		if sub == "compose" {
			// docker compose exec keeps stdin by default (-T turns it
			// off); run too.
			for i, a := range rest {
				if a == "exec" || a == "run" {
					for _, b := range rest[i+1:] {
						if b == "-T" || b == "--no-TTY" || b == "-d" || b == "--detach" {
							return false
						}
					}
					return true
				}
			}
			return false
		}
		sub, rest = rest[0], rest[1:]
	}
	switch sub {
	case "attach":
		return true
	case "exec", "run":
	default:
		return false
	}
	for _, a := range rest {
		if a == "--" {
			break
		}
		if a == "--interactive" || a == "--stdin" || a == "-i" || strings.HasPrefix(a, "--interactive=true") || strings.HasPrefix(a, "--stdin=true") ||
			strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a[1:], "i") && len(a) <= 4 {
			return true
		}
		if !strings.HasPrefix(a, "-") && name != "kubectl" && name != "oc" {
			// docker's options come before the container or image.
			break
		}
	}
	return false
}

// wrapped is the command a wrapper runs, nil when it names none.
func wrapped(name string, args []string) []string {
	i := 0
	for i < len(args) {
		a := args[i]
		switch {
		case a == "--":
			return nonEmpty(args[i+1:])
		case name == "env" && strings.Contains(a, "=") && !strings.HasPrefix(a, "-"):
			i++
		case name == "env" && (a == "-u" || a == "-C" || a == "--unset" || a == "--chdir"):
			i += 2
		case name == "env" && (a == "-S" || strings.HasPrefix(a, "--split-string")):
			return nil
		case name == "nice" && a == "-n", name == "timeout" && (a == "-s" || a == "-k" || a == "--signal" || a == "--kill-after"),
			name == "exec" && a == "-a", name == "stdbuf" && (a == "-i" || a == "-o" || a == "-e"):
			i += 2
		case strings.HasPrefix(a, "-"):
			i++
		case name == "timeout":
			// The duration, then the command.
			return nonEmpty(args[i+1:])
		default:
			return args[i:]
		}
	}
	return nil
}

func nonEmpty(a []string) []string {
	if len(a) == 0 {
		return nil
	}
	return a
}
