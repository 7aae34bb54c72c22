package shellcmd

// More programs Interactive knows: the spellings of a program's name
// the shell resolves ($'…', {a,b}, an alias the line defines), editors
// and pagers with a shell escape, version control systems and forges
// that open the user's editor, REPLs, shells and wrappers.

import (
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// ansiLiteral is literal for a word with $'…' strings, their escapes
// decoded as bash decodes them ($'\x6cess' is less).
func ansiLiteral(w *syntax.Word) (string, bool) { return wordValue(w, true) }

// ansiC decodes the escapes of a $'…' string: \n, \t, \e, \\, \', \",
// \nnn (octal), \xHH, \uHHHH, \UHHHHHHHH, \cX.
func ansiC(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'e', 'E':
			b.WriteByte(27)
		case 'f':
			b.WriteByte(12)
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte(11)
		case 'c':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i] & 0x1f)
			}
		case 'x', 'u', 'U':
			max := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
			j := i + 1
			for j < len(s) && j-i-1 < max && strings.IndexByte("0123456789abcdefABCDEF", s[j]) >= 0 {
				j++
			}
			if j == i+1 {
				b.WriteByte('\\')
				b.WriteByte(c)
				continue
			}
			n, _ := strconv.ParseUint(s[i+1:j], 16, 32)
			if c == 'x' {
				b.WriteByte(byte(n))
			} else {
				b.WriteRune(rune(n))
			}
			i = j - 1
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j-i < 3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			n, _ := strconv.ParseUint(s[i:j], 8, 16)
			b.WriteByte(byte(n))
			i = j - 1
		default:
			if c != '\\' && c != '\'' && c != '"' && c != '?' {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		}
	}
	return b.String()
}

// maxBraceWords bounds the words a command word's brace expansion is
// read to.
const maxBraceWords = 32

// braceWords are the words a command word's brace expansion gives
// ({less,} is less; {le,}ss is less ss), when each is literal.
func braceWords(w *syntax.Word) ([]string, bool) {
	cp := &syntax.Word{Parts: slices.Clone(w.Parts)}
	if !syntax.SplitBraces(cp) {
		return nil, false
	}
	all, ok := braceParts(cp.Parts)
	if !ok {
		return nil, false
	}
	out := slices.DeleteFunc(all, func(s string) bool { return s == "" })
	return out, len(out) > 0
}

// braceParts expands a word's parts, braces split, to at most
// maxBraceWords strings; a sequence ({1..3}) or a part that is not
// literal is not read.
func braceParts(parts []syntax.WordPart) ([]string, bool) {
	acc := []string{""}
	for _, part := range parts {
		var alts []string
		switch p := part.(type) {
		case *syntax.BraceExp:
			if p.Sequence {
				return nil, false
			}
			for _, e := range p.Elems {
				sub, ok := braceParts(e.Parts)
				if !ok {
					return nil, false
				}
				alts = append(alts, sub...)
			}
		default:
			s, ok := literal(&syntax.Word{Parts: []syntax.WordPart{part}})
			if !ok {
				return nil, false
			}
			alts = []string{s}
		}
		if len(acc)*len(alts) > maxBraceWords {
			return nil, false
		}
		next := make([]string, 0, len(acc)*len(alts))
		for _, a := range acc {
			for _, b := range alts {
				next = append(next, a+b)
			}
		}
		acc = next
	}
	return acc, true
}

// versioned are the programs installed under a versioned name too
// (lua5.4, php8.2, ruby3.2, tclsh8.6, ipython3, ksh93).
var versioned = map[string]bool{"lua": true, "luajit": true, "php": true, "ruby": true, "perl": true, "tclsh": true,
	"wish": true, "guile": true, "ipython": true, "bpython": true, "pudb": true, "irb": true, "node": true, "nodejs": true,
	"octave": true, "julia": true, "racket": true, "ghci": true, "erl": true, "sbcl": true, "emacs": true, "vim": true,
	"nvim": true, "psql": true, "mysql": true, "sqlite": true, "bash": true, "zsh": true, "ksh": true, "gdb": true}

// programAlias is the program a name installs: vim.tiny and vim.basic
// are vim, nvim.appimage nvim, a versioned name its program's.
func programAlias(name string) string {
	switch {
	case strings.HasPrefix(name, "vim.") || name == "vi.tiny":
		return "vim"
	case strings.HasPrefix(name, "nvim."):
		return "nvim"
	}
	if base := strings.TrimRight(name, "0123456789.-"); base != name && versioned[base] {
		return base
	}
	return name
}

// alias reads an alias's definitions (alias l=less): the commands after
// it whose first word is l run less. A shell expands them in a later
// line when it expands aliases at all (zsh, sh, bash's expand_aliases):
// taken to (fail closed).
func (r *ireader) alias(args []string) {
	for _, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok && k != "" && !strings.HasPrefix(k, "-") {
			if r.aliases == nil {
				r.aliases = map[string]string{}
			}
			if len(r.aliases) < maxBindings {
				r.aliases[k] = v
			}
		}
	}
}

// expandAlias reads a command whose first word is an alias the line
// defined: the alias's text, then its words, as a line. An alias is
// not expanded within itself.
func (r *ireader) expandAlias(argv []string, depth int) (interactive, ok bool) {
	v, ok := r.aliases[argv[0]]
	if !ok {
		return false, false
	}
	line := v
	for _, a := range argv[1:] {
		q, err := syntax.Quote(a, syntax.LangBash)
		if err != nil {
			q = "x"
		}
		line += " " + q
	}
	delete(r.aliases, argv[0])
	defer func() { r.aliases[argv[0]] = v }()
	return r.line(line, depth+1, nil), true
}

// otherShells are shells the package's shells do not list: with no
// script, or -i or -s, they read commands from the terminal.
var otherShells = map[string]bool{"rbash": true, "tcsh": true, "csh": true, "nu": true, "nushell": true, "xonsh": true,
	"elvish": true, "osh": true, "ysh": true, "oil": true, "yash": true, "posh": true, "sash": true, "rc": true, "es": true,
	"ion": true, "oksh": true, "loksh": true, "pdksh": true}

// editors with a shell escape (:!cmd, M-!, ^K!, |cmd) that read keys
// from the terminal whatever they are given, and what runs one: Debian's
// pager and editor alternatives, sensible-editor (VISUAL, EDITOR,
// editor, nano), a text browser sensible-browser or xdg-open start when
// there is no display, pudb.
var moreEditors = map[string]bool{"nvi": true, "vile": true, "elvis": true, "jove": true, "qemacs": true, "mg": true,
	"jed": true, "ne": true, "jmacs": true, "jstar": true, "jpico": true, "rjoe": true, "vis": true, "zile": true,
	"zemacs": true, "mcedit": true, "dte": true, "pager": true, "editor": true, "sensible-editor": true,
	"sensible-browser": true, "www-browser": true, "xdg-open": true, "pudb": true, "lxc-console": true, "login": true}

// hasArg reports whether one of opts is among args (or opt=value).
func hasArg(args []string, opts ...string) bool {
	return slices.ContainsFunc(args, func(a string) bool {
		k, _, _ := strings.Cut(a, "=")
		return slices.Contains(opts, a) || strings.HasPrefix(k, "--") && slices.Contains(opts, k)
	})
}

// moreProgram reads the programs this file adds; known is false for
// any other.
func (r *ireader) moreProgram(name string, args []string, depth int) (interactive, known bool) {
	if moreEditors[name] {
		return true, true
	}
	if otherShells[name] {
		return r.shell(args, depth), true
	}
	switch name {
	case "hx", "helix":
		return !hasArg(args, "--health", "-g", "--grammar"), true
	case "kak":
		return !hasArg(args, "-f", "-p", "-l", "-clear"), true
	case "ncdu":
		// b spawns a shell; -o exports and exits; -r twice takes the
		// shell away.
		ro := 0
		for _, a := range args {
			if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") {
				ro += strings.Count(a, "r")
			}
		}
		return !hasArg(args, "-o") && ro < 2, true
	case "vipe":
		return r.editorIn(depth, "vi", "EDITOR", "VISUAL"), true
	case "edquota":
		return !hasArg(args, "-p") && r.editorIn(depth, "vi", "EDITOR"), true
	case "sensible-pager":
		return r.toolRuns([]string{"PAGER"}, nil, "pager", false, false, depth), true
	case "ipython", "bpython", "ptpython", "ptipython":
		return ipythonInteractive(args), true
	case "gnuplot":
		return gnuplotInteractive(args), true
	case "m4":
		return m4Interactive(args), true
	case "cpan":
		return len(args) == 0, true
	case "virsh":
		ops := subcommandOperands(args, "cl", "--connect", "--log")
		return len(ops) == 0 || ops[0] == "console", true
	case "npm":
		ops := subcommandOperands(args, "w", "--workspace", "--prefix")
		return len(ops) > 0 && ops[0] == "edit", true
	case "hg", "sl", "chg":
		return r.hgEdits(args, depth), true
	case "svn":
		return r.svnEdits(args, depth), true
	case "bzr", "brz":
		ops := subcommandOperands(args, "mFr", "--message", "--file", "--revision", "--author", "--fixes")
		return len(ops) > 0 && (ops[0] == "commit" || ops[0] == "ci") && !hasArg(args, "-m", "--message", "-F", "--file") &&
			!slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-m") || strings.HasPrefix(a, "-F") }) &&
			r.editorIn(depth, "vi", "BZR_EDITOR", "BRZ_EDITOR", "config:editor"), true
	case "cvs":
		ops := subcommandOperands(args, "dTeszr")
		return len(ops) > 0 && (ops[0] == "commit" || ops[0] == "ci" || ops[0] == "com") &&
			!slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-m") || strings.HasPrefix(a, "-F") }) &&
			r.editorIn(depth, "vi", "CVSEDITOR", "VISUAL", "EDITOR"), true
	case "jj":
		return r.jjEdits(args, depth), true
	case "glab":
		return r.glabEdits(args, depth), true
	case "capsh":
		// capsh -- args runs /bin/bash (or --shell=) with args.
		if i := slices.Index(args, "--"); i >= 0 {
			sh := "bash"
			for _, a := range args[:i] {
				if v, ok := strings.CutPrefix(a, "--shell="); ok {
					sh = v
				}
			}
			return r.argv(append([]string{sh}, args[i+1:]...), depth+1), true
		}
		return false, true
	case "setarch", "linux32", "linux64", "i386", "x86_64":
		// setarch ARCH [options] [program]: /bin/sh with none.
		rest := args
		if name == "setarch" {
			if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
				return false, true // --list, --help
			}
			rest = rest[1:]
		}
		for len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
			if rest[0] == "--" {
				rest = rest[1:]
				break
			}
			rest = rest[1:]
		}
		return len(rest) == 0 || r.argv(rest, depth+1), true
	case "bwrap":
		return r.bwrap(args, depth), true
	}
	return false, false
}

// ipythonInteractive: IPython and its kin run a script (a .py or .ipy
// file), -c code or -m a module and exit, unless -i; else the REPL.
func ipythonInteractive(args []string) bool {
	if slices.Contains(args, "-i") || slices.Contains(args, "--i") {
		return true
	}
	for _, a := range args {
		switch {
		case a == "-c" || a == "-m" || strings.HasPrefix(a, "-c=") || strings.HasPrefix(a, "-m="):
			return false
		case stdinArg(a):
			return true
		case !strings.HasPrefix(a, "-") && (strings.HasSuffix(a, ".py") || strings.HasSuffix(a, ".ipy")):
			return false
		}
	}
	return true
}

// gnuplotInteractive: gnuplot reads commands from the terminal (! and
// system run a shell) with no script, or given - ; a script or -e
// commands run and exit.
func gnuplotInteractive(args []string) bool {
	if slices.Contains(args, "-") {
		return true
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-e" || a == "--e" || a == "-c" || a == "--c":
			return false
		case strings.HasPrefix(a, "-"):
		default:
			return false
		}
	}
	return true
}

// m4Interactive: m4 reads its input from the terminal when given no
// file (or -), and syscmd runs a shell.
func m4Interactive(args []string) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-":
			return true
		case a == "--":
			return i+1 >= len(args) || slices.Contains(args[i+1:], "-")
		case strings.HasPrefix(a, "--"):
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if clusterTakesNext(a, "DUIoLlFRtd") {
				i++
			}
		default:
			return false
		}
	}
	return true
}

// hgEdits: Mercurial (and Sapling) open the editor (HGEDITOR, ui.editor,
// VISUAL, EDITOR, vi) on commit without a message (-m, -l), with -e,
// and on histedit, commit -i or a tag with -e.
func (r *ireader) hgEdits(args []string, depth int) bool {
	ops := subcommandOperands(args, "RmlIXudr", "--repository", "-R", "--cwd", "--config", "--message", "--logfile",
		"--include", "--exclude", "--user", "--date", "--rev")
	if len(ops) == 0 {
		return false
	}
	edit := hasArg(args, "-e", "--edit", "-i", "--interactive")
	msg := slices.ContainsFunc(args, func(a string) bool {
		return a == "--message" || a == "--logfile" || strings.HasPrefix(a, "--message=") || strings.HasPrefix(a, "--logfile=") ||
			strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a, "ml")
	})
	switch ops[0] {
	case "commit", "ci", "com", "comm", "commi", "amend", "metaedit", "fold", "uncommit", "qnew", "qrefresh", "shelve":
		if ops[0] == "shelve" || ops[0] == "qrefresh" || ops[0] == "uncommit" {
			if !edit {
				return false
			}
		} else if msg && !edit {
			return false
		}
	case "histedit", "record", "crecord", "split":
	case "tag", "backout", "graft", "rebase":
		if !edit {
			return false
		}
	default:
		return false
	}
	return r.editorIn(depth, "vi", "HGEDITOR", "config:ui.editor")
}

// svnEdits: svn commit (and propedit, and what commits to a URL)
// without -m, -F or --message opens the editor (SVN_EDITOR, editor-cmd,
// VISUAL, EDITOR).
func (r *ireader) svnEdits(args []string, depth int) bool {
	ops := subcommandOperands(args, "mFrcdl", "--message", "--file", "--revision", "--change", "--depth", "--username",
		"--password", "--config-dir", "--config-option", "--with-revprop", "--targets", "--encoding", "--editor-cmd")
	if len(ops) == 0 {
		return false
	}
	if slices.ContainsFunc(args, func(a string) bool {
		return a == "--message" || a == "--file" || strings.HasPrefix(a, "--message=") || strings.HasPrefix(a, "--file=") ||
			strings.HasPrefix(a, "-m") || strings.HasPrefix(a, "-F")
	}) && ops[0] != "propedit" && ops[0] != "pedit" && ops[0] != "pe" {
		return false
	}
	url := slices.ContainsFunc(ops[1:], func(o string) bool { return strings.Contains(o, "://") || strings.HasPrefix(o, "^/") })
	switch ops[0] {
	case "commit", "ci", "propedit", "pedit", "pe":
	case "copy", "cp", "move", "mv", "rename", "ren", "mkdir", "delete", "del", "remove", "rm", "import":
		if !url {
			return false
		}
	default:
		return false
	}
	return r.editorIn(depth, "vi", "SVN_EDITOR", "config:editor-cmd")
}

// jjEdits: Jujutsu opens the editor (JJ_EDITOR, ui.editor, VISUAL,
// EDITOR) on describe and commit without a message, and its diff editor
// on split, diffedit and squash -i.
func (r *ireader) jjEdits(args []string, depth int) bool {
	ops := subcommandOperands(args, "mrRo", "--message", "--revision", "--repository", "--config", "--config-toml", "--at-operation")
	if len(ops) == 0 {
		return false
	}
	msg := hasArg(args, "-m", "--message", "--stdin", "--no-edit") ||
		slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-m") && !strings.HasPrefix(a, "--") })
	switch ops[0] {
	case "describe", "desc", "commit", "ci":
		if msg && !hasArg(args, "--edit") {
			return false
		}
	case "split", "diffedit", "resolve":
	case "squash", "restore":
		if !hasArg(args, "-i", "--interactive", "--tool") {
			return false
		}
	default:
		return false
	}
	return r.editorIn(depth, "vi", "JJ_EDITOR", "config:ui.editor")
}

// glabEdits: glab mr create and issue create prompt for a description
// in the editor (GLAB_EDITOR, its config's, VISUAL, EDITOR, nano) unless
// given one (-d, --description, --fill) or --web.
func (r *ireader) glabEdits(args []string, depth int) bool {
	ops := subcommandOperands(args, "RtdabmlsF", "--repo", "--title", "--description", "--assignee", "--label", "--milestone",
		"--source-branch", "--target-branch", "--reviewer")
	if len(ops) < 2 || r.piped {
		return false
	}
	switch ops[0] + " " + ops[1] {
	case "mr create", "mr new", "issue create", "issue new", "mr note", "issue note":
	default:
		return false
	}
	if hasArg(args, "-d", "--description", "-f", "--fill", "-w", "--web", "-m", "--message") {
		return false
	}
	return r.toolRuns([]string{"GLAB_EDITOR", "config:editor"}, nil, "nano", false, true, depth)
}

// bwrapArity are bubblewrap's options and how many words each takes.
var bwrapArity = map[string]int{"--args": 1, "--argv0": 1, "--uid": 1, "--gid": 1, "--hostname": 1, "--chdir": 1,
	"--setenv": 2, "--unsetenv": 1, "--lock-file": 1, "--sync-fd": 1, "--bind": 2, "--bind-try": 2, "--dev-bind": 2,
	"--dev-bind-try": 2, "--ro-bind": 2, "--ro-bind-try": 2, "--remount-ro": 1, "--exec-label": 1, "--file-label": 1,
	"--proc": 1, "--dev": 1, "--tmpfs": 1, "--mqueue": 1, "--dir": 1, "--file": 2, "--bind-data": 2, "--ro-bind-data": 2,
	"--symlink": 2, "--seccomp": 1, "--add-seccomp-fd": 1, "--block-fd": 1, "--userns-block-fd": 1, "--info-fd": 1,
	"--json-status-fd": 1, "--cap-add": 1, "--cap-drop": 1, "--perms": 1, "--size": 1, "--chmod": 2, "--userns": 1,
	"--userns2": 1, "--pidns": 1, "--overlay-src": 1, "--overlay": 3, "--tmp-overlay": 1, "--ro-overlay": 1}

// bwrap reads bubblewrap's options, each by its arity, to the command.
func (r *ireader) bwrap(args []string, depth int) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return i+1 < len(args) && r.argv(args[i+1:], depth+1)
		case strings.HasPrefix(a, "--"):
			i += bwrapArity[a]
		default:
			return r.argv(args[i:], depth+1)
		}
	}
	return false
}

// vimShell reports whether an Ex command vim runs at its start (-c's,
// +'s) runs a shell, or a command of its line, that reads the terminal:
// :sh, :terminal, :!bash, :r !python3, silent ones too. In batch mode
// (-es) it runs before the -c that quits; nvim --headless gives it no
// terminal.
func (r *ireader) vimShell(args []string, depth int) bool {
	if slices.Contains(args, "--headless") {
		return false
	}
	for i, a := range args {
		c, ok := "", false
		switch {
		case a == "-c" && i+1 < len(args):
			c, ok = args[i+1], true
		case strings.HasPrefix(a, "+"):
			c, ok = a[1:], true
		}
		if ok && r.vimShellCommand(c, depth) {
			return true
		}
	}
	return false
}

func (r *ireader) vimShellCommand(c string, depth int) bool {
	for _, p := range strings.Split(c, "|") {
		p = strings.TrimLeft(strings.TrimSpace(p), ": ")
		for _, pre := range []string{"silent!", "silent", "sil!", "sil"} {
			if rest, ok := strings.CutPrefix(p, pre); ok && (rest == "" || rest[0] == ' ' || rest[0] == '!') {
				p = strings.TrimLeft(rest, " ")
				break
			}
		}
		w := strings.TrimRight(strings.Fields(p + " x")[0], "!")
		switch {
		case strings.HasPrefix(p, "!"):
			return r.line(p[1:], depth+1, nil)
		case w == "sh" || w == "she" || w == "shel" || w == "shell" || len(w) >= 3 && strings.HasPrefix("terminal", w):
			return true
		case w == "r" || w == "re" || w == "rea" || w == "read":
			if _, cmd, ok := strings.Cut(p, "!"); ok {
				return r.line(cmd, depth+1, nil)
			}
		}
	}
	return false
}

// procSubstOf is a word's process substitution when it is the whole
// word (<(cmd), >(cmd)).
func procSubstOf(w *syntax.Word) (*syntax.ProcSubst, bool) {
	if w == nil || len(w.Parts) != 1 {
		return nil, false
	}
	p, ok := w.Parts[0].(*syntax.ProcSubst)
	return p, ok
}

// procIn reads a process substitution a command's input is redirected
// from (bash < <(cat)): its commands, their input the shell's (term),
// their output the pipe; passes: what they write is what is typed.
func (r *ireader) procIn(ps *syntax.ProcSubst, term bool, depth int, pos []string) (interactive, passes bool) {
	saved, out := r.env, r.piped
	r.piped = true
	defer func() { r.piped = out; r.leave(saved) }()
	for _, s := range ps.Stmts {
		i, p := r.stmt(s, term, depth+1, pos)
		if i {
			return true, false
		}
		passes = passes || p
	}
	return false, passes
}

// emacsReadsInput: emacs loading or running a script that is the
// terminal, or batch code that reads its input and evaluates or runs
// it ((eval (read)), (shell-command (read-string …))).
func emacsReadsInput(args []string) bool {
	for i, a := range args {
		k, v, eq := strings.Cut(a, "=")
		if k == "--script" || k == "-script" || k == "-l" || k == "--load" || k == "-load" {
			if !eq && i+1 < len(args) {
				v = args[i+1]
			}
			if stdinArg(v) {
				return true
			}
		}
		if k == "--eval" || k == "-eval" || k == "--execute" || k == "-execute" {
			if !eq && i+1 < len(args) {
				v = args[i+1]
			}
			l := strings.ToLower(v)
			if strings.Contains(l, "(read") && (strings.Contains(l, "eval") || strings.Contains(l, "shell") ||
				strings.Contains(l, "process")) {
				return true
			}
		}
	}
	return false
}

// ghPrompts: gh's commands that prompt, their input and output the
// terminal, and offer the editor (GH_EDITOR, its config's, VISUAL,
// EDITOR, nano): pr review with no review type, pr merge with no merge
// method ("Edit commit message"), release create with no notes, pr and
// issue edit with no flag, gist edit; known is false for any other.
func (r *ireader) ghPrompts(args []string, sub func(...string) bool, depth int) (interactive, known bool) {
	var quiet []string
	switch {
	case sub("pr", "review"):
		quiet = []string{"-a", "--approve", "-r", "--request-changes", "-c", "--comment", "-b", "--body", "-F", "--body-file"}
	case sub("pr", "merge"):
		quiet = []string{"-m", "--merge", "-r", "--rebase", "-s", "--squash"}
	case sub("release", "create"), sub("release", "new"):
		quiet = []string{"-n", "--notes", "-F", "--notes-file", "--generate-notes", "--notes-from-tag"}
	case sub("pr", "edit"), sub("issue", "edit"):
		if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-") }) {
			return false, true
		}
	case sub("gist", "edit"):
		quiet = []string{"-a", "--add", "-r", "--remove", "-d", "--desc"}
	default:
		return false, false
	}
	if r.piped || r.envIs("GH_PROMPT_DISABLED", "1", "true") || slices.ContainsFunc(args, func(a string) bool {
		k, _, _ := strings.Cut(a, "=")
		return slices.Contains(quiet, k) || len(k) == 2 && k[0] == '-' && slices.ContainsFunc(quiet, func(q string) bool {
			return len(q) == 2 && strings.HasPrefix(a, q)
		})
	}) {
		return false, true
	}
	// Clusters of short flags (-sd): any quiet letter among them.
	for _, a := range args {
		if len(a) > 2 && a[0] == '-' && a[1] != '-' {
			for _, q := range quiet {
				if len(q) == 2 && strings.ContainsRune(a[1:], rune(q[1])) {
					return false, true
				}
			}
		}
	}
	return r.toolRuns([]string{"GH_EDITOR", "config:editor"}, nil, "nano", false, true, depth), true
}

// gitAliasDefined reads git config setting an alias (git config
// alias.x '!bash', git config --global alias.ci commit) as if the alias
// ran here: a later git x, on this line or another, runs it.
func (r *ireader) gitAliasDefined(args []string, depth int) bool {
	if slices.ContainsFunc(args, func(a string) bool {
		return strings.HasPrefix(a, "--get") || strings.HasPrefix(a, "--unset") || a == "-l" || a == "--list" ||
			a == "--remove-section" || a == "--rename-section"
	}) {
		return false
	}
	ops := subcommandOperands(args, "f", "--file", "--blob", "--type", "--default", "--comment", "--value")
	if len(ops) > 0 && ops[0] == "set" {
		ops = ops[1:]
	}
	if len(ops) < 2 || !strings.HasPrefix(strings.ToLower(ops[0]), "alias.") {
		return false
	}
	v := ops[1]
	if rest, ok := strings.CutPrefix(v, "!"); ok {
		return r.line(rest, depth+1, nil)
	}
	words := strings.Fields(v)
	return len(words) > 0 && r.argv(append([]string{"git"}, words...), depth+1)
}
