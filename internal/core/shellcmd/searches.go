package shellcmd

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// MaxSearchRoots bounds the directories SearchRoots returns.
const MaxSearchRoots = 16

// SearchRoots returns the directories a command line reads everything
// under, as the line spells them: what a recursive search prints is the
// lines (rg, ag, ack, grep -r), the files (find … -exec cat, find … |
// xargs cat) or the names (tree, ls -R) of whatever is under them — a
// clone's included. A search given no directory reads the working
// directory: ".". A line the parser refuses, or one too long to read,
// gives "." if it names such a program at all (fail closed). Sorted,
// distinct, at most MaxSearchRoots.
func SearchRoots(line string) []string {
	var s searches
	s.line(line, 0)
	return s.result()
}

// ArgvSearchRoots is SearchRoots of an argument vector (["rg", "TODO"],
// ["bash", "-lc", "rg TODO"]).
func ArgvSearchRoots(argv []string) []string {
	var s searches
	s.argv(argv, 0)
	return s.result()
}

// argv reads an argument vector: a shell's -c script as a line.
func (s *searches) argv(argv []string, depth int) {
	if len(argv) >= 3 && systemShell(argv[0]) && shellScriptOption(argv[1]) {
		s.line(argv[2], depth+1)
		return
	}
	s.call(argv, false)
}

type searches struct {
	roots []string
}

func (s *searches) add(r string) {
	switch {
	case r == nonLiteral || r == "{}":
		r = "." // a directory the line does not show: fail closed
	case r == "":
		return
	}
	if len(s.roots) >= MaxSearchRoots || slices.Contains(s.roots, r) {
		return
	}
	s.roots = append(s.roots, r)
}

func (s *searches) result() []string {
	out := slices.Clone(s.roots)
	slices.Sort(out)
	return out
}

// recursiveReaders read every file under their directory operands.
var recursiveReaders = map[string]bool{"rg": true, "ag": true, "ack": true, "ack-grep": true, "pt": true, "sift": true, "tree": true}

// searchValueOptions are the options of searches that take the next
// word as their value (rg -t go, grep -A 3): not an operand.
var searchValueOptions = map[string][]string{
	"rg": {"-t", "-T", "-g", "-A", "-B", "-C", "-m", "-j", "-M", "-E", "-r", "-e", "-f", "--type", "--type-not", "--glob", "--iglob",
		"--max-count", "--threads", "--max-columns", "--encoding", "--replace", "--context", "--after-context", "--before-context", "--regexp", "--file", "--max-depth", "-d"},
	"ag":   {"-G", "-A", "-B", "-C", "-m", "--ignore", "--ignore-dir", "--file-search-regex", "--depth"},
	"ack":  {"-A", "-B", "-C", "-m", "--type", "--ignore-dir", "--match"},
	"grep": {"-A", "-B", "-C", "-m", "-e", "-f", "-d", "-D", "--include", "--exclude", "--exclude-dir", "--regexp", "--file", "--context", "--max-count"},
	"tree": {"-L", "-P", "-I", "-o", "--filelimit"},
}

// greps read every file under their operands with -r, -R, --recursive or
// -d recurse.
var greps = map[string]bool{"grep": true, "egrep": true, "fgrep": true, "ggrep": true, "ugrep": true}

func (s *searches) line(line string, depth int) {
	if depth > maxDepth || len(line) > MaxParsed {
		s.words(line)
		return
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		s.words(line)
		return
	}
	// find's files reach a reader through xargs anywhere on the line, a
	// loop or parallel it is piped to, or a command substitution.
	fed := false
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CallExpr:
			if len(n.Args) > 0 {
				if w, ok := literal(n.Args[0]); ok && (ProgramName(w) == "xargs" || ProgramName(w) == "parallel") {
					fed = true
				}
			}
		case *syntax.CmdSubst:
			fed = true
		case *syntax.BinaryCmd:
			if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
				switch n.Y.Cmd.(type) {
				case *syntax.WhileClause, *syntax.ForClause, *syntax.Block, *syntax.Subshell:
					fed = true
				}
			}
		}
		return true
	})
	syntax.Walk(f, func(n syntax.Node) bool {
		if c, ok := n.(*syntax.CallExpr); ok {
			argv := make([]string, 0, len(c.Args))
			for _, a := range c.Args {
				w, ok := literal(a)
				if !ok {
					w = nonLiteral
				}
				argv = append(argv, w)
			}
			if len(argv) >= 3 && systemShell(argv[0]) && shellScriptOption(argv[1]) && argv[2] != nonLiteral {
				s.line(argv[2], depth+1)
				return true
			}
			s.call(argv, fed)
		}
		return true
	})
}

// nonLiteral stands for a word holding an expansion ("$PWD", $(pwd)): as a
// search's directory, the working directory or anywhere — read as ".".
const nonLiteral = "\x00expansion"

// words is the reading of a line the parser refused or could not read:
// a search program named anywhere searches the working directory.
func (s *searches) words(line string) {
	for _, w := range strings.FieldsFunc(line, func(r rune) bool { return strings.ContainsRune(" \t\r\n;&|()<>`$\"'{}\\", r) }) {
		if n := ProgramName(w); recursiveReaders[n] || greps[n] || n == "find" || n == "fd" || n == "fdfind" {
			s.add(".")
			return
		}
	}
}

// call adds the directories one simple command reads everything under.
func (s *searches) call(argv []string, xargs bool) {
	i := programAt(argv)
	// find is a runner of what -exec names to programAt; its roots are
	// its own.
	if j := slices.IndexFunc(argv, func(a string) bool { return !strings.Contains(a, "=") }); j >= 0 && ProgramName(argv[j]) == "find" {
		i = j
	}
	if i < 0 {
		return
	}
	name, rest := ProgramName(argv[i]), argv[i+1:]
	switch {
	case recursiveReaders[name]:
		s.operands(rest, name != "tree", searchValueOptions[name])
	case name == "fd" || name == "fdfind":
		for _, r := range fdRoots(argv[i:]) {
			s.add(r)
		}
	case greps[name] && recursive(rest, searchValueOptions["grep"]):
		s.operands(rest, true, searchValueOptions["grep"])
	case (name == "get-childitem" || name == "gci" || name == "ls" || name == "dir") && func() bool {
		roots, ok := childItemRoots(name, rest)
		for _, r := range roots {
			if ok {
				s.add(r)
			}
		}
		return ok
	}():
	case name == "ls" && slices.ContainsFunc(rest, func(a string) bool {
		return a == "--recursive" || strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "R")
	}):
		s.operands(rest, false, nil)
	case name == "find" && (xargs || slices.ContainsFunc(rest, func(a string) bool { return strings.HasPrefix(a, "-exec") || strings.HasPrefix(a, "-ok") })):
		n := 0
		for _, a := range rest {
			if strings.HasPrefix(a, "-") || a == "(" || a == "!" {
				break
			}
			s.add(a)
			n++
		}
		if n == 0 {
			s.add(".")
		}
	}
}

// recursive reports whether a grep's options make it read directories;
// an option's value (-e -error) is not an option.
func recursive(args []string, values []string) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return false
		case a == "--recursive" || a == "--dereference-recursive" || a == "--directories=recurse":
			return true
		case (a == "-d" || a == "--directories") && i+1 < len(args) && args[i+1] == "recurse":
			return true
		case slices.Contains(values, a):
			i++
		case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a, "rR"):
			return true
		}
	}
	return false
}

// operands adds a search's directory operands — its words that are not
// options, past the pattern when it takes one (not with -e or -f, which
// give it) and the values of the options values lists — or "." when it
// names none. An unknown option's value is taken for an operand
// (over-approximation: at worst a directory more).
func (s *searches) operands(args []string, pattern bool, values []string) {
	if slices.ContainsFunc(args, func(a string) bool {
		return a == "-e" || a == "-f" || strings.HasPrefix(a, "--regexp") || strings.HasPrefix(a, "--file")
	}) {
		pattern = false
	}
	n, dashes := 0, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !dashes && a == "--" {
			dashes = true
			continue
		}
		if !dashes && strings.HasPrefix(a, "-") {
			if slices.Contains(values, a) {
				i++ // its value: no operand
			}
			continue
		}
		if pattern {
			pattern = false
			continue
		}
		s.add(a)
		n++
	}
	if n == 0 {
		s.add(".")
	}
}

// childItemRoots are the directories PowerShell's Get-ChildItem (gci,
// and on Windows ls and dir) lists everything under — with -Recurse (any
// abbreviation, its aliases -r and -s) or -Depth — and whether it
// recurses: the values of -Path and -LiteralPath (comma lists) and its
// first positional word (the second is -Filter); "." for none. For ls and
// dir, which are also Unix programs, only -r (ls -ltr is bash's reverse
// order, not this) and dir's -s count, besides the long spellings; ls
// -R is the Unix search's.
func childItemRoots(name string, args []string) ([]string, bool) {
	cmdlet := name == "get-childitem" || name == "gci"
	abbrev := func(p, full string, least int) bool { return len(p) >= least && strings.HasPrefix(full, p) }
	recurse := false
	var roots []string
	positional := 0
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) < 2 || a[0] != '-' || a[1] == '-' {
			if positional == 0 {
				roots = append(roots, strings.Split(a, ",")...)
			}
			positional++
			continue
		}
		p, _, _ := strings.Cut(strings.ToLower(a[1:]), ":") // -Recurse:$true
		switch {
		case p == "r" && (cmdlet || name == "ls" || name == "dir"), p == "s" && (cmdlet || name == "dir"),
			abbrev(p, "recurse", 3), abbrev(p, "depth", 3):
			recurse = true
			if abbrev(p, "depth", 3) {
				i++
			}
		case abbrev(p, "path", 2) || abbrev(p, "literalpath", 2) || p == "lp" || abbrev(p, "pspath", 3):
			if i+1 < len(args) {
				roots = append(roots, strings.Split(args[i+1], ",")...)
			}
			i++
		case abbrev(p, "filter", 2) || abbrev(p, "include", 2) || abbrev(p, "exclude", 2) || abbrev(p, "attributes", 2):
			i++
		}
	}
	if len(roots) == 0 {
		roots = []string{"."}
	}
	return roots, recurse
}
