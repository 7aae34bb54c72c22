package shellcmd

// The programs Interactive knows one by one: shells, interpreters and
// their REPLs, consoles, database clients, editors, ssh, sudo, tmux, the
// clouds' shells.

import (
	"slices"
	"strings"
)

// consoleCommand reports whether a framework's command is its console:
// manage.py shell, dbshell, shell_plus; flask shell.
func consoleCommand(c string) bool {
	return c == "shell" || c == "dbshell" || c == "shell_plus" || c == "shell-plus" || c == "debugsqlshell"
}

// shell reads a shell's arguments: -c's script read as a line (its
// operands its positional parameters), -s, -i or no script: commands
// from the terminal; a script that is the terminal (bash /dev/stdin).
func (r *ireader) shell(args []string, depth int) bool {
	stdin, command := false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if command {
				return i+1 < len(args) && r.line(args[i+1], depth+1, args[min(i+2, len(args)):])
			}
			return stdin || i+1 >= len(args) || stdinArg(args[i+1])
		case a == "-o" || a == "+o" || a == "-O" || a == "+O" || a == "--rcfile" || a == "--init-file":
			i++
		case a == "--command":
			command = true
		case strings.HasPrefix(a, "--"):
		case a == "-":
			return true
		case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+"):
			if strings.Contains(a[1:], "c") {
				command = true
			}
			if strings.Contains(a[1:], "s") || strings.Contains(a[1:], "i") {
				stdin = true
			}
		case command:
			// The script; the words after it are $0, $1, ….
			return r.line(a, depth+1, args[i+1:])
		default:
			// A script, unless -s says the operands are its arguments.
			return stdin || stdinArg(a)
		}
	}
	return !command
}

// codeRunsInput reports whether inline code reads its standard input
// and runs what it reads (for l in sys.stdin: os.system(l)); runsOnly:
// the input is read by the interpreter's own loop (perl -n), so running
// anything is enough.
func codeRunsInput(code string, runsOnly bool) bool {
	l := strings.ToLower(code)
	runs := spawnsProcess(code)
	for _, s := range []string{"system", "exec", "eval", "popen", "spawn", "shell", "`", "qx"} {
		runs = runs || strings.Contains(l, s)
	}
	if !runs {
		return false
	}
	if runsOnly {
		return true
	}
	for _, s := range []string{"stdin", "input(", "readline", "<>", "gets", "argf", "$_", "readlines", "<stdin>", "fileinput",
		"open(0", "/dev/tty", "/dev/stdin", "/dev/fd/0", "readfilesync(0", "fdopen(0", "os.read(0", "io.read", "fgets"} {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// replCode are what inline code calls to start a REPL, a debugger or a
// shell on the terminal it was given.
var replCode = []string{"interact(", "set_trace(", "breakpoint(", "embed(", "pty.spawn", "repl.start", "require('repl')",
	`require("repl")`, "binding.irb", "binding.pry", "irb.start", "pry.start", "pdb.run", "debugger;", "readline.createinterface"}

// codeChannel reports whether inline code starts a REPL (code.interact(),
// pty.spawn, binding.irb) or runs a program named in one of its string
// literals that reads the terminal (os.system("bash"), exec "sh",
// spawn('python3', {stdio: 'inherit'})).
func (r *ireader) codeChannel(code string, depth int) bool {
	l := strings.ToLower(code)
	for _, m := range replCode {
		if strings.Contains(l, m) {
			return true
		}
	}
	if !codeRunsInput(code, true) {
		return false
	}
	for i := 0; i < len(code); i++ {
		q := code[i]
		if q != '\'' && q != '"' && q != '`' {
			continue
		}
		j := i + 1
		for j < len(code) && code[j] != q {
			if code[j] == '\\' {
				j++
			}
			j++
		}
		if j > len(code) {
			j = len(code)
		}
		if lit := code[i+1 : j]; lit != "" && !strings.ContainsAny(lit, "\n") && r.line(lit, depth+1, nil) {
			return true
		}
		i = j
		if r.over {
			return true
		}
	}
	return false
}

// replModules are python's modules that are a REPL or a debugger.
var replModules = map[string]bool{"pdb": true, "code": true, "asyncio": true, "ipython": true, "ipdb": true,
	"bpython": true, "ptpython": true, "sqlite3": true, "pudb": true, "idlelib": true, "jupyter_console": true}

// pythonInteractive: -i always ends at the REPL; -c code that runs what
// it reads; -m a REPL or a debugger's module (pdb, code, asyncio,
// IPython); manage.py shell; a script that is the terminal; - or nothing.
func pythonInteractive(args []string) bool {
	for _, a := range args {
		if a == "--" || !strings.HasPrefix(a, "-") {
			break
		}
		// A cluster's letters up to one that takes the rest as its value
		// (-ic code: -i, then -c's code).
		for k := 1; k < len(a) && a[1] != '-'; k++ {
			if a[k] == 'i' {
				return true
			}
			if strings.IndexByte("cmWX", a[k]) >= 0 {
				break
			}
		}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-":
			return true
		case a == "-W" || a == "-X" || a == "--check-hash-based-pycs":
			i++
		case a == "-c" || strings.HasPrefix(a, "-c"):
			code := strings.TrimPrefix(a, "-c")
			if code == "" && i+1 < len(args) {
				code = args[i+1]
			}
			return codeRunsInput(code, false)
		case a == "-m" || strings.HasPrefix(a, "-m"):
			mod := strings.TrimPrefix(a, "-m")
			rest := args[min(i+1, len(args)):]
			if mod == "" && len(rest) > 0 {
				mod, rest = rest[0], rest[1:]
			}
			mod = strings.ToLower(mod)
			switch {
			case replModules[mod]:
				return true
			case mod == "django" || mod == "flask":
				return len(rest) > 0 && consoleCommand(rest[0])
			case mod == "jupyter":
				return len(rest) > 0 && rest[0] == "console"
			}
			return false
		case strings.HasPrefix(a, "-"):
		default:
			if ProgramName(a) == "manage.py" {
				return i+1 < len(args) && consoleCommand(args[i+1])
			}
			return ttyPath(a)
		}
	}
	return true
}

// nodeInteractive: -i or --interactive ends at the REPL; inspect or
// debug is the debugger's; -e, -p, --test or a script run and exit.
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
		case a == "-e" || a == "--eval" || a == "-p" || a == "--print":
			return i+1 < len(args) && codeRunsInput(args[i+1], false)
		case a == "-c" || a == "--check" || a == "--test" || a == "-v" ||
			strings.HasPrefix(a, "--eval=") || strings.HasPrefix(a, "--print="):
			return false
		case a == "-r" || a == "--require" || a == "--import" || a == "--loader" || a == "-C" || a == "--conditions":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return a == "inspect" || a == "debug" || ttyPath(a)
		}
	}
	return true
}

// scriptInterpreter: ruby, perl or php with no program read one from the
// terminal; php -a and perl -d are their REPLs; -n or -p code that runs
// what it reads (perl -ne 'system $_') with no file, or -e code that
// reads its input and runs it, is a line runner; php artisan tinker.
func scriptInterpreter(name string, args []string) bool {
	loop := false
	for i, a := range args {
		if a == "--" || !strings.HasPrefix(a, "-") {
			break
		}
		next := ""
		if i+1 < len(args) {
			next = args[i+1]
		}
		switch {
		case name == "ruby" && (a == "-rdebug" || a == "-rdebug/start" || a == "-r" && (next == "debug" || next == "debug/start")):
			return true // the debugger's prompt at the first line
		case name == "perl" && (a == "-MCPAN" || a == "-MCPANPLUS" || a == "-M" && (next == "CPAN" || next == "CPANPLUS")) &&
			slices.ContainsFunc(args, func(b string) bool { return strings.Contains(b, "shell") }):
			return true // perl -MCPAN -e shell: the CPAN shell (! runs perl)
		}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-a" && name == "php":
			return true
		case a == "-e" || a == "-E" || a == "-r" && name == "php":
			if i+1 >= len(args) {
				return false
			}
			files := slices.ContainsFunc(args[i+2:], func(b string) bool { return !strings.HasPrefix(b, "-") })
			return codeRunsInput(args[i+1], loop && !files) && (!loop || !files)
		case a == "-":
			return true
		case strings.HasPrefix(a, "-") && len(a) > 1 && a[1] != '-' && name != "php":
			// A cluster read as the interpreter reads it: -ne, -lane,
			// -de, up to a letter whose value is the rest (-MJSON,
			// -Ilib, -i.bak) or the next word (-I lib).
			code, stop, next := "", "IMmxCil0FDV", "I"
			codeLetters := "eE"
			if name == "ruby" {
				stop, next, codeLetters = "0FiIrCEKxTW", "IrCE", "e"
			}
		letters:
			for k := 1; k < len(a); k++ {
				switch c := a[k]; {
				case strings.IndexByte(codeLetters, c) >= 0:
					code = a[k+1:]
					if code == "" {
						if i+1 >= len(args) {
							return false
						}
						i++
						code = args[i]
					}
					files := slices.ContainsFunc(args[i+1:], func(b string) bool { return !strings.HasPrefix(b, "-") })
					return codeRunsInput(code, loop && !files) && (!loop || !files)
				case c == 'n' || c == 'p':
					loop = true
				case c == 'd' && name == "perl":
					if k+1 < len(a) && a[k+1] == ':' {
						break letters // -d:Module: a profiler or a tracer
					}
					return true // perl -de 0: the debugger's prompt
				case strings.IndexByte(stop, c) >= 0:
					if k == len(a)-1 && strings.IndexByte(next, c) >= 0 {
						i++
					}
					break letters
				}
			}
		case strings.HasPrefix(a, "-"):
		default:
			if name == "php" && ProgramName(a) == "artisan" {
				return i+1 < len(args) && args[i+1] == "tinker"
			}
			return ttyPath(a)
		}
	}
	return true
}

// powershellInteractive: -NoExit keeps the prompt after a command; a
// command or a file of - reads the terminal; with no command nor script,
// the prompt.
func powershellInteractive(args []string) bool {
	for i, a := range args {
		l := strings.ToLower(a)
		if strings.HasPrefix(l, "-noe") || strings.HasPrefix(l, "/noe") {
			return true
		}
		if (l == "-c" || l == "-command" || l == "-f" || l == "-file") && i+1 < len(args) && args[i+1] == "-" {
			return true
		}
	}
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
}

// sshNoInput are ssh's option letters after which it reads nothing typed
// or runs nothing: -n (input /dev/null), -N (no command), -f
// (background), -O (a control command), -G, -Q (print), -V.
const sshNoInput = "nNfOGQV"

// ssh: to a host with no command, a login shell on it; a command after
// the host is read as a line the host's shell runs, the terminal its
// input (ssh host bash, ssh -t host sudo -i); -W forwards what is typed
// to a port, as nc does.
func (r *ireader) ssh(args []string, depth int) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 >= len(args) {
				return false
			}
			return r.remote(args[i+2:], depth)
		case strings.HasPrefix(a, "-") && len(a) >= 2 && a[1] != '-':
			for k := 1; k < len(a); k++ {
				if strings.IndexByte(sshNoInput, a[k]) >= 0 {
					return false
				}
				if a[k] == 'W' {
					return true
				}
				if strings.IndexByte(sshValueLetters, a[k]) >= 0 {
					break
				}
			}
			if sshTakesNext(a) {
				i++
			}
		case strings.HasPrefix(a, "-"):
		default:
			// OpenSSH reads options after the host too (ssh host -p 22
			// cmd), and a -- there ends them.
			j := i + 1
			for j < len(args) {
				b := args[j]
				if b == "--" {
					j++
					break
				}
				if !strings.HasPrefix(b, "-") || b == "-" {
					break
				}
				if strings.ContainsAny(b[1:], sshNoInput) && !strings.HasPrefix(b, "--") && !sshValueFirst(b) {
					return false
				}
				if sshTakesNext(b) {
					j++
				}
				j++
			}
			return r.remote(args[min(j, len(args)):], depth)
		}
	}
	return false
}

// sshValueFirst reports whether a cluster's first letter takes a value
// (-p22, -oX=y): its other letters are the value's.
func sshValueFirst(a string) bool {
	return len(a) > 2 && strings.IndexByte(sshValueLetters, a[1]) >= 0
}

// remote reads a remote command's words as the line its host's shell
// runs; none: the host's login shell.
func (r *ireader) remote(words []string, depth int) bool {
	if len(words) == 0 {
		return true
	}
	return r.line(strings.Join(words, " "), depth+1, nil)
}

// sudo: sudo -i / -s with no command is a root shell, with one the
// command through the shell; sudo su too; with a command, the command;
// sudo -e (sudoedit) an editor.
func (r *ireader) sudo(name string, args []string, depth int) bool {
	if name == "sudoedit" {
		return r.editorIn(depth, "vi", "SUDO_EDITOR", "VISUAL", "EDITOR")
	}
	shell, keepEnv := false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) {
				return r.sudoCommand(shell, keepEnv, args[i+1:], depth)
			}
			return shell
		case sudoValueOptions[a]:
			i++
		case strings.HasPrefix(a, "--"):
			switch {
			case a == "--login", a == "--shell":
				shell = true
			case a == "--preserve-env" || strings.HasPrefix(a, "--preserve-env="):
				keepEnv = true
			case a == "--edit":
				return r.editorIn(depth, "vi", "SUDO_EDITOR", "VISUAL", "EDITOR")
			case a == "--list", a == "--validate", a == "--reset-timestamp", a == "--remove-timestamp", a == "--version", a == "--help":
				return false
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for k := 1; k < len(a); k++ {
				switch a[k] {
				case 's', 'i':
					shell = true
				case 'E':
					keepEnv = true
				case 'e':
					return r.editorIn(depth, "vi", "SUDO_EDITOR", "VISUAL", "EDITOR")
				case 'l', 'v', 'V', 'K':
					return false
				case 'k':
					if len(args) == 1 {
						return false
					}
				}
				if strings.IndexByte("ugCDhprtTU", a[k]) >= 0 && (name == "sudo" || strings.IndexByte("uC", a[k]) >= 0) {
					if k == len(a)-1 {
						i++
					}
					break
				}
			}
		default:
			return r.sudoCommand(shell, keepEnv, args[i:], depth)
		}
	}
	return shell
}

// sudoMark is the variable the reading sets for a command sudo runs, as
// another user: systemd's pagers run in secure mode there.
const sudoMark = "_TG_SUDO"

// sudoCommand: the command sudo runs, in the environment sudo gives it
// (its env_reset drops PAGER and GIT_PAGER unless -E; NAME=value words
// before the command set it); with -s or -i, through the shell, as a
// line.
func (r *ireader) sudoCommand(shell, keepEnv bool, cmd []string, depth int) bool {
	if !keepEnv {
		r.bind(&binding{maybeReset: true})
	}
	r.bind(&binding{name: sudoMark, vals: []string{"1"}})
	cmd = cmd[r.setEnv(cmd, false):]
	if len(cmd) == 0 {
		return shell
	}
	if shell {
		return r.line(strings.Join(cmd, " "), depth+1, nil)
	}
	return r.argv(cmd, depth+1)
}

// sudoEnv is the command sudo or doas runs, its environment bound (for
// a reading of its pager: sudo's options are read roughly).
func (r *ireader) sudoEnv(args []string) []string {
	keepEnv, start := false, len(args)
options:
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			start = i + 1
			break options
		case sudoValueOptions[a]:
			i++
		case strings.HasPrefix(a, "--preserve-env"):
			keepEnv = true
		case strings.HasPrefix(a, "--"):
		case strings.HasPrefix(a, "-") && len(a) > 1:
			keepEnv = keepEnv || strings.Contains(a, "E")
			if clusterTakesNext(a, "ugCDhprtTU") {
				i++
			}
		default:
			start = i
			break options
		}
	}
	if !keepEnv {
		r.bind(&binding{maybeReset: true})
	}
	r.bind(&binding{name: sudoMark, vals: []string{"1"}})
	cmd := args[start:]
	return cmd[r.setEnv(cmd, false):]
}

// socat: an address that is the terminal (-, STDIO, STDIN, READLINE,
// /dev/tty) joined to another: what is typed goes to it.
func socatInteractive(args []string) bool {
	var addrs []string
	for _, a := range args {
		if a == "-" || !strings.HasPrefix(a, "-") {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) < 2 {
		return false
	}
	for _, a := range addrs[:2] {
		l := strings.ToLower(a)
		kind, rest, _ := strings.Cut(l, ":")
		kind, _, _ = strings.Cut(kind, ",")
		switch {
		case kind == "-" || kind == "stdio" || kind == "stdin" || kind == "readline" || kind == "fd" && strings.HasPrefix(rest, "0"):
			return true
		case ttyPath(kind) || (kind == "open" || kind == "file" || kind == "gopen") && ttyPath(strings.Split(rest, ",")[0]):
			return true
		}
	}
	return false
}

// tmux: with no command, or new-session and attach, a client on the
// terminal, unless new-session is detached (-d); -c runs a line.
func (r *ireader) tmux(args []string, depth int) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-c":
			return i+1 < len(args) && r.line(args[i+1], depth+1, nil)
		case a == "-L" || a == "-S" || a == "-f" || a == "-T":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			switch a {
			case "new", "new-session", "attach", "attach-session", "a", "at", "att", "atta", "attac":
			default:
				return false
			}
			if strings.HasPrefix(a, "new") {
				for _, b := range args[i+1:] {
					if strings.HasPrefix(b, "-") && !strings.HasPrefix(b, "--") && strings.Contains(b, "d") {
						return false
					}
				}
			}
			return true
		}
	}
	return true
}

// vimInteractive: an editor, unless in batch mode (-es, -Es, ex -s,
// nvim --headless) with a command that quits (-c wq, +qa).
func vimInteractive(name string, args []string) bool {
	batch, silent, ex := false, false, name == "ex"
	quits := false
	for i, a := range args {
		switch {
		case a == "--headless":
			batch = true
		case a == "-es" || a == "-Es" || a == "-e" && slices.Contains(args, "-s"):
			batch = true
		case a == "-e" || a == "-E":
			ex = true
		case a == "-s":
			silent = true
		case a == "-c" && i+1 < len(args):
			quits = quits || vimQuits(args[i+1])
		case strings.HasPrefix(a, "+"):
			quits = quits || vimQuits(a[1:])
		}
	}
	if ex && silent {
		batch = true
	}
	return !(batch && quits)
}

func vimQuits(c string) bool {
	c = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(c), ":"))
	for _, q := range []string{"q", "qa", "qall", "quit", "quitall", "wq", "wqa", "wqall", "x", "xa", "xall", "cq", "exit"} {
		if c == q || c == q+"!" || strings.HasSuffix(c, "|"+q) || strings.HasSuffix(c, "| "+q) || strings.HasSuffix(c, "|"+q+"!") {
			return true
		}
	}
	return false
}

// replOptions say how a REPL program's options end it: exits are the
// options given what to run, after which it exits; stays the options
// that keep it at its prompt whatever else is given; files the options
// whose value is a file of commands (one that is the terminal is the
// prompt); values the short options that take the next word (a host, a
// user); operands how many operands it reads the terminal with (a
// database, a host): one more is a command or a script (0: any operand
// is a script; -1: operands are files to edit, hosts, programs to
// debug); always: it reads the terminal unless asked its version.
type replOptions struct {
	exits, stays, files []string
	values              string
	operands            int
	always              bool
}

var repls = map[string]replOptions{
	"psql":              {exits: []string{"-c", "--command", "-l", "--list"}, files: []string{"-f", "--file"}, values: "hpUdvPTLoFRf", operands: 1},
	"mysql":             {exits: []string{"-e", "--execute"}, values: "hPuDSO", operands: 1},
	"mariadb":           {exits: []string{"-e", "--execute"}, values: "hPuDSO", operands: 1},
	"mysqlsh":           {exits: []string{"-e", "--execute", "--file", "-f"}, operands: 1},
	"sqlite3":           {exits: []string{"-version", "-help"}, values: "", operands: 1},
	"sqlite":            {exits: []string{"-version", "-help"}, operands: 1},
	"duckdb":            {exits: []string{"-c", "-s", "-version"}, files: []string{"-f"}, operands: 1},
	"mongosh":           {exits: []string{"--eval", "-f", "--file"}, stays: []string{"--shell"}, values: "up", operands: 1},
	"mongo":             {exits: []string{"--eval"}, stays: []string{"--shell"}, values: "up", operands: 1},
	"sqlcmd":            {exits: []string{"-q", "-Q"}, files: []string{"-i"}, operands: 0},
	"sqlplus":           {operands: 1},
	"cypher-shell":      {files: []string{"-f", "--file"}, values: "aupd", operands: 0},
	"redis-cli":         {exits: []string{"--scan", "--bigkeys", "--memkeys", "--stat", "--latency", "--rdb", "--pipe", "-x", "--eval", "--functions-rdb"}, values: "hpanu", operands: 0},
	"valkey-cli":        {exits: []string{"--scan", "--bigkeys", "--memkeys", "--stat", "--latency", "--rdb", "--pipe", "-x", "--eval"}, values: "hpanu", operands: 0},
	"cqlsh":             {exits: []string{"-e", "--execute", "-f", "--file"}, values: "ukt", operands: 2},
	"clickhouse-client": {exits: []string{"-q", "--query", "--queries-file"}, values: "hud", operands: 0},
	"usql":              {exits: []string{"-c", "--command", "-f", "--file"}, operands: 1},
	"litecli":           {exits: []string{"-e", "--execute"}, operands: 1},
	"pgcli":             {values: "hpUdW", operands: 2},
	"mycli":             {exits: []string{"-e", "--execute"}, values: "hPuDS", operands: 1},
	"beeline":           {exits: []string{"-e", "-f"}, values: "unpd", operands: 0},
	"hive":              {exits: []string{"-e", "-f"}, operands: 0},
	"impala-shell":      {exits: []string{"-q", "--query", "-f", "--query_file"}, operands: 0},
	"spark-sql":         {exits: []string{"-e", "-f"}, operands: 0},
	"influx":            {exits: []string{"-execute", "-import"}, operands: -2},
	"gdb":               {exits: []string{"-batch", "--batch", "-batch-silent", "--batch-silent", "--configuration"}, operands: -1, always: true},
	"lldb":              {exits: []string{"-b", "--batch"}, operands: -1, always: true},
	"julia":             {exits: []string{"-e", "--eval", "-E", "--print"}, stays: []string{"-i", "--interactive"}},
	"r":                 {exits: []string{"-e", "-f", "--file", "CMD"}},
	"lua":               {exits: []string{"-e"}, stays: []string{"-i"}},
	"luajit":            {exits: []string{"-e"}, stays: []string{"-i"}},
	"erl":               {exits: []string{"-noshell", "-detached", "-noinput"}, operands: -1, always: true},
	"iex":               {operands: -1, always: true},
	"clojure":           {exits: []string{"-e", "-m", "-M", "-X", "-T"}},
	"clj":               {exits: []string{"-e", "-m", "-M", "-X", "-T"}},
	"scala":             {exits: []string{"-e"}},
	"ghci":              {exits: []string{"-e"}},
	"jshell":            {exits: []string{"-c"}},
	"racket":            {exits: []string{"-e", "--eval", "-f", "--load", "-t", "--require"}, stays: []string{"-i", "--repl"}},
	"guile":             {exits: []string{"-c"}},
	"sbcl":              {exits: []string{"--script", "--non-interactive"}},
	"tclsh":             {},
	"wish":              {},
	"ocaml":             {},
	"utop":              {exits: []string{"-e"}},
	"kotlinc":           {exits: []string{"-script", "-e", "-d"}},
	"kotlin":            {exits: []string{"-e"}},
	"octave":            {exits: []string{"--eval"}, stays: []string{"--interactive", "-i"}},
	"swipl":             {exits: []string{"-g halt"}},
	"spark-shell":       {exits: []string{"-i", "-e"}},
	"pyspark":           {},
	"fsi":               {exits: []string{"--exec"}},
	"telnet":            {operands: -1, always: true},
	"sftp":              {exits: []string{"-b"}, files: []string{"-b"}, operands: -1, always: true},
	"ftp":               {operands: -1, always: true},
	"lftp":              {exits: []string{"-c", "-e", "-f"}, operands: -1, always: true},
	"mosh":              {operands: -1, always: true},
}

// repl reads a REPL program's options (repls); programs it does not list
// (a shell-like console, an editor, bc) read the terminal unless given a
// script.
func (r *ireader) repl(name string, args []string, depth int) bool {
	switch name {
	case "rlwrap":
		return r.wrapper(name, wrapperSpecs["rlwrap"], args, depth)
	case "fakeroot":
		return r.wrapper(name, wrapperSpecs["fakeroot"], args, depth)
	case "nano", "pico", "micro", "joe", "bc", "dc", "ed", "irb", "pry", "ipython", "bpython", "ptpython", "psysh",
		"tinker", "groovysh", "ipdb", "pdb", "csi", "clisp", "chez", "scheme", "gp", "maxima", "gforth", "coqtop",
		"idris2", "elm":
		return true
	}
	o := repls[name]
	operands := 0
	for i := 0; i < len(args); i++ {
		a := args[i]
		opt, value, hasValue := strings.Cut(a, "=")
		switch {
		case slices.Contains(o.stays, a):
			return true
		case slices.Contains(o.files, opt):
			v := value
			if !hasValue && i+1 < len(args) {
				v = args[i+1]
			}
			return stdinArg(v)
		case slices.Contains(o.exits, a) || slices.Contains(o.exits, opt) && hasValue:
			if !slices.ContainsFunc(args[i+1:], func(b string) bool { return slices.Contains(o.stays, b) }) {
				return false
			}
			return true
		case len(a) > 2 && a[0] == '-' && a[1] != '-' && slices.ContainsFunc(o.exits, func(e string) bool { return len(e) == 2 && strings.HasPrefix(a, e) }):
			return false // -ccode, -eSQL
		case len(a) == 2 && a[0] == '-' && strings.Contains(o.values, a[1:]), valueOptions[a]:
			i++
		case name == "sqlite3" || name == "sqlite":
			if a == "-cmd" || a == "-init" || a == "-separator" || a == "-newline" || a == "-nullvalue" || a == "-vfs" ||
				a == "-mmap" || a == "-lookaside" || a == "-pagecache" || a == "-maxsize" || a == "-heap" {
				i++
			} else if !strings.HasPrefix(a, "-") {
				operands++
			}
		case name == "duckdb" && a == "-init", name == "sqlplus" && strings.HasPrefix(a, "@"):
			if name == "sqlplus" {
				return false
			}
			i++
		case !strings.HasPrefix(a, "-") || a == "-":
			if a == "-" || ttyPath(a) {
				return true
			}
			operands++
		}
	}
	switch {
	case o.always, o.operands < 0:
		return true
	default:
		return operands <= o.operands
	}
}

// cloudShell: a host's, a VM's, a container's or a cloud's shell,
// started with no command (vagrant ssh, gcloud compute ssh VM, aws ssm
// start-session, heroku run bash, fly ssh console, lxc shell c); with
// one, the command.
func (r *ireader) cloudShell(name string, args []string, depth int) bool {
	var words []string // the subcommand's words, options out
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			words = append(words, a)
		}
	}
	has := func(opts ...string) bool {
		return slices.ContainsFunc(args, func(a string) bool {
			k, _, _ := strings.Cut(a, "=")
			return slices.Contains(opts, k)
		})
	}
	optValue := func(opts ...string) (string, bool) {
		for i, a := range args {
			k, v, ok := strings.Cut(a, "=")
			if slices.Contains(opts, k) {
				if !ok && i+1 < len(args) {
					v = args[i+1]
				}
				return v, true
			}
		}
		return "", false
	}
	after := func() []string {
		if dd := slices.Index(args, "--"); dd >= 0 {
			return args[dd+1:]
		}
		return nil
	}
	sub := func(path ...string) bool {
		return len(words) >= len(path) && slices.Equal(words[:len(path)], path)
	}
	lineOr := func(cmd string, ok bool) bool {
		if ok {
			return r.line(cmd, depth+1, nil)
		}
		if rest := after(); len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
			return r.argv(rest, depth+1) // the command; ssh's own options: still the shell
		}
		return true
	}
	switch name {
	case "vagrant", "minikube", "docker-machine":
		if !sub("ssh") {
			return false
		}
		return lineOr(optValue("-c", "--command"))
	case "multipass", "lxc", "incus":
		switch {
		case sub("shell"):
			return true
		case sub("exec"):
			if rest := after(); rest != nil {
				return r.argv(rest, depth+1)
			}
			return len(words) <= 2 || r.argv(words[2:], depth+1)
		case sub("console"):
			return true
		}
	case "machinectl":
		return sub("shell") || sub("login")
	case "toolbox", "distrobox":
		return sub("enter")
	case "systemd-nspawn":
		return r.wrapper(name, wrapSpec{values: "DMuS", longValues: []string{"--directory", "--machine", "--user", "--image"}, bare: true}, args, depth)
	case "gcloud":
		if sub("compute", "ssh") || sub("alpha", "compute", "ssh") || sub("beta", "compute", "ssh") || sub("cloud-shell", "ssh") ||
			sub("compute", "tpus", "tpu-vm", "ssh") {
			return lineOr(optValue("--command"))
		}
		return sub("sql", "connect") || sub("compute", "connect-to-serial-port") || sub("alpha", "interactive") || sub("beta", "interactive")
	case "aws":
		switch {
		case sub("ssm", "start-session"):
			doc, _ := optValue("--document-name")
			return !strings.Contains(strings.ToLower(doc), "portforwarding")
		case sub("ec2-instance-connect", "ssh"):
			return true
		case sub("ec2-instance-connect", "open-tunnel"):
			return !has("--local-port") // stdin and stdout the tunnel, as nc
		case sub("ecs", "execute-command"):
			cmd, _ := optValue("--command")
			return has("--interactive") && (cmd == "" || r.line(cmd, depth+1, nil))
		}
	case "heroku":
		switch {
		case sub("run"):
			if len(words) == 1 {
				return true
			}
			for i, a := range args {
				if a == "run" {
					return r.wrapper(name, wrapSpec{values: "aresx", longValues: []string{"--app", "--remote", "--env", "--size", "--type"}}, args[i+1:], depth)
				}
			}
		case sub("pg:psql"), sub("console"), sub("redis:cli"), sub("ps:exec"):
			return true
		}
	case "fly", "flyctl":
		switch {
		case sub("ssh", "console"):
			return lineOr(optValue("-C", "--command"))
		case sub("console"), sub("postgres", "connect"), sub("pg", "connect"), sub("redis", "connect"):
			return true
		}
	case "gh":
		if sub("pr", "create") || sub("issue", "create") || sub("pr", "comment") || sub("issue", "comment") {
			return r.ghBody(args, depth)
		}
		if i, ok := r.ghPrompts(args, sub, depth); ok {
			return i
		}
		if sub("codespace", "ssh") || sub("cs", "ssh") {
			if rest := after(); rest != nil {
				return r.argv(rest, depth+1)
			}
			return true
		}
	case "az":
		return sub("interactive") || sub("ssh") || sub("vm", "ssh") || sub("container", "exec") || sub("webapp", "ssh") || sub("postgres", "flexible-server", "connect") && has("--interactive")
	case "railway":
		return sub("shell") || sub("connect") || sub("ssh")
	case "eb":
		return sub("ssh") && !has("--command", "-c")
	case "copilot":
		// copilot svc exec and task exec run /bin/sh unless --command.
		if sub("svc", "exec") || sub("task", "exec") {
			return lineOr(optValue("-c", "--command"))
		}
	}
	return false
}

// ghBody: gh pr create, issue create and their comment prompt for the
// body when none is given and their input and output are the terminal,
// offering the editor (GH_EDITOR, its config's, VISUAL, EDITOR, nano);
// --editor opens it at once. A body given (--body, --body-file, --fill,
// --fill-first, --fill-verbose) or --web prompts for no body: at most for
// a title and what to do, which runs nothing.
func (r *ireader) ghBody(args []string, depth int) bool {
	flag := func(names ...string) bool {
		return slices.ContainsFunc(args, func(a string) bool {
			for _, n := range names {
				if a == n || strings.HasPrefix(a, n+"=") || len(n) == 2 && strings.HasPrefix(a, n) {
					return true
				}
			}
			return false
		})
	}
	if r.piped || r.envIs("GH_PROMPT_DISABLED", "1", "true") {
		return false
	}
	editor := func() bool {
		return r.toolRuns([]string{"GH_EDITOR", "config:editor"}, nil, "nano", false, true, depth)
	}
	switch {
	case flag("-e", "--editor"):
		return editor()
	case flag("-b", "--body", "-F", "--body-file", "-f", "--fill", "--fill-first", "--fill-verbose", "-w", "--web"):
		return false
	}
	return editor()
}

// valueOptions are database clients' long options that take the next
// word as their value.
var valueOptions = map[string]bool{"--host": true, "--port": true, "--user": true, "--username": true, "--dbname": true,
	"--database": true, "--set": true, "--variable": true, "--pset": true, "--password": true, "--authenticationDatabase": true}
