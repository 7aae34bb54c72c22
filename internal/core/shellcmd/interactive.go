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
// — bash, python3, psql app_dev, ssh build-box, vim, rails c — or one
// that reads keys from the terminal while it writes to it, whatever its
// input: a pager or a text browser (less f, git log | less, lynx URL),
// whose !cmd runs a command. A host that lets the agent type into a
// running command (Codex's write_stdin) then has a channel no hook sees:
// each line typed runs with no tool call.
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
// a program named by $SHELL, ${X:-bash}, $(command -v bash) or a variable
// the line set (X=python3; $X), and one named only through an expansion
// the reading cannot resolve ($PY, "$REPL": any program, fail closed).
//
// A program that opens a pager or an editor itself is one too. The
// reading follows the environment Codex's unified exec gives every
// command (codexEnv: PAGER=cat, GIT_PAGER=cat, no editor) and what the
// line changes of it (assignments, export, unset, env, sudo's reset):
// git log and man ls page through cat, GIT_PAGER=less git log does not;
// git commit with no message, git rebase -i, git merge and kubectl edit
// open the user's editor (core.editor, EDITOR: unseen) unless the line
// gives them one that reads nothing typed (GIT_EDITOR=true).
//
// A program whose standard input the line gives it — a pipe from another
// program (echo x | python3, curl … | sh), a here-document, a file (psql
// < dump.sql) — or that is given its code or script (python3 -c …, bash
// build.sh, ssh host uptime) reads nothing typed, and is not interactive;
// nor is a command run in the background or detached (tmux new -d, screen
// -dm), or asked only for its version or help, or an editor in batch mode
// that quits, or a pager whose output is not the terminal (less f | head),
// or less in secure mode (LESSSECURE=1). A line the parser refuses is not
// taken for one; a line whose reading exceeds the work budget (maxWork,
// maxDepth) is (fail closed).
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
	// piped: the standard output of the command being read is not the
	// terminal (a pipe, a file, a substitution): a pager or a browser
	// then prints and exits, and git's merge edits nothing.
	piped bool
	// env: the bindings the line has made, nearest first (nil: none;
	// codexEnv); envOver is set past maxBindings.
	env     *binding
	envOver bool
	// pagerBound: the line bound a variable naming a pager.
	pagerBound bool
	// maybe: the statement being read may not run (a branch, a loop's
	// body, what follows && or ||): what it assigns is added to what a
	// variable may hold, not put in its place.
	maybe bool
	// aliases: the aliases the line defined (alias l=less).
	aliases map[string]string
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
	return r.parse(line, true, depth, pos)
}

// parse reads a shell line whose standard input is the terminal (term)
// or not.
func (r *ireader) parse(line string, term bool, depth int, pos []string) bool {
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
		if i, _ := r.stmt(st, term, depth, pos); i || r.over {
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
// standard input is the terminal (term) or what the line feeds it. Its
// standard output is the terminal unless r.piped.
func (r *ireader) stmt(st *syntax.Stmt, term bool, depth int, pos []string) (interactive, passes bool) {
	if st != nil && st.Cmd == nil && !r.over {
		// $(< /dev/tty): what is typed, as the substitution's output.
		for _, rd := range st.Redirs {
			if w, ok := literal(rd.Word); ok && rd.Op == syntax.RdrIn && (w == "/dev/tty" || term && ttyPath(w)) {
				return false, true
			}
		}
	}
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
		// a pipe. Without job control it stays in the terminal's
		// foreground group: a pager there still reads /dev/tty.
		term = false
	}
	outer := term
	// What each descriptor the statement redirects reads or writes: the
	// terminal or not (3< f, 3<<EOF), for a later <&3 or >&3.
	fds := map[string]bool{"0": term, "1": !r.piped, "2": true}
	for _, rd := range st.Redirs {
		n := "0"
		if rd.N != nil {
			n = rd.N.Value
		}
		in := true
		ps, _ := procSubstOf(rd.Word)
		switch rd.Op {
		case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		default:
			// < <(cat), < "$(bash)": the substitution's commands, the
			// shell's input theirs; one that copies the terminal makes
			// the redirect read it.
			if ps != nil && rd.Op == syntax.RdrIn && ps.Op == syntax.CmdIn {
				i, p := r.procIn(ps, outer, depth, pos)
				if i {
					return true, false
				}
				fds[n] = p
				if n == "0" {
					term = p
				}
				continue
			}
			if rd.Word != nil && r.substs([]*syntax.Word{rd.Word}, outer, depth, pos) {
				return true, false
			}
		}
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
		case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll, syntax.AppAll,
			syntax.RdrAllClob, syntax.AppAllClob:
			// > f, &> f: the terminal only when f names it.
			w, ok := literal(rd.Word)
			if rd.N == nil {
				n = "1"
			}
			if rd.Op == syntax.RdrAll || rd.Op == syntax.AppAll || rd.Op == syntax.RdrAllClob || rd.Op == syntax.AppAllClob {
				fds["2"] = !ok || ttyPath(w)
			}
			in = !ok || ttyPath(w)
		case syntax.DplOut:
			// >&2, 1>&3: what that descriptor is; one the line does not
			// show may be the terminal (fail closed); >&- closes it.
			w, ok := literal(rd.Word)
			if rd.N == nil {
				n = "1"
			}
			v, seen := fds[w]
			in = !ok || w != "-" && (!seen || v)
		default:
			continue
		}
		fds[n] = in
		if n == "0" {
			term = in
		}
	}
	piped, maybe := r.piped, r.maybe
	r.piped = !fds["1"]
	defer func() { r.piped, r.maybe = piped, maybe }()
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
	// branch reads statements that may not run.
	branch := func(list []*syntax.Stmt) (bool, bool) {
		r.maybe = true
		return stmts(list)
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
			r.assigns(c.Assigns, false, pos)
			return false, false
		}
		// X=1 cmd: X is in cmd's environment, not the shell's after it.
		saved := r.env
		for _, a := range c.Assigns {
			if a.Name != nil && !a.Naked {
				v := unknownWord
				if a.Array == nil && a.Index == nil && !a.Append {
					v = r.wordValue(a.Value, pos)
				}
				r.bind(&binding{name: a.Name.Value, vals: []string{v}})
			}
		}
		defer r.unbind(saved, r.env)
		if !term {
			// What reads the terminal though its input is not: a pager
			// (… | less), a program paging through one.
			return r.ttyReader(c.Args, depth, pos), false
		}
		return r.call(c.Args, depth, pos)
	case *syntax.DeclClause:
		var words []*syntax.Word
		for _, a := range c.Args {
			if a.Value != nil {
				words = append(words, a.Value)
			}
		}
		if r.substs(words, outer, depth, pos) {
			return true, false
		}
		r.declare(c, pos)
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.Pipe, syntax.PipeAll:
			// Each side is a subshell; the left one writes to the pipe.
			saved := r.env
			r.piped = true
			i, p := r.stmt(c.X, term, depth+1, pos)
			r.piped = !fds["1"]
			r.leave(saved)
			if i {
				return true, false
			}
			defer r.leave(r.env)
			return r.stmt(c.Y, p, depth+1, pos)
		default:
			i, p := r.stmt(c.X, term, depth+1, pos)
			if i {
				return true, false
			}
			r.maybe = true
			i2, p2 := r.stmt(c.Y, term, depth+1, pos)
			return i2, p || p2
		}
	case *syntax.Block:
		return stmts(c.Stmts)
	case *syntax.Subshell:
		defer r.leave(r.env)
		return stmts(c.Stmts)
	case *syntax.IfClause:
		for ic := c; ic != nil; ic = ic.Else {
			if i, _ := stmts(ic.Cond); i {
				return true, false
			}
			if i, _ := branch(ic.Then); i {
				return true, false
			}
		}
	case *syntax.WhileClause:
		i, p := stmts(c.Cond)
		if i {
			return true, false
		}
		i2, p2 := branch(c.Do)
		return i2, p || p2
	case *syntax.ForClause:
		if c.Select && term {
			r.typed = true // select reads a line typed into REPLY
		}
		// for x in a b; do …: x holds one of the words in the body.
		if it, ok := c.Loop.(*syntax.WordIter); ok && it.Name != nil && it.InPos.IsValid() {
			if r.substs(it.Items, outer, depth, pos) {
				return true, false
			}
			b := &binding{name: it.Name.Value, local: true}
			for _, w := range it.Items {
				b.vals = append(b.vals, r.wordValue(w, pos))
			}
			r.bind(b)
		}
		return branch(c.Do)
	case *syntax.CaseClause:
		for _, item := range c.Items {
			if i, _ := branch(item.Stmts); i {
				return true, false
			}
		}
	case *syntax.TimeClause:
		return r.stmt(c.Stmt, term, depth+1, pos)
	case *syntax.FuncDecl:
		// Its body runs when it is called, which the line may do: read
		// it as if it ran here.
		r.maybe = true
		return r.stmt(c.Body, term, depth+1, pos)
	}
	return false, false
}

// substs reads the command and process substitutions in a command's
// words, whose standard input is the shell's (term): one that starts an
// interactive program is one; one that copies the terminal (sh -c
// "$(cat)") makes what is typed a word of the command. A substitution
// is a subshell, its output the command's words.
func (r *ireader) substs(words []*syntax.Word, term bool, depth int, pos []string) bool {
	found := false
	for _, w := range words {
		syntax.Walk(w, func(n syntax.Node) bool {
			if found || r.over {
				return false
			}
			var list []*syntax.Stmt
			piped, in := true, term
			switch n := n.(type) {
			case *syntax.CmdSubst:
				list = n.Stmts
			case *syntax.ProcSubst:
				list = n.Stmts
				piped = n.Op == syntax.CmdIn // <(cmd) writes to a pipe; >(cmd) to the terminal
				in = in && piped             // >(cmd) reads a pipe
			default:
				return true
			}
			saved, out := r.env, r.piped
			r.piped = piped || out
			for _, s := range list {
				i, p := r.stmt(s, in, depth+1, pos)
				if i {
					found = true
					break
				}
				r.typed = r.typed || p
			}
			r.piped = out
			r.leave(saved)
			return false
		})
	}
	return found || r.over
}

// unknownWord stands for a word the reading cannot resolve: an expansion
// of nothing it knows, which names no program.
const unknownWord = "$_TG_UNKNOWN"

// words are a command's words as the reading tells them: literal, or an
// expansion it resolves to one value (known), or unknownWord.
func (r *ireader) words(words []*syntax.Word, pos []string) (argv []string, known []bool) {
	argv = make([]string, len(words))
	known = make([]bool, len(words))
	for i, w := range words {
		a, ok := literal(w)
		if !ok {
			a, ok = ansiLiteral(w)
		}
		if !ok {
			if vs, all := r.expansion(w, pos); all && len(vs) == 1 {
				a, ok = vs[0], true
			}
		}
		if !ok {
			a = unknownWord
		}
		argv[i], known[i] = a, ok
	}
	for i := len(words) - 1; i >= 0; i-- {
		// {less,} notes.txt, sudo {bash,}: the words the brace
		// expansion gives.
		if known[i] && strings.ContainsRune(argv[i], '{') {
			if b, ok := braceWords(words[i]); ok && (len(b) != 1 || b[0] != argv[i]) {
				argv = append(append(slices.Clip(argv[:i]), b...), argv[i+1:]...)
				known = append(append(slices.Clip(known[:i]), slices.Repeat([]bool{true}, len(b))...), known[i+1:]...)
			}
		}
	}
	return argv, known
}

// call reads a simple command whose standard input is the terminal.
func (r *ireader) call(words []*syntax.Word, depth int, pos []string) (bool, bool) {
	argv, known := r.words(words, pos)
	unknown := slices.Contains(known, false)
	if r.typed && unknown && runsWords(argv, known) {
		// eval "$l", sh -c "$l", $l after read l: what is typed runs.
		return true, false
	}
	if !known[0] {
		return r.expandedProgram(words[0], argv, depth, pos, r.argv), r.typed && unknown
	}
	if i, ok := r.expandAlias(argv, depth); ok {
		return i, false
	}
	switch ProgramName(argv[0]) {
	case "alias":
		r.alias(argv[1:])
		return false, false
	case "unalias":
		for _, a := range argv[1:] {
			delete(r.aliases, a)
		}
		return false, false
	case "read", "mapfile", "readarray":
		if !slices.ContainsFunc(argv[1:], func(a string) bool { return strings.HasPrefix(a, "-u") }) {
			r.typed = true
		}
		return false, false
	case "unset":
		r.unsetVars(argv[1:])
		return false, false
	}
	return r.argv(argv, depth), r.passes(argv, depth) || r.typed && unknown
}

// expandedProgram reads a command whose program is named through an
// expansion: each value the line may have given it (X=python3; $X -i);
// a path whose last part is literal ($VENV/bin/python); the words after
// an unquoted expansion that may be empty ($NOTHING python3). Unresolved
// and given no argument ($PY, "$REPL", ${TOOL}), it could be any program
// that reads the terminal: fail closed.
func (r *ireader) expandedProgram(w *syntax.Word, argv []string, depth int, pos []string, run func([]string, int) bool) bool {
	if p := soleParam(w); p != nil && p.Param != nil && "$"+p.Param.Value == unknownWord {
		// A word an outer reading could not tell, read again as a line
		// (eval "$(ssh-agent -s)", sh -c "$1"): code it does not see,
		// not a program named.
		return false
	}
	vals, all := r.expansion(w, pos)
	quoted := len(w.Parts) != 1 || !isParamOrSubst(w.Parts[0])
	for _, v := range vals {
		cmd := []string{v}
		if !quoted {
			cmd = strings.Fields(v)
		}
		if v == unknownWord || len(cmd) == 0 || v == "" {
			all = false // unknown; or empty, the next word the program
			continue
		}
		if run(append(cmd, argv[1:]...), depth) {
			return true
		}
	}
	if len(vals) > 0 && all {
		return false
	}
	if name, ok := pathTail(w); ok {
		return run(append([]string{name}, argv[1:]...), depth)
	}
	if len(argv) == 1 {
		return true
	}
	if !quoted && argv[1] != unknownWord {
		return run(argv[1:], depth)
	}
	return false
}

// isParamOrSubst reports whether a word part is an unquoted expansion,
// which splits into words and may be none.
func isParamOrSubst(p syntax.WordPart) bool {
	switch p.(type) {
	case *syntax.ParamExp, *syntax.CmdSubst:
		return true
	}
	return false
}

// pathTail is the program a path names when its last part is literal
// though a directory before it is an expansion: $VENV/bin/python is a
// python, "$(git rev-parse --show-toplevel)/scripts/ci.sh" a script.
func pathTail(w *syntax.Word) (string, bool) {
	var b strings.Builder
	var add func(parts []syntax.WordPart)
	add = func(parts []syntax.WordPart) {
		for _, part := range parts {
			switch p := part.(type) {
			case *syntax.Lit:
				b.WriteString(unescape(p.Value))
			case *syntax.SglQuoted:
				b.WriteString(p.Value)
			case *syntax.DblQuoted:
				add(p.Parts)
			default:
				b.WriteByte(0) // an expansion
			}
		}
	}
	add(w.Parts)
	s := b.String()
	i := strings.LastIndexByte(s, '/')
	if i < 0 || i == len(s)-1 || strings.IndexByte(s[i:], 0) >= 0 {
		return "", false
	}
	return s[i+1:], true
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

// expansion is what a word that is not literal may stand for; all is
// false when it may also stand for what the reading cannot tell. A
// variable the line assigned holds what the line gave it (X=python3;
// $X); else resolveWord tells.
func (r *ireader) expansion(w *syntax.Word, pos []string) (vals []string, all bool) {
	if p := soleParam(w); p != nil && p.Param != nil && !p.Excl && !p.Length && !p.Width &&
		p.Index == nil && p.Slice == nil && p.Repl == nil && p.Names == 0 {
		def, hasDef := "", false
		if p.Exp != nil {
			switch p.Exp.Op {
			case syntax.DefaultUnset, syntax.DefaultUnsetOrNull:
				if p.Exp.Word != nil {
					def, hasDef = literal(p.Exp.Word)
				}
			default:
				return nil, false
			}
		}
		if e := r.lookupVar(p.Param.Value, true); len(e.vals) > 0 || e.unset && !e.host {
			all = !e.host
			for _, v := range e.vals {
				if v == "" {
					e.unset = true
					continue
				}
				all = all && v != unknownWord
				vals = append(vals, v)
			}
			if e.unset {
				if hasDef && def != "" {
					vals = append(vals, def)
				} else {
					vals = append(vals, "")
				}
			}
			if v, ok := resolveWord(w, pos); ok && e.host {
				vals = append(vals, v) // $SHELL, $EDITOR when the line may not have set it
			}
			return vals, all
		}
	}
	if v, ok := resolveWord(w, pos); ok {
		return []string{v}, true
	}
	return nil, false
}

// soleParam is a word's parameter expansion when it is the whole word
// ($X, "${X}", ${X:-y}), else nil.
func soleParam(w *syntax.Word) *syntax.ParamExp {
	parts := w.Parts
	if len(parts) == 1 {
		if dq, ok := parts[0].(*syntax.DblQuoted); ok && len(dq.Parts) == 1 {
			parts = dq.Parts
		}
	}
	if len(parts) != 1 {
		return nil
	}
	p, _ := parts[0].(*syntax.ParamExp)
	return p
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
	"bun": true, "iex": true, "elixir": true, "erl": true, "mongosh": true, "sqlplus": true, "tig": true, "lazygit": true}

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

// program is what argv and pipedArgv read first: the program argv runs
// and its arguments, or decided with the result when that settles it —
// nothing to run, the reading's budget spent, a program named through an
// expansion the reading cannot resolve (sudo "$X", exec $CMD: given no
// argument, it may be any that reads the terminal, fail closed), a
// program asked for its version or its help (info).
func (r *ireader) program(argv []string, depth int) (name string, args []string, decided, result bool) {
	if len(argv) == 0 || r.over {
		return "", nil, true, r.over
	}
	if depth > maxDepth || !r.spend(len(argv)) {
		r.over = true
		return "", nil, true, true
	}
	if argv[0] == unknownWord {
		return "", nil, true, len(argv) == 1
	}
	name, args = programAlias(ProgramName(argv[0])), argv[1:]
	if info(name, args) {
		return "", nil, true, false
	}
	return name, args, false, false
}

// argv reports whether a program run with the terminal as its standard
// input reads what it does from it.
func (r *ireader) argv(argv []string, depth int) bool {
	name, args, decided, result := r.program(argv, depth)
	if decided {
		return result
	}
	// What a program's reading binds (env's NAME=value, sudo's reset, a
	// -c script's assignments) is its own; eval's and source's are the
	// shell's.
	saved, maybe := r.env, r.maybe
	r.maybe = false
	defer func() {
		if name != "eval" && name != "source" && name != "." && name != "command" && name != "builtin" {
			r.leave(saved)
		}
		r.maybe = maybe
	}()
	if r.pages(name, args, true, depth) {
		return true
	}
	if name == "env" {
		r.setEnv(args, true)
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
	if i, known := r.moreProgram(name, args, depth); known {
		return i
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
		if name != "mawk" && name != "nawk" && slices.ContainsFunc(args, func(a string) bool { return a == "-D" || a == "--debug" }) {
			return true // gawk's debugger: eval 'system(…)' at its prompt
		}
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
		// vim -es -c '!bash' -c q: the shell reads the terminal.
		return r.vimShell(args, depth) || vimInteractive(name, args)
	case "emacs":
		if emacsReadsInput(args) {
			return true
		}
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
	case "iex", "groovysh", "mysqlsh", "valkey-cli", "redis-cli", "jshell", "ghci", "irb", "pry",
		"utop", "psysh", "tinker", "bc", "dc", "ed", "gdb", "lldb", "erl", "sqlite3", "sqlite", "duckdb",
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
		return r.git(argv, depth)
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
				return r.editorIn(depth, "vi", "VISUAL", "EDITOR")
			case a == "-l" || a == "-r" || a == "-i" && len(args) == 1:
				return false
			case !strings.HasPrefix(a, "-") || a == "-":
				return stdinArg(a)
			}
		}
		return true
	case "visudo":
		// sudoers in an editor; -c only checks it.
		return !slices.ContainsFunc(args, func(a string) bool { return a == "-c" || a == "--check" })
	case "vipw", "vigr":
		return r.editorIn(depth, "vi", "VISUAL", "EDITOR")
	case "fc":
		// fc edits a command of the history in FCEDIT (-e ename), then
		// runs it; -l lists, -s runs one again.
		for i, a := range args {
			switch {
			case a == "-l" || a == "-s" || strings.HasPrefix(a, "-") && strings.ContainsAny(a, "ls") && !strings.Contains(a, "e"):
				return false
			case a == "-e" && i+1 < len(args):
				return args[i+1] != "-" && r.toolChannel(args[i+1], true, depth)
			}
		}
		return r.editorIn(depth, "vi", "FCEDIT", "EDITOR")
	case "systemctl":
		// systemctl edit: a unit in SYSTEMD_EDITOR, EDITOR, VISUAL or
		// editor, nano, vim, vi; --stdin reads the unit instead.
		if slices.Contains(args, "edit") && !slices.Contains(args, "--stdin") {
			return r.editorIn(depth, "vi", "SYSTEMD_EDITOR", "EDITOR", "VISUAL")
		}
		return false
	case "mutt", "neomutt":
		// A mail client: ! runs a shell; -s … < body, fed its message,
		// is not read here (its input is not the terminal).
		return !slices.ContainsFunc(args, func(a string) bool {
			return a == "-v" || a == "-V" || a == "-Q" || a == "-D" || a == "-A" || a == "-h"
		})
	case "lazygit", "gitui":
		// git's interfaces: a shell command, a custom command, the editor.
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
		"gcloud", "aws", "heroku", "fly", "flyctl", "gh", "az", "railway", "eb", "systemd-nspawn", "copilot":
		return r.cloudShell(name, args, depth)
	}
	return false
}
