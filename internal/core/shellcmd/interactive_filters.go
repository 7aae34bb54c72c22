package shellcmd

// Programs that pass the terminal on (a copier piped to a shell) or run
// what it gives them line by line (awk's system($0), sed's e).

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// awkRunsInput: an awk program reading the terminal (no data file) that
// runs commands it builds at run time (system($0), $0 | getline, print
// | "sh"), or one from a program file it cannot see.
func (r *ireader) awkRunsInput(args []string, depth int) bool {
	prog, progSet, data := "", false, 0
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-f" || a == "--file" || a == "-E" || a == "--exec":
			progSet = true
			prog = "system($0)" // a program file: not seen (fail closed)
			i++
		case a == "-e" || a == "--source":
			if i+1 < len(args) {
				prog += "\n" + args[i+1]
			}
			progSet = true
			i++
		case awkValueOptions[a]:
			i++
		case a == "--":
		case strings.HasPrefix(a, "-") && a != "-":
		case !progSet:
			prog, progSet = a, true
		case !stdinArg(a) && !strings.Contains(a, "="):
			data++
		}
	}
	cmds, built := awkCommands(prog)
	for _, c := range cmds {
		// system("bash"), "python3" | getline: its input is awk's.
		if !c.printed && r.line(c.text, depth+1, nil) {
			return true
		}
	}
	if data > 0 {
		return false
	}
	if built {
		return true
	}
	for _, c := range cmds {
		if f := strings.Fields(c.text); c.printed && len(f) > 0 && runsWords([]string{f[0]}, []bool{true}) {
			return true // print … | "sh": what it prints, from what is typed
		}
	}
	return false
}

// sedRunsInput: a sed script reading the terminal (no file) that runs
// what it reads: GNU sed's e command, or s///e.
func sedRunsInput(args []string) bool {
	var scripts []string
	files, explicit := 0, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-e" || a == "--expression":
			if i+1 < len(args) {
				scripts = append(scripts, args[i+1])
			}
			explicit = true
			i++
		case a == "-f" || a == "--file":
			scripts = append(scripts, "e")
			explicit = true
			i++
		case a == "-l" || a == "--line-length":
			i++
		case strings.HasPrefix(a, "--expression="):
			scripts = append(scripts, a[len("--expression="):])
			explicit = true
		case strings.HasPrefix(a, "-") && a != "-":
		case !explicit && len(scripts) == 0:
			scripts = append(scripts, a)
		case !stdinArg(a):
			files++
		}
	}
	if files > 0 {
		return false
	}
	return slices.ContainsFunc(scripts, sedExecutes)
}

// sedExecutes reports whether a sed script holds an e command, or an s
// command with the e flag (read roughly: fail closed).
func sedExecutes(s string) bool {
	cmdStart := true
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == ';' || ch == '\n' || ch == '{' || ch == '}' || ch == '!':
			cmdStart = true
		case ch == ' ' || ch == '\t':
		case cmdStart && (ch >= '0' && ch <= '9' || ch == '$' || ch == ',' || ch == '~'):
		case cmdStart && (ch == '/' || ch == '\\'):
			// An address /re/: past it.
			d := ch
			if ch == '\\' && i+1 < len(s) {
				i++
				d = s[i]
			}
			for i++; i < len(s) && s[i] != d; i++ {
				if s[i] == '\\' {
					i++
				}
			}
			if i+1 < len(s) && (s[i+1] == 'I' || s[i+1] == 'M') {
				i++
			}
		case cmdStart && ch == 'e':
			return true
		case cmdStart && (ch == 's' || ch == 'y') && i+1 < len(s):
			d := s[i+1]
			i += 2
			for n := 0; i < len(s) && n < 2; i++ {
				if s[i] == '\\' {
					i++
				} else if s[i] == d {
					n++
				}
			}
			for ; i < len(s) && s[i] != ';' && s[i] != '\n' && s[i] != '}'; i++ {
				if s[i] == 'e' && ch == 's' {
					return true
				}
				if s[i] == 'w' {
					break // a file name follows
				}
			}
			i--
			cmdStart = false
		case cmdStart && (ch == 'a' || ch == 'i' || ch == 'c' || ch == 'r' || ch == 'w' || ch == 'R' || ch == 'W' || ch == 'b' || ch == 't' || ch == 'T' || ch == ':'):
			// Text or a name to the end of the line.
			for i < len(s) && s[i] != '\n' {
				i++
			}
			cmdStart = true
		default:
			cmdStart = false
		}
	}
	return false
}

// passes reports whether a command reading the terminal writes what it
// reads: a filter with no file to read (cat, cat -, head, tail, tee,
// dd, tr, cut, sort, awk 1, sed ”, grep ”, base64 -d, jq -r, xargs
// echo), run directly or under a wrapper (stdbuf -o0 cat).
func (r *ireader) passes(argv []string, depth int) bool {
	if len(argv) == 0 || depth > maxDepth || !r.spend(len(argv)) {
		return r.over
	}
	defer r.leave(r.env) // sh -c 'export X=1; cat' binds for itself
	name := ProgramName(argv[0])
	args := argv[1:]
	if name == "sudo" || name == "doas" {
		name, args = "sudo", args[:len(args):len(args)]
	}
	spec, ok := wrapperSpecs[name]
	switch {
	case name == "sudo":
		spec, ok = wrapSpec{values: "ugCDhprtTU", longValues: []string{"--user", "--group", "--host", "--prompt", "--chdir"}}, true
	case name == "busybox" || name == "toybox":
		return r.passes(args, depth+1)
	case shells[name] || name == "eval":
		// sh -c 'cat', eval cat: the script's commands.
		script, ok := "", name == "eval"
		if ok {
			script = strings.Join(args, " ")
		}
		for i, a := range args {
			if !ok && strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "c") && i+1 < len(args) {
				script, ok = args[i+1], true
			}
		}
		return ok && r.linePasses(script, depth+1)
	}
	if ok && name != "command" {
		if cmd := wrappedCommand(spec, args); cmd != nil {
			return r.passes(cmd, depth+1)
		}
		return false
	}
	f, ok := filters[name]
	if !ok {
		return false
	}
	switch name {
	case "tee", "tr":
		return true
	case "perl", "ruby":
		// Only -n or -p reads the input for the code.
		if !slices.ContainsFunc(args, func(a string) bool {
			return len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsAny(strings.SplitN(a, "e", 2)[0], "np")
		}) {
			return false
		}
	case "jq":
		if slices.ContainsFunc(args, func(a string) bool {
			return a == "--null-input" || len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.Contains(a, "n")
		}) {
			return false
		}
	case "awk", "gawk", "mawk", "nawk":
		for _, a := range args {
			if !strings.HasPrefix(a, "-") {
				if awkBeginOnly(a) {
					return false
				}
				break
			}
		}
	}
	if name == "dd" {
		for _, a := range args {
			if v, ok := strings.CutPrefix(a, "if="); ok {
				return stdinArg(v)
			}
		}
		return true
	}
	pattern := f.pattern
	var files []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
		case f.patternOpts != "" && len(a) >= 2 && a[0] == '-' && a[1] != '-' && strings.ContainsAny(a[1:2], f.patternOpts),
			slices.Contains([]string{"--regexp", "--expression", "--file", "--source"}, strings.SplitN(a, "=", 2)[0]):
			pattern = false
			if !strings.Contains(a, "=") && len(a) == 2 || strings.HasPrefix(a, "--") && !strings.Contains(a, "=") {
				i++
			}
		case len(a) == 2 && a[0] == '-' && strings.Contains(f.values, a[1:]):
			i++
		case strings.HasPrefix(a, "--") && slices.Contains(f.longValues, a):
			i++
		case strings.HasPrefix(a, "-") && a != "-":
		case pattern:
			pattern = false
		default:
			files = append(files, a)
		}
	}
	return len(files) == 0 || slices.ContainsFunc(files, stdinArg)
}

// linePasses reports whether a shell line reading the terminal writes
// what it reads (sh -c 'cat').
func (r *ireader) linePasses(line string, depth int) bool {
	if depth > maxDepth || len(line) > MaxParsed || !r.spend(len(line)/2+1) {
		return true
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		return false
	}
	for _, st := range f.Stmts {
		if i, p := r.stmt(st, true, depth, nil); i || p {
			return true
		}
	}
	return false
}

// awkBeginOnly reports whether an awk program is BEGIN blocks only, which
// read no input (unless getline does).
func awkBeginOnly(prog string) bool {
	p := strings.TrimSpace(prog)
	if strings.Contains(p, "getline") {
		return false
	}
	for p != "" {
		rest, ok := strings.CutPrefix(p, "BEGIN")
		if !ok {
			return false
		}
		rest = strings.TrimSpace(rest)
		if !strings.HasPrefix(rest, "{") {
			return false
		}
		depth, end := 0, -1
		for k := 0; k < len(rest) && end < 0; k++ {
			switch rest[k] {
			case '{':
				depth++
			case '}':
				if depth--; depth == 0 {
					end = k
				}
			case '"':
				_, e := awkString(rest, k)
				k = e - 1
			}
		}
		if end < 0 {
			return false
		}
		p = strings.TrimSpace(strings.TrimLeft(rest[end+1:], "; \t\n"))
	}
	return true
}

// A filter reads its standard input when it names no file: values are
// its short options that take the next word, pattern whether its first
// operand is a pattern or a script (unless one of patternOpts gives it).
type filter struct {
	values      string
	longValues  []string
	pattern     bool
	patternOpts string
}

var filters = map[string]filter{
	"cat": {}, "tac": {values: "s"}, "tee": {}, "head": {values: "nc"}, "tail": {values: "ncsp"}, "dd": {},
	"tr": {pattern: true}, "cut": {values: "bcdf"}, "sort": {values: "kotST"}, "uniq": {values: "fsw"}, "nl": {values: "bdfhilnsvw"},
	"rev": {}, "paste": {values: "d"}, "fold": {values: "w"}, "fmt": {values: "wpg"}, "expand": {values: "t"},
	"unexpand": {values: "t"}, "iconv": {values: "ft"}, "col": {}, "colrm": {}, "base64": {values: "w"}, "base32": {values: "w"},
	"basenc": {values: "w"}, "xxd": {values: "clsgon"}, "pv": {values: "LsBNiwHAEdR"}, "buffer": {}, "mbuffer": {values: "bsmiofP"},
	"ts": {}, "cat-v": {}, "strings": {values: "ntn"}, "ul": {}, "stdbuf": {}, "unix2dos": {}, "dos2unix": {},
	"grep": {values: "mABCD", pattern: true, patternOpts: "ef"}, "egrep": {values: "mABCD", pattern: true, patternOpts: "ef"},
	"fgrep": {values: "mABCD", pattern: true, patternOpts: "ef"}, "sed": {values: "l", pattern: true, patternOpts: "ef"},
	"gsed": {values: "l", pattern: true, patternOpts: "ef"}, "awk": {values: "vF", pattern: true, patternOpts: "fe"},
	"gawk": {values: "vF", pattern: true, patternOpts: "fe"}, "mawk": {values: "vF", pattern: true, patternOpts: "f"},
	"nawk": {values: "vF", pattern: true, patternOpts: "f"},
	"jq":   {values: "fL", longValues: []string{"--arg", "--argjson", "--slurpfile", "--rawfile", "--indent"}, pattern: true},
	"perl": {values: "IMl", pattern: true, patternOpts: "e"}, "ruby": {values: "IrC", pattern: true, patternOpts: "e"},
	"xargs": {values: "EIdLnPs"}, "openssl": {}, "gzip": {}, "gunzip": {}, "zcat": {}, "xz": {}, "unxz": {}, "bzip2": {}, "zstd": {},
}
