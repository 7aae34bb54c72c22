package shellcmd

import (
	"regexp"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// ReadsOnly reports whether a command line only reads: every command in
// it is a program known to read and print (ls, cat, grep, git status …)
// given no option that writes, deletes, runs another program or names
// where to read from in data, joined by ;, &&, || or pipes, with no
// redirection but from a file or into /dev/null. Such a line does what
// a Read, a Grep or an LS does — what it prints enters the context, and
// the next call that would send it anywhere is judged as before — so a
// taint window need not stop it.
//
// It answers no far more often than it must, because a yes lets a call
// through a window:
//   - Words are literal: a variable, a substitution, an arithmetic or
//     process expansion, a brace, an extended glob, a backslash inside
//     double quotes or before a line break make the line not only read —
//     data read by one command cannot become another's argument, and a
//     line PowerShell would run (Cursor and Codex on Windows send their
//     shells' lines through the same tools) cannot hide a subexpression
//     behind a word bash takes as plain.
//   - Programs are named by bare literal names: ./build.sh, a path,
//     sort.exe, a wrapper (sudo, timeout, xargs), an interpreter and cd (a
//     persistent shell would read later commands' repository from where
//     it moved) are not reads; sh, bash, dash or zsh -c reads its script
//     in turn.
//   - Options are checked in every word, -- and what follows it
//     included: an option taking a value can take --. A program whose
//     options can act (find, rg, git, sort, sed …) takes no glob: a file
//     named --pre=./x.sh would be one of its options.
//   - An argument that names another host — a URL, a UNC path
//     (\\host\share), //host, an automounted /net/host — is not a read:
//     opening it talks to that host, and its name is a channel.
//   - A line that does not parse, is longer than MaxParsed, or is empty.
//
// git reads its repository's configuration, which can name programs it
// runs (core.fsmonitor, a diff driver): a git command reads only when it
// is one of git's reading commands, without -C, -c or another directory,
// run where the shell already is.
func ReadsOnly(line string) bool { return readsOnlyLine(line, 0) }

// ArgvReadsOnly is ReadsOnly for an argument vector (["bash", "-lc",
// "git status"], ["rg", "-n", "TODO"]): a shell's -c line is read as a
// line, anything else as one command whose words are literal.
func ArgvReadsOnly(argv []string) bool { return readsOnlyArgv(argv, 0) }

func readsOnlyArgv(argv []string, depth int) bool {
	if len(argv) == 0 {
		return false
	}
	if systemShell(argv[0]) && len(argv) == 3 && shellScriptOption(argv[1]) {
		return readsOnlyLine(argv[2], depth+1)
	}
	words := make([]word, len(argv))
	for i, a := range argv {
		words[i] = word{value: a, raw: a}
	}
	return readsOnlyCommand(words)
}

// posixShells are the shells whose -c script is read as bash: fish and
// the rest quote otherwise (fish takes \' inside single quotes as an
// escape).
var posixShells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true}

// systemShell reports whether a word names a POSIX shell by its bare name
// or where systems install it (/bin/bash, /usr/bin/zsh): ./tools/bash is a
// file of the workspace, whatever it is called.
func systemShell(w string) bool {
	dir, name := "", w
	if i := strings.LastIndexByte(w, '/'); i >= 0 {
		dir, name = w[:i+1], w[i+1:]
	}
	switch dir {
	case "", "/bin/", "/usr/bin/", "/usr/local/bin/", "/opt/homebrew/bin/":
		return posixShells[name]
	}
	return false
}

// shellScriptOption reports whether a shell option is -c with single-letter
// options beside it (-lc, -ec), as exec-style argument vectors write it.
func shellScriptOption(o string) bool {
	if len(o) < 2 || o[0] != '-' || o[1] == '-' || !strings.HasSuffix(o, "c") {
		return false
	}
	for _, r := range o[1:] {
		if !strings.ContainsRune("celx", r) {
			return false
		}
	}
	return true
}

func readsOnlyLine(line string, depth int) bool {
	if depth > maxDepth || len(line) > MaxParsed || strings.TrimSpace(line) == "" {
		return false
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil || len(f.Stmts) == 0 {
		return false
	}
	for _, st := range f.Stmts {
		if !readsOnlyStmt(st, depth) {
			return false
		}
	}
	return true
}

func readsOnlyStmt(st *syntax.Stmt, depth int) bool {
	if st == nil || st.Negated || st.Background || st.Coprocess || st.Disown {
		return false
	}
	for _, r := range st.Redirs {
		if !harmlessRedirect(r) {
			return false
		}
	}
	switch c := st.Cmd.(type) {
	case *syntax.CallExpr:
		if len(c.Assigns) > 0 || len(c.Args) == 0 {
			return false // FOO=… cmd: an environment can make a program run another
		}
		words := make([]word, len(c.Args))
		for i, w := range c.Args {
			var ok bool
			if words[i], ok = plainWord(w); !ok {
				return false
			}
		}
		// bash -c '…' as a command of the line: its script is read in turn.
		if name := words[0].value; posixShells[name] && words[0].raw == name && len(words) == 3 && shellScriptOption(words[1].value) && !words[2].glob {
			return readsOnlyLine(words[2].value, depth+1)
		}
		return readsOnlyCommand(words)
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.AndStmt, syntax.OrStmt, syntax.Pipe, syntax.PipeAll:
			return readsOnlyStmt(c.X, depth) && readsOnlyStmt(c.Y, depth)
		}
	}
	// Subshells, blocks, loops, conditionals, functions, declarations,
	// [[ ]] and (( )): more to read than their reading is worth.
	return false
}

// harmlessRedirect reports whether a redirection neither writes nor
// opens a connection: output into /dev/null, one descriptor onto another
// (2>&1), input from a file named literally.
func harmlessRedirect(r *syntax.Redirect) bool {
	if r.N != nil && !digits(r.N.Value) {
		return false // {fd}>: a variable named by the line
	}
	if r.Word == nil {
		return false
	}
	w, ok := plainWord(r.Word)
	if !ok || w.glob {
		return false
	}
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll:
		return w.value == "/dev/null"
	case syntax.DplOut, syntax.DplIn:
		return digits(w.value) && len(w.value) == 1
	case syntax.RdrIn:
		// bash opens a connection for /dev/tcp/host/port and /dev/udp/….
		return localPath(w) && !strings.HasPrefix(w.value, "/dev/tcp/") && !strings.HasPrefix(w.value, "/dev/udp/")
	}
	return false // <>, here-documents and here-strings (their words expand)
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// word is a literal word of a command: its value after quoting, the text
// as written (raw: backslashes kept), and whether an unquoted part holds a
// glob (*, ?, [) the shell would expand into file names.
type word struct {
	value, raw string
	glob       bool
}

// plainWord is a word made only of literal text, single quotes and double
// quotes around literal text. An unquoted brace is refused too: bash
// expands {a,b}, and PowerShell runs a script block {…} handed to a
// command that takes pipeline input.
func plainWord(w *syntax.Word) (word, bool) {
	var out word
	var value, raw strings.Builder
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			// A backslash before a line break joins the lines in bash
			// (--out\⏎put= is --output=): refused rather than followed.
			if strings.ContainsAny(p.Value, "{}") || strings.Contains(p.Value, "\\\n") || strings.Contains(p.Value, "\\\r") {
				return word{}, false
			}
			// zsh with EXTENDED_GLOB (a user's setting Claude Code's
			// shell snapshot keeps) also expands ^x, x# and x~y.
			out.glob = out.glob || strings.ContainsAny(p.Value, "*?[^#") || strings.Contains(p.Value[min(1, len(p.Value)):], "~")
			value.WriteString(unescape(p.Value))
			raw.WriteString(p.Value)
		case *syntax.SglQuoted:
			if p.Dollar {
				return word{}, false
			}
			value.WriteString(p.Value)
			raw.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return word{}, false
			}
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				// A backslash: bash escapes the next character with it,
				// PowerShell does not ("\$(iwr …)" runs iwr there).
				if !ok || strings.Contains(l.Value, `\`) {
					return word{}, false
				}
				value.WriteString(l.Value)
				raw.WriteString(l.Value)
			}
		default:
			return word{}, false
		}
	}
	out.value, out.raw = value.String(), raw.String()
	return out, true
}

// providers are PowerShell's drives that are not files — the environment,
// variables, the registry, certificates — as a word (or an option's value)
// names them: cat env:ANTHROPIC_API_KEY prints a secret there.
var providers = []string{"env:", "variable:", "function:", "alias:", "hklm:", "hkcu:", "registry::", "cert:", "wsman:"}

// localPath reports whether a word names nothing on another host: no URL,
// no UNC path (\\host\share, //host/share, PowerShell's
// FileSystem::\\host\share or a list a,\\host\x), no automounted /net/host
// (/./net/host, ../../net/host) — at the word's start, after =, :, ; or a
// comma, or glued to a short option (-f//host/x).
func localPath(w word) bool {
	for _, s := range []string{w.value, w.raw} {
		l := strings.ToLower(s)
		if strings.Contains(l, "://") {
			return false
		}
		for i := range len(l) {
			if i > 0 && !strings.ContainsRune("=:,;", rune(l[i-1])) && !(i == 2 && l[0] == '-' && l[1] != '-') {
				continue
			}
			rest := l[i:]
			if len(rest) >= 2 && (rest[0] == '/' || rest[0] == '\\') && (rest[1] == '/' || rest[1] == '\\') || automounted(rest) ||
				slices.ContainsFunc(providers, func(p string) bool { return strings.HasPrefix(rest, p) }) {
				return false
			}
		}
	}
	return true
}

// NamesNoHost reports whether a path or word names nothing on another host
// (localPath): no URL, UNC path or automounted /net/host — for a working
// directory given beside a command.
func NamesNoHost(s string) bool { return localPath(word{value: s, raw: s}) }

// automounted reports whether a path leads into /net, where macOS (and
// autofs) mount a host named by the next element: from the root, or up
// from the working directory by .. alone.
func automounted(p string) bool {
	p = strings.ReplaceAll(p, `\`, "/")
	absolute := strings.HasPrefix(p, "/")
	up := false
	for _, e := range strings.Split(p, "/") {
		switch e {
		case "", ".":
		case "..":
			up = true
		case "net":
			return absolute || up
		default:
			return false
		}
	}
	return false
}

// readsOnlyCommand reports whether one command, its words literal, only
// reads: its program is one readers names, by a bare name, and its
// arguments pass that program's check.
func readsOnlyCommand(words []word) bool {
	prog := words[0]
	if prog.glob || prog.value == "" || strings.ContainsAny(prog.value, `/\`) || prog.value != prog.raw {
		return false // a path, ./x, \ls (an alias bypass is fine, but nothing needs it)
	}
	// By its bare name only: PowerShell runs Windows' sort.exe for
	// sort.exe (whose /O writes a file) but its own Sort-Object for sort.
	r, ok := readers[strings.ToLower(prog.value)]
	if !ok {
		return false
	}
	args := make([]string, 0, len(words)-1)
	for _, w := range words[1:] {
		if !localPath(w) || refused(w.value, namesFromData) {
			return false
		}
		// A glob becomes file names. For a program whose options act, one
		// that may begin a name (*.go: a file named --pre=x.go) is
		// refused, one that begins with what it is written with (src/*.go,
		// ./*.md) is not; for one that counts its operands, any.
		if w.glob && (r.operands || r.check != nil && (w.raw == "" || w.value == "" ||
			strings.ContainsAny(w.raw[:1], `-*?[^\`) || strings.ContainsAny(w.value[:1], "-*?[^"))) {
			return false // \-* is -* to the shell
		}
		args = append(args, w.value)
	}
	return r.check == nil || r.check(args)
}

// namesFromData are options by which GNU programs take the names of the
// files to open from a file or a pipe: data read would choose what is
// opened (a /net/host path).
var namesFromData = []string{"--files0-from", "-files0-from"}

// reader is a program that reads and prints. check, when set, is given
// its arguments and tells whether they keep it a reader; a program
// without one has no option that writes, deletes or runs anything.
type reader struct {
	check func(args []string) bool
	// operands: check counts the operands (uniq writes its second), so a
	// glob, which may stand for several, is refused.
	operands bool
}

// readers are the programs a line may run and still only read. Programs
// that run others (xargs, env, timeout, sudo, find -exec's target),
// interpreters — awk among them: gawk opens /inet/tcp/… as a file, and
// every awk reads whatever its program puts in ARGV —, editors, pagers
// (less runs !commands), package managers and anything that talks to the
// network are not here.
var readers = map[string]reader{
	// Listing and printing files.
	"ls": {}, "dir": {}, "cat": {}, "tac": {}, "head": {}, "tail": {}, "nl": {}, "stat": {},
	// wc and du take no glob: a file named --files0-from=x would be read as one.
	"wc": {check: refuse()}, "du": {check: refuse()},
	"df": {}, "file": {check: refuse("-C", "--compile")}, "tree": {check: refuse("-o", "-R")},
	"readlink": {}, "realpath": {}, "basename": {}, "dirname": {}, "pwd": {},
	"od": {}, "strings": {}, "md5sum": {}, "sha1sum": {}, "sha256sum": {}, "sha512sum": {}, "b2sum": {}, "cksum": {},
	"base64": {check: refuse("-o", "--output")},
	// Searching.
	"grep": {}, "egrep": {}, "fgrep": {},
	"rg":   {check: refuse("--pre", "--hostname-bin", "-z", "--search-zip")},
	"find": {check: refuse("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fls", "-fprint", "-fprint0", "-fprintf")},
	// Filters over what a pipe or a file gives.
	"cut": {}, "tr": {}, "paste": {}, "rev": {}, "column": {}, "comm": {}, "cmp": {}, "diff": {},
	"jq":   {check: jqReadsNoEnvironment, operands: true},
	"sort": {check: refuse("-o", "--output", "--compress-program")},
	"uniq": {check: atMostOneOperand, operands: true},
	"sed":  {check: sedPrints},
	// Saying what the machine and the shell are.
	"echo": {}, "printf": {check: refuse("-v")}, "true": {}, "false": {}, "seq": {}, "expr": {}, "numfmt": {},
	"which": {}, "type": {}, "whoami": {}, "id": {}, "uname": {}, "nproc": {}, "uptime": {}, "test": {}, "ps": {check: psHidesEnvironment, operands: true},
	"command": {check: onlyOptions("-v", "-V")},
	"date":    {check: dateShows},
	"git":     {check: gitReads},
}

// refuse is a check refusing the options named (a long option's
// abbreviation too: GNU's and git's parsers take --out for --output).
func refuse(options ...string) func([]string) bool {
	return func(args []string) bool {
		// Every word, -- included and what follows it: an option that
		// takes a value can take --, and the options after it count
		// (sort --random-source -- --compress-program=sh).
		for _, a := range args {
			if refused(a, options) {
				return false
			}
		}
		return true
	}
}

// refused reports whether an argument gives one of options: alone, with
// a value after = (--output=x), abbreviated (--out=x, when the option is
// long), or as a short option among others or glued to its value (-o in
// -no, -ofile).
func refused(a string, options []string) bool {
	name, _, _ := strings.Cut(a, "=")
	for _, o := range options {
		switch {
		case name == o:
			return true
		case strings.HasPrefix(o, "--") && len(name) > 2 && strings.HasPrefix(o, name):
			return true
		case len(o) == 2 && o[0] == '-' && len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsRune(a[1:], rune(o[1])):
			return true
		}
	}
	return false
}

// atMostOneOperand: uniq's second operand is the file it writes. -f, -s
// and -w take a number; after --, every word is an operand.
func atMostOneOperand(args []string) bool {
	n := 0
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			n += len(args) - i - 1
			i = len(args)
		case a == "-f" || a == "-s" || a == "-w":
			i++
		case a == "-" || !strings.HasPrefix(a, "-"):
			n++
		}
	}
	return n <= 1
}

// onlyOptions is a check accepting the options named and operands, and
// requiring one of the options (command -v go prints where go is; command
// go runs it).
func onlyOptions(options ...string) func([]string) bool {
	return func(args []string) bool {
		seen := false
		for _, a := range args {
			if strings.HasPrefix(a, "-") {
				if !slices.Contains(options, a) {
					return false
				}
				seen = true
			}
		}
		return seen
	}
}

// sedRange is a sed script that prints lines by number or pattern: 5p,
// 1,200p, 10,$p, /^func main/,/^}/p, several of them joined by ;. A
// pattern is a regular expression between slashes (\/ inside), with I or
// M after it; nothing else of sed's (w, e, r, s, {…}) is taken.
var sedRange = func() *regexp.Regexp {
	addr := `(\d+|\$|/(?:[^/\\\n]|\\[^\n])*/[IM]?)`
	one := `\s*` + addr + `(\s*,\s*` + addr + `)?\s*p\s*`
	return regexp.MustCompile(`^` + one + `(;` + one + `)*;?\s*$`)
}()

// sedPrints: sed -n with a script that only prints lines by number (sed -n
// '1,200p' file), as agents page through files; a sed script can write
// (w), run (e) and edit in place (-i), so nothing else.
func sedPrints(args []string) bool {
	if len(args) < 2 || args[0] != "-n" || !sedRange.MatchString(args[1]) {
		return false
	}
	for _, a := range args[2:] {
		if strings.HasPrefix(a, "-") && a != "-" {
			return false
		}
	}
	return true
}

// jqEnvironment is how a jq filter reads the environment (env, $ENV),
// which holds secrets a Read of the workspace does not.
var jqEnvironment = regexp.MustCompile(`\benv\b|\$ENV\b`)

// jqReadsNoEnvironment: jq with no filter or file that names the
// environment, and its filter on the line: -f and --from-file read it from
// a file, -L and include/import bring modules in.
func jqReadsNoEnvironment(args []string) bool {
	return !slices.ContainsFunc(args, func(a string) bool {
		return jqEnvironment.MatchString(a) || strings.Contains(a, "include") || strings.Contains(a, "import")
	}) && refuse("-f", "--from-file", "-L")(args)
}

// psHidesEnvironment: ps without BSD's e (ps auxe, ps ewwx) or -E (macOS,
// FreeBSD), which print every process's environment — the agent's own
// tokens among them.
func psHidesEnvironment(args []string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, "-") && strings.ContainsRune(a, 'E') || !strings.HasPrefix(a, "-") && strings.ContainsRune(a, 'e') {
			return false
		}
	}
	return true
}

// dateShows: date printing the time (+FORMAT, -d, -u …), not setting it
// (-s, or an operand that is not a +FORMAT).
func dateShows(args []string) bool {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "+") {
			return false
		}
	}
	return refuse("-s", "--set")(args)
}

// gitDiffReads checks the commands that print a diff (diff, log, show,
// stash list, reflog): no file written (--output), no diff program run
// (--ext-diff, --textconv).
var gitDiffReads = refuse("--output", "--ext-diff", "--textconv")

// gitReadingCommands are git's commands that print what the repository
// holds and change nothing, with the options that would make them write
// a file or run another program.
var gitReadingCommands = map[string]func([]string) bool{
	"status":    refuse("--output"),
	"diff":      gitDiffReads,
	"log":       gitDiffReads,
	"show":      gitDiffReads,
	"blame":     refuse("--output", "--textconv", "--contents"),
	"rev-parse": refuse(),
	"ls-files":  refuse(),
	"grep":      refuse("-O", "--open-files-in-pager", "--textconv"),
	"branch":    gitBranchLists,
	"ls-tree":   refuse(),
	"describe":  refuse(),
	"show-ref":  refuse(),
	"cat-file":  refuse("--textconv", "--filters", "--batch-command"),
	"remote":    gitRemoteLists,
	"tag":       gitTagLists,
	"stash":     gitStashLists,
	"shortlog":  refuse("--output"),
	"reflog":    gitReflogShows,
	"config":    gitConfigGets,
}

// gitReflogShows: git reflog and git reflog show (not expire or delete).
func gitReflogShows(args []string) bool {
	return (len(args) == 0 || args[0] == "show" || strings.HasPrefix(args[0], "-")) &&
		!slices.ContainsFunc(args, func(a string) bool { return a == "expire" || a == "delete" || a == "drop" }) &&
		gitDiffReads(args)
}

// gitRemoteLists: git remote and git remote -v (other forms add, remove
// or contact remotes).
func gitRemoteLists(args []string) bool {
	for _, a := range args {
		if a != "-v" && a != "--verbose" {
			return false
		}
	}
	return true
}

// gitTagLists: git tag listing, without a name or with -l and patterns.
func gitTagLists(args []string) bool {
	list := len(args) == 0
	for _, a := range args {
		switch {
		case a == "-l" || a == "--list":
			list = true
		case a == "-n" || strings.HasPrefix(a, "-n") && digits(a[2:]) || strings.HasPrefix(a, "--sort=") || strings.HasPrefix(a, "--format="):
		case strings.HasPrefix(a, "-"):
			return false // -a, -d, -f, -s …: creating, deleting, signing
		}
	}
	return list
}

// gitStashLists: git stash list (and its log options).
func gitStashLists(args []string) bool {
	return len(args) > 0 && args[0] == "list" && gitDiffReads(args[1:])
}

// gitConfigGets: git config reading a key or listing (--get, --get-all,
// --get-regexp, --list, -l), setting nothing.
func gitConfigGets(args []string) bool {
	get := false
	for _, a := range args {
		switch {
		case a == "--get" || a == "--get-all" || a == "--get-regexp" || a == "--list" || a == "-l":
			get = true
		case a == "--global" || a == "--system" || a == "--local" || a == "--show-origin" || a == "--show-scope" ||
			a == "--name-only" || a == "-z" || a == "--null" || a == "--includes" || a == "--no-includes":
		case strings.HasPrefix(a, "-"):
			return false // --add, --unset, --edit, --file …
		}
	}
	return get
}

// gitReads: one of git's reading commands, with none of git's own
// options but --no-pager (-c sets configuration that can name a program
// to run, -C and --git-dir read another repository's).
func gitReads(args []string) bool {
	i := 0
	for ; i < len(args) && strings.HasPrefix(args[i], "-"); i++ {
		if args[i] != "--no-pager" && args[i] != "-P" {
			return false
		}
	}
	if i == len(args) {
		return false
	}
	check, ok := gitReadingCommands[args[i]]
	if !ok {
		return false
	}
	rest := args[i+1:]
	return refuse("--paginate")(rest) && check(rest)
}

// gitBranchLists: git branch listing branches (no name given: a name
// creates, renames or deletes one).
func gitBranchLists(args []string) bool {
	for _, a := range args {
		switch {
		case slices.Contains([]string{"-a", "--all", "-r", "--remotes", "-l", "--list", "-v", "-vv", "--verbose",
			"--show-current", "--no-color", "--color", "--merged", "--no-merged", "--contains", "--no-contains"}, a):
		case strings.HasPrefix(a, "--format=") || strings.HasPrefix(a, "--sort="):
		default:
			return false
		}
	}
	return true
}
