package shellcmd

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// input is what a line gives a command on its standard input: a
// here-document's body, a here-string, what echo, printf or cat of a
// here-document pipes to it (literal), or another command's output
// (not literal).
type input struct {
	text    string
	literal bool
}

// redirected is the input a statement's here-document or here-string
// gives its command, nil when it has none (a file's, < path, is named
// by the line and followed as a file).
func redirected(st *syntax.Stmt) *input {
	var in *input
	for _, r := range st.Redirs {
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			text, ok := hdocBody(r.Hdoc)
			in = &input{text: text, literal: ok}
		case syntax.WordHdoc:
			text, ok := literal(r.Word)
			in = &input{text: text, literal: ok}
		case syntax.RdrIn:
			in = nil
			if r.Word != nil && len(r.Word.Parts) == 1 {
				if _, ok := r.Word.Parts[0].(*syntax.ProcSubst); ok {
					// bash < <(echo …): another command's output.
					in = &input{}
				}
			}
		}
	}
	return in
}

// hdocBody is a here-document's body when it holds no expansion (its
// delimiter quoted, or no $ nor ` in it), as written: a backslash in a
// here-document is not an unquoted word's escape.
func hdocBody(w *syntax.Word) (string, bool) {
	if w == nil {
		return "", true
	}
	var b strings.Builder
	for _, part := range w.Parts {
		l, ok := part.(*syntax.Lit)
		if !ok {
			return "", false
		}
		b.WriteString(l.Value)
	}
	return b.String(), true
}

// piped is what the left side of a pipe gives the command on its right:
// the text echo or printf prints of literal words, or cat of its
// here-document or here-string; anything else is another program's
// output, not literal.
func piped(st *syntax.Stmt) *input {
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) == 0 {
		return &input{}
	}
	argv := make([]string, len(call.Args))
	for i, w := range call.Args {
		a, ok := literal(w)
		if !ok {
			return &input{}
		}
		argv[i] = a
	}
	switch ProgramName(argv[0]) {
	case "echo", "printf":
		args := argv[1:]
		for len(args) > 0 && strings.HasPrefix(args[0], "-") && len(args[0]) > 1 {
			args = args[1:]
		}
		text := strings.Join(args, " ")
		// A printf format's conversions and escapes, and echo's (dash's
		// echo reads them unasked), make text the words do not show:
		// only a \n is read, as a new line.
		if rest := strings.ReplaceAll(text, `\n`, ""); strings.Contains(rest, `\`) || ProgramName(argv[0]) == "printf" && strings.Contains(rest, "%") {
			return &input{}
		}
		return &input{text: strings.ReplaceAll(text, `\n`, "\n"), literal: true}
	case "cat":
		if in := redirected(st); in != nil && len(argv) == 1 {
			return in
		}
		if slices.ContainsFunc(argv[1:], stdinPath) {
			// cat /dev/stdin <<'EOF' | bash: its own input, passed on.
			if in := redirected(st); in != nil {
				return in
			}
			return &input{}
		}
		if len(argv) > 1 && !slices.ContainsFunc(argv[1:], func(a string) bool { return a == "-" || strings.HasPrefix(a, "-") }) {
			// cat setup.sh | bash is bash < setup.sh: the line names the
			// file, which is followed as a file (a fetched one taints).
			return nil
		}
	}
	return &input{}
}

// loginShell reports whether a command runs a shell on its standard
// input with no command of its own: su or runuser (no -c), sudo or doas
// -s or -i, script with no -c.
func loginShell(name string, args []string) bool {
	noCommand := !slices.ContainsFunc(args, func(a string) bool { return a == "-c" || a == "--command" || strings.HasPrefix(a, "--command=") })
	switch name {
	case "su", "runuser":
		return noCommand
	case "script":
		n := 0
		for _, a := range args {
			if !strings.HasPrefix(a, "-") {
				n++
			}
		}
		return noCommand && n <= 1 // script [-q] [file]
	case "sudo", "doas":
		shell := false
		for i := 0; i < len(args); i++ {
			switch a := args[i]; {
			case sudoValueOptions[a]:
				i++
			case a == "--shell" || a == "--login":
				shell = true
			case strings.HasPrefix(a, "--"):
			case strings.HasPrefix(a, "-"):
				// A cluster: -su root, -Hiu root.
				for k := 1; k < len(a); k++ {
					if a[k] == 's' || a[k] == 'i' {
						shell = true
					}
					if strings.IndexByte("ugCDhprtUT", a[k]) >= 0 {
						if k == len(a)-1 {
							i++
						}
						break
					}
				}
			default:
				return false // a command of its own
			}
		}
		return shell
	}
	return false
}

// sudoValueOptions are sudo's options that take the next word as their
// value.
var sudoValueOptions = map[string]bool{"--user": true, "--group": true, "--host": true, "--prompt": true, "--role": true,
	"--type": true, "--chdir": true, "--close-from": true, "--other-user": true, "--command-timeout": true}

// stdinScript adds what a shell or an interpreter runs when the script
// is its standard input (bash <<'SH' … SH, python3 - <<'PY' … PY, echo
// "curl …" | sh): a shell's script is read as a line; an interpreter's
// code is checked as its -c code is (a URL, a connection opened). Input
// that is not literal — a here-document with expansions, another
// program's output — runs code no reading of the line can name: Unknown.
func (c *collector) stdinScript(name string, argv []string, in *input, depth int) {
	switch {
	case shells[name] && shellReadsStdin(argv[1:]):
		if !in.literal {
			c.add(Unknown)
			return
		}
		c.line(in.text, depth+1)
	case interpreter(name) && interpreterReadsStdin(name, argv[1:]):
		switch {
		case !in.literal:
			c.add(Unknown)
		case hasURL(in.text) || opensConnection(in.text):
			c.add(ScriptURL)
		}
	}
}

// shellReadsStdin reports whether a shell given args reads its script on
// its standard input: no -c, and -s, a lone -, or no script file named.
func shellReadsStdin(args []string) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-" || a == "-s":
			return true
		case a == "--":
			return i+1 == len(args)
		case a == "-o" || a == "+o" || a == "--rcfile" || a == "--init-file" || a == "-O" || a == "+O":
			i++
		case strings.HasPrefix(a, "--"):
		case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+"):
			if strings.Contains(a, "c") {
				return false // -c: the script is the option's value
			}
			if strings.Contains(a, "s") {
				return true
			}
		default:
			return stdinPath(a) // a script file, unless it is the input
		}
	}
	return true
}

// stdinPath reports whether a script file named is the standard input or
// another of the line's descriptors (python3 /dev/stdin <<'PY', bash
// /dev/fd/3 3<<'SH').
func stdinPath(a string) bool {
	return a == "/dev/stdin" || strings.HasPrefix(a, "/dev/fd/") || strings.HasPrefix(a, "/proc/self/fd/")
}

// interpreterValueOptions are interpreters' options that take the next
// word as their value (python -W, -X; node -r, --require, --import).
var interpreterValueOptions = map[string]bool{"-W": true, "-X": true, "-r": true, "--require": true,
	"--import": true, "--loader": true, "--input-type": true, "--conditions": true}

// interpreterReadsStdin reports whether an interpreter given args reads
// its code on its standard input: a lone -, or no code option (-c, -e,
// -p, -m, their clusters: perl -ne) and no script named.
func interpreterReadsStdin(name string, args []string) bool {
	values := "MrXWIx" // letters taking a value
	if name == "ruby" || name == "node" || name == "nodejs" {
		values += "C" // ruby -C DIR, node -C CONDITION (perl's -C takes none apart)
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-":
			return true
		case a == "--":
			return i+1 < len(args) && args[i+1] == "-" || i+1 == len(args)
		case interpreterValueOptions[a]:
			i++
		case a == "--eval" || a == "--print" || strings.EqualFold(a, "-command") || strings.EqualFold(a, "-file"):
			return false
		case strings.HasPrefix(a, "--"):
		case strings.HasPrefix(a, "-"):
			// A cluster's letters up to one taking a value (perl -ne,
			// python -Xdev, perl -MLWP::Simple, ruby -ropen-uri).
			for k := 1; k < len(a); k++ {
				if strings.IndexByte("cemp", a[k]) >= 0 {
					return false // code in the option's value, or a module
				}
				if strings.IndexByte(values, a[k]) >= 0 {
					if k == len(a)-1 {
						i++ // its value is the next word
					}
					break
				}
			}
		default:
			return stdinPath(a) // a script file, unless it is the input
		}
	}
	return true
}
