package shellcmd

// The environment Interactive follows through a line: the variables
// that choose a program's pager or editor (GIT_PAGER, PAGER, GIT_EDITOR,
// LESSSECURE, …) and the ones a command word expands ($PY), as the
// line's assignments, exports, unsets, env and sudo leave them.

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// codexEnv is what Codex's unified exec sets for every command it runs
// (codex-rs/core/src/unified_exec/process_manager.rs, UNIFIED_EXEC_ENV):
// git, man, gh and systemd's tools page through cat there. It sets no
// editor: EDITOR and VISUAL are the user's, unseen, and GIT_EDITOR,
// GIT_SEQUENCE_EDITOR, MANPAGER, SYSTEMD_PAGER and LESSSECURE are taken
// for unset.
var codexEnv = map[string]string{"NO_COLOR": "1", "TERM": "dumb", "LANG": "C.UTF-8", "LC_CTYPE": "C.UTF-8",
	"LC_ALL": "C.UTF-8", "COLORTERM": "", "PAGER": "cat", "GIT_PAGER": "cat", "GH_PAGER": "cat", "CODEX_CI": "1"}

// maxBindings bounds the bindings in force at once; past it every
// variable may hold anything (fail closed).
const maxBindings = 1024

// A binding is one assignment the line makes, or a reset of the whole
// environment (env -i, sudo's env_reset), in front of the bindings made
// before it.
type binding struct {
	next *binding
	n    int // the bindings from here on
	name string
	vals []string // unknownWord: a value the reading cannot tell
	// unset: it may be unset; keep: it may still hold what the bindings
	// before gave it (an assignment that may not run: a branch's, a
	// subshell's); local: a shell variable not exported, which a
	// program started may not see.
	unset, keep, local bool
	// reset: every variable is unset (env -i); maybeReset: any may be
	// (sudo's env_reset, whose env_keep the line does not show).
	reset, maybeReset bool
}

// envVals is what a variable may hold for a command: vals, or unset;
// host: what it held when the line began, which is codexEnv's value or
// nothing the line shows.
type envVals struct {
	vals        []string
	unset, host bool
}

// lookup is what a variable may hold in the environment of the command
// being read.
func (r *ireader) lookup(name string) envVals { return r.lookupVar(name, false) }

// lookupVar is what a variable may hold in the environment of the
// command being read, or (shell) as the shell expands it.
func (r *ireader) lookupVar(name string, shell bool) envVals {
	var e envVals
	for b := r.env; b != nil; b = b.next {
		if r.work++; r.work > maxWork {
			r.over = true
			return envVals{vals: []string{unknownWord}, unset: true}
		}
		switch {
		case b.reset:
			e.unset = true
			return e
		case b.maybeReset:
			e.unset = true
			continue
		case b.name != name:
			continue
		}
		e.vals = append(e.vals, b.vals...)
		e.unset = e.unset || b.unset
		if !b.keep && (shell || !b.local) {
			return e
		}
	}
	if r.envOver {
		e.vals, e.unset = append(e.vals, unknownWord), true
		return e
	}
	if v, ok := codexEnv[name]; ok {
		e.vals = append(e.vals, v)
	} else {
		e.host = true
	}
	return e
}

// bind puts a binding in front of the line's environment.
func (r *ireader) bind(b *binding) {
	b.next, b.n = r.env, 1
	if r.env != nil {
		b.n += r.env.n
	}
	if b.n > maxBindings {
		r.envOver = true
		return
	}
	r.env = b
	r.pagerBound = r.pagerBound || strings.Contains(b.name, "PAGER")
}

// assign binds a variable for the commands that follow in this shell:
// in place of what it held when the statement surely runs, else added
// to what it may hold; for the programs they start, the same when it is
// exported to them (export, or one Codex's environment holds).
func (r *ireader) assign(name, value string, unset, export bool) {
	b := &binding{name: name, unset: unset}
	if !unset {
		b.vals = []string{value}
	}
	_, exported := codexEnv[name]
	b.keep, b.local = r.maybe, !export && !exported
	r.bind(b)
}

// leave ends a scope whose bindings do not outlive it: a command's own
// assignments (X=1 cmd), a subshell's, a pipe's side, a substitution, a
// program's environment (env X=1, sudo), none of which reaches the
// shell that reads on.
func (r *ireader) leave(saved *binding) { r.env = saved }

// unbind takes away a command's own assignments — the bindings between
// saved and top — and keeps what was bound after them (X=1 eval 'export
// Y=2': Y stays).
func (r *ireader) unbind(saved, top *binding) {
	var newer []*binding
	for b := r.env; b != nil && b != top; b = b.next {
		newer = append(newer, b)
	}
	r.env = saved
	for i := len(newer) - 1; i >= 0; i-- {
		c := *newer[i]
		r.bind(&c)
	}
}

// wordValue is what the reading tells of a word's value for an
// assignment: its literal text, a resolved expansion, or unknownWord.
func (r *ireader) wordValue(w *syntax.Word, pos []string) string {
	if w == nil {
		return ""
	}
	if v, ok := literal(w); ok {
		return v
	}
	if vs, ok := r.expansion(w, pos); ok && len(vs) == 1 {
		return vs[0]
	}
	return unknownWord
}

// assigns binds a statement's assignments (X=1, export X=1, declare -x
// X=1, readonly X=1; export -n X unexports it).
func (r *ireader) assigns(list []*syntax.Assign, export bool, pos []string) {
	for _, a := range list {
		if a.Name == nil || a.Naked && !export {
			continue
		}
		switch {
		case a.Naked:
			// export X: what the shell holds, now in the environment.
			if e := r.lookupVar(a.Name.Value, true); len(e.vals) > 0 || e.unset {
				r.bind(&binding{name: a.Name.Value, vals: e.vals, unset: e.unset, keep: r.maybe || e.host})
			}
		case a.Append || a.Array != nil || a.Index != nil:
			r.assign(a.Name.Value, unknownWord, false, export)
		default:
			r.assign(a.Name.Value, r.wordValue(a.Value, pos), false, export)
		}
	}
}

// declare reads export, declare, typeset, local and readonly: their
// assignments, exported with export or -x.
func (r *ireader) declare(c *syntax.DeclClause, pos []string) {
	export := c.Variant != nil && c.Variant.Value == "export"
	for _, a := range c.Args {
		if a.Name == nil && a.Naked && a.Value != nil {
			if f, ok := literal(a.Value); ok && strings.HasPrefix(f, "-") && strings.Contains(f, "x") {
				export = true
			} else if ok && f == "-n" || ok && strings.HasPrefix(f, "+") && strings.Contains(f, "x") {
				// export -n X, declare +x X: no longer in the environment.
				for _, b := range c.Args {
					if b.Name != nil {
						r.assign(b.Name.Value, "", true, true)
					}
				}
				return
			}
		}
	}
	r.assigns(c.Args, export, pos)
}

// unsetVars reads unset's operands (not -f's functions).
func (r *ireader) unsetVars(args []string) {
	if slices.Contains(args, "-f") {
		return
	}
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			r.assign(a, "", true, true)
		}
	}
}

// setEnv reads what env's or sudo's words set before the command: NAME=value
// bindings, -u NAME unsets, -i a fresh environment; it returns the index
// of the first word that is none of them.
func (r *ireader) setEnv(args []string, env bool) int {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case env && (a == "-i" || a == "-" || a == "--ignore-environment"):
			r.bind(&binding{reset: true})
		case env && (a == "-u" || a == "--unset") && i+1 < len(args):
			r.bind(&binding{name: args[i+1], unset: true})
			i++
		case env && strings.HasPrefix(a, "--unset="):
			r.bind(&binding{name: a[len("--unset="):], unset: true})
		case env && strings.HasPrefix(a, "-u") && len(a) > 2:
			r.bind(&binding{name: a[2:], unset: true})
		case strings.HasPrefix(a, "-"):
			if a == "--" {
				return i + 1
			}
		case strings.Contains(a, "=") && !strings.HasPrefix(a, "="):
			k, v, _ := strings.Cut(a, "=")
			r.bind(&binding{name: k, vals: []string{v}})
		default:
			return i
		}
	}
	return len(args)
}

// envIs reports whether a variable surely holds one of values for the
// command being read.
func (r *ireader) envIs(name string, values ...string) bool {
	e := r.lookup(name)
	if e.unset || e.host || len(e.vals) == 0 {
		return false
	}
	for _, v := range e.vals {
		if !slices.Contains(values, strings.ToLower(v)) {
			return false
		}
	}
	return true
}
