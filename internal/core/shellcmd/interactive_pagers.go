package shellcmd

// Programs that reach a command line through a pager or an editor: less
// and more (!cmd), a text browser, vi (:!cmd) — run directly, at a
// pipe's end, or by another program (git's pager and editor, man's,
// systemctl's, kubectl edit, gh's body prompt). Codex pages through cat
// (codexEnv) and sets no editor, so what counts is what the line changes
// and what opens an editor by itself.

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// ttyReader reads a command whose standard input is not the terminal
// (… | less, git log | less, echo | GIT_PAGER=less git log): what reads
// keys from the terminal itself, a pager or a text browser, or a program
// that pages through one, run directly or by a wrapper or a -c script.
func (r *ireader) ttyReader(words []*syntax.Word, depth int, pos []string) bool {
	if name, ok := literal(words[0]); ok && r.env == nil && !mayReadTTY(ProgramName(name)) && !strings.Contains(name, "{") {
		return false
	}
	if name, ok := literal(words[0]); ok && ProgramName(name) == "vipe" {
		return r.editorIn(depth, "vi", "EDITOR", "VISUAL") // its editor reads /dev/tty, whatever its output
	}
	if r.piped {
		return false
	}
	argv, known := r.words(words, pos)
	if !known[0] {
		return r.expandedProgram(words[0], argv, depth, pos, r.pipedArgv)
	}
	return r.pipedArgv(argv, depth)
}

// mayReadTTY reports whether a program, its standard input a pipe, may
// read keys from the terminal or run one that does.
func mayReadTTY(name string) bool {
	if _, paged := pagedPrograms[name]; paged || shells[name] || wrappers[name] || systemdTools[name] {
		return true
	}
	switch programAlias(name) {
	case "eval", "less", "zless", "bzless", "xzless", "zstdless", "lzless", "more", "zmore", "most", "pg", "lynx",
		"links", "links2", "elinks", "w3m", "tig", "vi", "vim", "nvim", "view", "git", "man", "pager", "vipe",
		"sensible-pager", "busybox", "toybox":
		return true
	}
	_, ok := wrapperSpecs[name]
	return ok
}

// pipedArgv is argv for a program whose standard input is not the
// terminal.
func (r *ireader) pipedArgv(argv []string, depth int) bool {
	name, args, decided, result := r.program(argv, depth)
	if decided {
		return result
	}
	saved := r.env
	defer r.leave(saved)
	if r.pages(name, args, false, depth) {
		return true
	}
	switch {
	case name == "busybox" || name == "toybox":
		return len(args) > 0 && r.pipedArgv(args, depth+1)
	case shells[name]:
		// sh -c 'git log | less': the script, its input the pipe; a
		// script that is the terminal (sh /dev/tty) reads it.
		for i, a := range args {
			if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "c") && i+1 < len(args) {
				return r.parse(args[i+1], false, depth+1, nil)
			}
		}
		return slices.ContainsFunc(args, ttyPath)
	case name == "eval":
		return r.parse(strings.Join(args, " "), false, depth+1, nil)
	case name == "env":
		if k := r.setEnv(args, true); k < len(args) {
			return r.pipedArgv(args[k:], depth+1)
		}
		return false
	case name == "sudo" || name == "doas":
		if cmd := r.sudoEnv(args); len(cmd) > 0 {
			return r.pipedArgv(cmd, depth+1)
		}
		return false
	case name == "xargs":
		// Its command's input is /dev/null, or the terminal with -o.
		if cmd, tty, _ := xargsCommandOf(args); len(cmd) > 0 {
			cmd = append(slices.Clip(cmd), xargsItem) // what it read, its arguments
			if tty {
				return r.argv(cmd, depth+1)
			}
			return r.pipedArgv(cmd, depth+1)
		}
		return false
	}
	if name == "command" && slices.ContainsFunc(args, func(a string) bool {
		return strings.HasPrefix(a, "-") && strings.ContainsAny(a, "vV")
	}) {
		return false // command -v less: where it is
	}
	if spec, ok := wrapperSpecs[name]; ok {
		if cmd := wrappedCommand(spec, args); cmd != nil {
			return r.pipedArgv(cmd, depth+1)
		}
	}
	return false
}

// xargsCommandOf is the command xargs runs (nil: echo), whether -o gives
// it the terminal, and whether an option before it says its arguments
// come from a file (-a, --arg-file) rather than its standard input.
func xargsCommandOf(args []string) (cmd []string, tty, fromFile bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--arg-file" || strings.HasPrefix(a, "--arg-file=") || strings.HasPrefix(a, "-a") {
			fromFile = true
		}
		switch {
		case a == "-o" || a == "--open-tty":
			tty = true
		case a == "--":
			return args[i+1:], tty, fromFile
		case strings.HasPrefix(a, "--"):
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if strings.Contains(a[1:], "o") && !strings.ContainsAny(a[1:], xargsValues) {
				tty = true
			}
			if len(a) == 2 && strings.Contains(xargsValues, a[1:]) {
				i++
			}
		default:
			return args[i:], tty, fromFile
		}
	}
	return nil, tty, fromFile
}

// pagedPrograms page what they print through the first pager their
// variables name (else the last word, their default; "" none) when it is
// the terminal. Codex's PAGER=cat stops the chain of each (codexEnv); a
// line that sets an earlier one, or unsets PAGER, does not.
var pagedPrograms = map[string][]string{
	"man":     {"MANPAGER", "PAGER", "less"},
	"psql":    {"PSQL_PAGER", "PAGER", "less"},
	"aws":     {"AWS_PAGER", "PAGER", "less"},
	"bat":     {"BAT_PAGER", "PAGER", "less"},
	"batcat":  {"BAT_PAGER", "PAGER", "less"},
	"hg":      {"HGPAGER", "PAGER", "less"},
	"perldoc": {"PERLDOC_PAGER", "MANPAGER", "PAGER", "less"},
	"delta":   {"DELTA_PAGER", "BAT_PAGER", "PAGER", "less"},
	// gh: GH_PAGER, its config's pager (unseen), PAGER; none by default.
	"gh": {"GH_PAGER", "config:pager", "PAGER", ""},
}

// systemdTools page through SYSTEMD_PAGER or PAGER (else less), unless
// --no-pager, or in secure mode, where less runs with LESSSECURE=1.
var systemdTools = map[string]bool{"journalctl": true, "systemctl": true, "loginctl": true, "busctl": true,
	"coredumpctl": true, "networkctl": true, "resolvectl": true, "hostnamectl": true, "timedatectl": true,
	"localectl": true, "bootctl": true, "homectl": true, "userdbctl": true, "portablectl": true, "systemd-analyze": true,
	"systemd-cgls": true, "systemd-delta": true, "machinectl": true, "oomctl": true}

// pages reports whether a program reads keys from the terminal while its
// standard output is the terminal, whatever its input (term: whether
// that is the terminal too): a pager or a text browser shown a file or a
// pipe's end (less reads /dev/tty), or a program paging through one
// (GIT_PAGER=less git log, man -P less ls).
func (r *ireader) pages(name string, args []string, term bool, depth int) bool {
	if r.piped {
		return false // it prints and exits, or pages nothing
	}
	switch name {
	case "less", "zless", "bzless", "xzless", "zstdless", "lzless", "pager":
		// less with the terminal as its input and no file names none
		// and exits; LESSSECURE=1 takes away !, |, v and :e.
		if term && !slices.ContainsFunc(args, func(a string) bool { return !strings.HasPrefix(a, "-") || a == "-" }) {
			return false
		}
		return !r.envIs("LESSSECURE", "1") || r.lookup("LESSSECURE_ALLOW").vals != nil
	case "more", "zmore", "most", "pg":
		return !term || slices.ContainsFunc(args, func(a string) bool { return !strings.HasPrefix(a, "-") })
	case "lynx", "links", "links2", "elinks", "w3m":
		// A text browser: ! runs a shell, and what is typed is fetched
		// unhooked; -dump and -source print and exit.
		return !slices.ContainsFunc(args, func(a string) bool {
			a = strings.TrimLeft(a, "-")
			return strings.HasPrefix(a, "dump") || a == "source" || a == "crawl" || a == "mime_header" || a == "remote"
		})
	case "tig":
		return true
	case "sensible-pager":
		return r.toolRuns([]string{"PAGER"}, nil, "pager", false, false, depth)
	case "vi", "vim", "nvim", "view":
		// vim - reads the text from its input, then keys from the
		// terminal.
		return !term && slices.Contains(args, "-") && vimInteractive(name, args)
	case "git":
		return r.gitPages(args, depth)
	case "man":
		for i, a := range args {
			switch {
			case a == "-H" || strings.HasPrefix(a, "--html"):
				return true // a browser, perhaps a text one
			case a == "-P" || a == "--pager":
				return i+1 < len(args) && r.toolChannel(args[i+1], false, depth)
			case strings.HasPrefix(a, "--pager="):
				return r.toolChannel(a[len("--pager="):], false, depth)
			case strings.HasPrefix(a, "-P"):
				return r.toolChannel(a[2:], false, depth)
			}
		}
	case "aws":
		if slices.Contains(args, "--no-cli-pager") {
			return false
		}
	case "bat", "batcat":
		if slices.ContainsFunc(args, func(a string) bool {
			return a == "-P" || a == "--no-paging" || a == "--paging=never" || a == "-pp"
		}) {
			return false
		}
	}
	if systemdTools[name] {
		return r.systemdPages(args, depth)
	}
	if chain, ok := pagedPrograms[name]; ok {
		return r.toolRuns(chain[:len(chain)-1], nil, chain[len(chain)-1], name == "gh", false, depth)
	}
	return r.setPager(name, depth)
}

// setPager reports whether the line set PAGER, or the program's own
// NAME_PAGER, to a pager that reads the terminal, for a program whose
// pager this reading does not know: many read it.
func (r *ireader) setPager(name string, depth int) bool {
	if _, filter := filters[name]; !r.pagerBound || filter || name == "echo" || name == "printf" || name == "true" {
		return false
	}
	own := strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	for _, v := range []string{"PAGER", own + "_PAGER", own + "PAGER"} {
		for _, p := range r.lookup(v).vals {
			if p != "cat" && p != "" && r.toolChannel(p, false, depth) {
				return true
			}
		}
	}
	return false
}

// systemdPages: journalctl, systemctl and the others page through
// SYSTEMD_PAGER, PAGER or less unless --no-pager; in secure mode
// (SYSTEMD_PAGERSECURE true, or unset and run by sudo) less runs with
// LESSSECURE=1 and no other pager runs.
func (r *ireader) systemdPages(args []string, depth int) bool {
	if slices.Contains(args, "--no-pager") {
		return false
	}
	e := r.lookup("SYSTEMD_PAGERSECURE")
	secure := true
	for _, v := range e.vals {
		switch strings.ToLower(v) {
		case "1", "true", "yes", "on", "y", "t":
		default:
			secure = false
		}
	}
	if e.unset || e.host {
		secure = secure && r.envIs(sudoMark, "1")
	}
	return !secure && r.toolRuns([]string{"SYSTEMD_PAGER", "PAGER"}, nil, "less", true, false, depth)
}

// toolRuns reports whether the pager or the editor a program starts
// reads the terminal: the first of vars that is set (config:KEY is the
// program's configuration, given by cfg or else unseen: anything), else
// def. An empty value is no pager when emptyNone, else unset.
func (r *ireader) toolRuns(vars []string, cfg func(string) (string, bool), def string, emptyNone, editor bool, depth int) bool {
	for _, v := range vars {
		var e envVals
		if key, ok := strings.CutPrefix(v, "config:"); ok {
			c, given := "", false
			if cfg != nil {
				c, given = cfg(key)
			}
			if !given {
				return true // unseen: any program, a terminal one too
			}
			e.vals = []string{c}
		} else {
			e = r.lookup(v)
		}
		unset := e.unset || e.host
		for _, x := range e.vals {
			switch {
			case x == "" && emptyNone:
			case x == "":
				unset = true
			case r.toolChannel(x, editor, depth):
				return true
			}
		}
		if !unset {
			return false
		}
	}
	return def != "" && r.toolChannel(def, editor, depth)
}

// quietTools are the programs a pager or an editor may be that read
// nothing typed as it runs (GIT_EDITOR=true, GIT_SEQUENCE_EDITOR="sed
// -i …", GIT_PAGER=cat, code --wait): anything else, or one of these
// the reading finds interactive, is taken to read the terminal.
var quietTools = map[string]bool{":": true, "true": true, "false": true, "echo": true, "printf": true, "touch": true,
	"cp": true, "mv": true, "sed": true, "gsed": true, "awk": true, "gawk": true, "mawk": true, "perl": true, "python": true,
	"python3": true, "node": true, "ruby": true, "sh": true, "bash": true, "zsh": true, "dash": true, "grep": true,
	"vi": true, "vim": true, "nvim": true, "ex": true, "code": true, "codium": true, "cursor": true, "subl": true,
	"zed": true, "gedit": true, "kate": true, "mate": true, "xed": true, "test": true}

// toolChannel reports whether a pager or an editor a program runs —
// a shell line, given a file (editor) or a pipe (pager) — reads what
// is typed.
func (r *ireader) toolChannel(cmd string, editor bool, depth int) bool {
	switch cmd {
	case "cat", ":", "true":
		return false
	case unknownWord:
		return true
	}
	if depth > maxDepth || len(cmd) > MaxParsed || !r.spend(len(cmd)/2+1) {
		r.over = true
		return true
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(cmd), "")
	if err != nil {
		return true
	}
	quiet := true
	syntax.Walk(f, func(n syntax.Node) bool {
		c, ok := n.(*syntax.CallExpr)
		if !ok || !quiet {
			return quiet
		}
		if len(c.Args) == 0 {
			return true
		}
		w, ok := literal(c.Args[0])
		name := ProgramName(w)
		_, filter := filters[name]
		quiet = ok && (quietTools[name] || filter ||
			name == "less" && slices.ContainsFunc(c.Assigns, func(a *syntax.Assign) bool {
				v, lit := "", a.Value != nil
				if lit {
					v, lit = literal(a.Value)
				}
				return a.Name != nil && a.Name.Value == "LESSSECURE" && lit && v == "1"
			}) || name == "less" && r.envIs("LESSSECURE", "1"))
		return quiet
	})
	if !quiet {
		return true
	}
	if editor {
		return r.parse(cmd+" /tmp/tg-edit", true, depth+1, nil)
	}
	return r.parse(cmd, false, depth+1, nil)
}

// editorIn reports whether the editor a program starts, its variables
// read in order (else def), reads the terminal.
func (r *ireader) editorIn(depth int, def string, vars ...string) bool {
	return r.toolRuns(vars, nil, def, false, true, depth)
}
