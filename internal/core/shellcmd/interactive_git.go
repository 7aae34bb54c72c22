package shellcmd

// What of git reads the terminal: its pager (GIT_PAGER, then core.pager
// or pager.<cmd>, PAGER, less: pager.c), its editor (GIT_EDITOR, then
// core.editor — the user's configuration, unseen — then VISUAL unless
// TERM is dumb, EDITOR, vi; with TERM dumb, as Codex's is, and none of
// them set, git refuses to edit: editor.c) and its sequence editor
// (GIT_SEQUENCE_EDITOR, sequence.editor, then the editor), the patch
// prompt (add -p, whose e opens the editor), and the commands some
// subcommands run (rebase -x, bisect run, submodule foreach, an alias).

import (
	"slices"
	"strings"
)

// A gitCall is a git command line: its -c settings, its pager options,
// the subcommand and its words.
type gitCall struct {
	cfg               [][2]string
	noPager, paginate bool
	sub               string
	args              []string
}

func readGit(argv []string) gitCall {
	var g gitCall
	at := gitAt(argv)
	end := at
	if at < 0 {
		end = len(argv)
	} else {
		g.sub, g.args = argv[at], argv[at+1:]
	}
	for i := 1; i < end; i++ {
		switch a := argv[i]; {
		case a == "-c" && i+1 < end:
			k, v, ok := strings.Cut(argv[i+1], "=")
			if !ok {
				v = "true"
			}
			g.cfg = append(g.cfg, [2]string{strings.ToLower(k), v})
			i++
		case a == "--config-env" && i+1 < end:
			k, _, _ := strings.Cut(argv[i+1], "=")
			g.cfg = append(g.cfg, [2]string{strings.ToLower(k), unknownWord})
			i++
		case strings.HasPrefix(a, "--config-env="):
			k, _, _ := strings.Cut(a[len("--config-env="):], "=")
			g.cfg = append(g.cfg, [2]string{strings.ToLower(k), unknownWord})
		case a == "-C" || a == "--git-dir" || a == "--work-tree" || a == "--namespace" || a == "--super-prefix":
			i++
		case a == "--no-pager" || a == "-P":
			g.noPager = true
		case a == "-p" || a == "--paginate":
			g.paginate = true
		}
	}
	return g
}

// config is the value a -c setting gives key (the last one).
func (g gitCall) config(key string) (string, bool) {
	for i := len(g.cfg) - 1; i >= 0; i-- {
		if g.cfg[i][0] == key {
			return g.cfg[i][1], true
		}
	}
	return "", false
}

// gitBool reads a configuration value as git reads a boolean.
func gitBool(v string) (value, ok bool) {
	switch strings.ToLower(v) {
	case "true", "yes", "on", "1":
		return true, true
	case "false", "no", "off", "0", "":
		return false, true
	}
	return false, false
}

// gitPaged are the subcommands git pages by default when its output is
// the terminal.
var gitPaged = map[string]bool{"log": true, "show": true, "diff": true, "grep": true, "blame": true, "annotate": true,
	"shortlog": true, "whatchanged": true, "reflog": true, "branch": true, "tag": true, "stash": true, "range-diff": true,
	"cherry": true, "config": true}

// gitPages reports whether a git command pages through a pager that
// reads the terminal. Codex's GIT_PAGER=cat outranks core.pager and
// pager.<cmd> (git's pager.c: GIT_PAGER, the configuration, PAGER, less):
// git log, git --paginate log and git -c core.pager=less log page
// through cat there.
func (r *ireader) gitPages(args []string, depth int) bool {
	g := readGit(append([]string{"git"}, args...))
	if g.noPager || g.sub == "" {
		return false
	}
	if g.sub == "help" || slices.Contains(g.args, "--help") {
		// man's pager; git help -w a browser, perhaps a text one.
		return slices.ContainsFunc(g.args, func(a string) bool { return a == "-w" || a == "--web" }) ||
			r.pages("man", nil, true, depth)
	}
	paged, prog := g.paginate || gitPaged[g.sub], ""
	if v, ok := g.config("pager." + g.sub); ok {
		if b, isBool := gitBool(v); isBool {
			paged = b || g.paginate
		} else {
			paged, prog = true, v
		}
	}
	if !paged {
		return false
	}
	cfg := func(string) (string, bool) {
		if prog != "" {
			return prog, true
		}
		return g.config("core.pager")
	}
	return r.toolRuns([]string{"GIT_PAGER", "config:core.pager", "PAGER"}, cfg, "less", true, false, depth)
}

// gitEditor reports whether git's editor reads the terminal: GIT_EDITOR,
// else core.editor (a -c setting, else the user's configuration, which
// the line does not show: any editor).
func (r *ireader) gitEditor(g gitCall, depth int) bool {
	return r.toolRuns([]string{"GIT_EDITOR", "config:core.editor"}, g.config, "vi", false, true, depth)
}

// gitSequenceEditor: the editor of rebase -i's todo list.
func (r *ireader) gitSequenceEditor(g gitCall, depth int) bool {
	return r.toolRuns([]string{"GIT_SEQUENCE_EDITOR", "config:sequence.editor", "GIT_EDITOR", "config:core.editor"},
		g.config, "vi", false, true, depth)
}

// gitFlags are the options a git subcommand was given, up to --: short
// letters, and long names with their values.
type gitFlags struct {
	short []byte
	long  [][2]string
}

// readGitFlags reads a subcommand's options; values are its short
// letters and longValues its long names that take a value (the rest of
// the cluster, or the next word). -S (a signing key) takes only the
// rest of its cluster, as -u (commit) and -n (tag) do.
func readGitFlags(args []string, values string, longValues ...string) gitFlags {
	var f gitFlags
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return f
		case strings.HasPrefix(a, "--"):
			k, v, ok := strings.Cut(a, "=")
			if !ok && slices.Contains(longValues, k) && i+1 < len(args) {
				v = args[i+1]
				i++
			}
			f.long = append(f.long, [2]string{k, v})
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for k := 1; k < len(a); k++ {
				f.short = append(f.short, a[k])
				if strings.IndexByte(values, a[k]) >= 0 {
					if k == len(a)-1 {
						i++
					}
					break
				}
				if a[k] == 'S' || a[k] == 'u' && !strings.Contains(values, "u") || a[k] == 'n' && strings.Contains(values, "u") {
					break
				}
			}
		}
	}
	return f
}

// has reports whether one of the short letters or one of the long names
// was given.
func (f gitFlags) has(short string, long ...string) bool {
	for _, c := range f.short {
		if strings.IndexByte(short, c) >= 0 {
			return true
		}
	}
	for _, l := range f.long {
		if slices.Contains(long, l[0]) {
			return true
		}
	}
	return false
}

// value is the value of the last of long names given.
func (f gitFlags) value(long string) (string, bool) {
	for i := len(f.long) - 1; i >= 0; i-- {
		if f.long[i][0] == long {
			return f.long[i][1], true
		}
	}
	return "", false
}

// subcommandOperands are the words of a subcommand that are not options (nor
// their values).
func subcommandOperands(args []string, values string, longValues ...string) []string {
	var ops []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(ops, args[i+1:]...)
		case strings.HasPrefix(a, "--"):
			if !strings.Contains(a, "=") && slices.Contains(longValues, a) {
				i++
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if clusterTakesNext(a, values) {
				i++
			}
		default:
			ops = append(ops, a)
		}
	}
	return ops
}

// gitGUITools are difftool's and mergetool's tools that open a window,
// not the terminal.
var gitGUITools = map[string]bool{"meld": true, "kdiff3": true, "opendiff": true, "bc": true, "bc3": true, "bc4": true,
	"tkdiff": true, "xxdiff": true, "p4merge": true, "araxis": true, "diffmerge": true, "ecmerge": true, "codecompare": true,
	"winmerge": true, "guiffy": true, "deltawalker": true, "diffuse": true, "smerge": true, "vscode": true, "kompare": true,
	"tortoisemerge": true, "gvimdiff": true}

// git reads a git command whose standard input is the terminal: an
// alias's line (git -c alias.x='!bash' x), what opens its editor or its
// sequence editor, the commands it runs (rebase -x, bisect run,
// submodule foreach), a diff or merge tool.
func (r *ireader) git(argv []string, depth int) bool {
	args := argv[1:]
	// git -c alias.x='!bash' x: the alias's line, the terminal its input.
	if at := gitAt(argv); at > 0 {
		for i := 1; i+1 < at; i++ {
			if k, v, _ := strings.Cut(args[i], "="); args[i-1] == "-c" && strings.HasPrefix(strings.ToLower(k), "alias.") &&
				strings.HasPrefix(v, "!") && r.line(v[1:], depth+1, nil) {
				return true
			}
		}
	}
	g := readGit(argv)
	if v, ok := g.config("alias." + strings.ToLower(g.sub)); ok && g.sub != "" && !strings.HasPrefix(v, "!") {
		// git -c alias.ci=commit ci: the alias's words for the
		// subcommand (git expands an alias once, not within itself).
		if at := gitAt(argv); at > 0 && depth < maxDepth {
			words := strings.Fields(v)
			if len(words) > 0 && words[0] != g.sub {
				cmd := append(append(slices.Clip(argv[:at]), words...), argv[at+1:]...)
				return r.argv(cmd, depth+1)
			}
		}
	}
	editor := func() bool { return r.gitEditor(g, depth) }
	a := g.args
	switch g.sub {
	case "commit":
		f := readGitFlags(a, "mFCct", "--message", "--file", "--reuse-message", "--reedit-message", "--template",
			"--fixup", "--squash", "--author", "--date", "--cleanup", "--trailer", "--pathspec-from-file")
		switch {
		case f.has("p", "--patch", "--interactive"):
			return editor() // the patch prompt: e opens the editor
		case f.has("", "--dry-run", "--short", "--porcelain", "--long"):
			return false
		case f.has("e", "--edit"):
			return editor()
		case f.has("mFC", "--message", "--file", "--reuse-message", "--no-edit"):
			return false
		case f.has("ct", "--reedit-message", "--template"):
			return editor()
		}
		if v, ok := f.value("--fixup"); ok {
			// --fixup=amend: and reword: open the editor; a plain one
			// writes "fixup! …" itself.
			return (strings.HasPrefix(v, "amend:") || strings.HasPrefix(v, "reword:")) && editor()
		}
		return editor()
	case "merge":
		f := readGitFlags(a, "sXmF", "--strategy", "--strategy-option", "--message", "--file", "--cleanup", "--into-name")
		switch {
		case f.has("", "--abort", "--quit"):
			return false
		case f.has("", "--continue"):
			return editor() // git commit, MERGE_MSG in the editor
		}
		return r.gitMergeEdits(f, true) && editor()
	case "pull":
		f := readGitFlags(a, "sXoj", "--strategy", "--strategy-option", "--depth", "--deepen", "--shallow-since",
			"--shallow-exclude", "--upload-pack", "--refmap", "--server-option", "--jobs", "--cleanup", "--negotiation-tip",
			"--filter", "--recurse-submodules-default")
		rebase := ""
		for _, l := range f.long {
			switch {
			case l[0] == "--rebase":
				rebase = l[1]
				if rebase == "" {
					rebase = "true"
				}
			case l[0] == "--no-rebase":
				rebase = "false"
			}
		}
		if f.has("r") && rebase == "" {
			rebase = "true"
		}
		switch strings.ToLower(rebase) {
		case "interactive", "i":
			return r.gitSequenceEditor(g, depth) || editor()
		case "", "false", "no", "off", "0":
			// A merge: the configuration (pull.rebase, pull.ff), which
			// the line does not show, may make it one that edits.
			return r.gitMergeEdits(f, false) && editor()
		}
		return false // a rebase that runs no editor
	case "rebase":
		return r.gitRebase(g, depth)
	case "tag":
		f := readGitFlags(a, "umF", "--local-user", "--message", "--file", "--cleanup", "--sort", "--format", "--contains",
			"--no-contains", "--points-at", "--merged", "--no-merged", "--column")
		switch {
		case f.has("ldv", "--list", "--delete", "--verify", "--contains", "--no-contains", "--points-at", "--merged", "--no-merged"):
			return false
		case f.has("e", "--edit"):
			return editor()
		case f.has("asu", "--annotate", "--sign", "--local-user") && !f.has("mF", "--message", "--file"):
			return editor()
		}
		return false
	case "add":
		f := readGitFlags(a, "", "--chmod", "--pathspec-from-file")
		return f.has("pie", "--patch", "--interactive", "--edit") && editor()
	case "checkout", "reset", "restore":
		return slices.ContainsFunc(a, func(w string) bool { return w == "-p" || w == "--patch" }) && editor()
	case "stash":
		// stash push -p and save -p (stash show -p prints a diff).
		if ops := subcommandOperands(a, "m", "--message", "--pathspec-from-file"); len(ops) > 0 && ops[0] != "push" && ops[0] != "save" {
			return false
		}
		return slices.ContainsFunc(a, func(w string) bool { return w == "-p" || w == "--patch" }) && editor()
	case "notes":
		return r.gitNotes(g, depth)
	case "config":
		if r.gitAliasDefined(a, depth) {
			return true
		}
		return (slices.ContainsFunc(a, func(w string) bool { return w == "-e" || w == "--edit" }) ||
			len(a) > 0 && a[0] == "edit") && editor()
	case "grep":
		// -O<pager>, --open-files-in-pager=<pager>: the files it finds
		// in that pager (vim, less); -O alone, git's pager.
		for _, w := range a {
			if w == "--" {
				break
			}
			v, ok := strings.CutPrefix(w, "--open-files-in-pager=")
			if !ok && strings.HasPrefix(w, "-O") && len(w) > 2 {
				v, ok = w[2:], true
			}
			if ok {
				return r.toolChannel(v, true, depth)
			}
			if w == "-O" || w == "--open-files-in-pager" {
				return r.toolRuns([]string{"GIT_PAGER", "config:core.pager", "PAGER"}, g.config, "less", true, true, depth)
			}
		}
		return false
	case "replace":
		return slices.Contains(a, "--edit") && editor()
	case "branch":
		return slices.Contains(a, "--edit-description") && editor()
	case "send-email":
		f := readGitFlags(a, "", "--confirm")
		if f.has("", "--compose", "--annotate") {
			return editor()
		}
		// Its confirmation prompt offers [e]dit.
		v, _ := f.value("--confirm")
		return v != "never" && !f.has("", "--dry-run") && editor()
	case "revert":
		f := readGitFlags(a, "mXS", "--mainline", "--strategy", "--strategy-option", "--cleanup")
		switch {
		case f.has("", "--abort", "--quit", "--skip", "--no-edit"), f.has("n", "--no-commit"):
			return false
		}
		return editor() // it edits the message when its input is the terminal
	case "cherry-pick":
		f := readGitFlags(a, "mXS", "--mainline", "--strategy", "--strategy-option", "--cleanup")
		return f.has("e", "--edit", "--continue") && !f.has("", "--no-edit") && editor()
	case "am":
		return slices.ContainsFunc(a, func(w string) bool { return w == "-i" || w == "--interactive" }) && editor()
	case "difftool", "mergetool":
		f := readGitFlags(a, "tx", "--tool", "--extcmd")
		if f.has("", "--tool-help") {
			return false
		}
		tool, _ := f.value("--tool")
		for i, w := range a {
			if w == "-t" && i+1 < len(a) {
				tool = a[i+1]
			} else if strings.HasPrefix(w, "-t") && len(w) > 2 {
				tool = w[2:]
			}
		}
		return !gitGUITools[tool]
	case "bisect":
		if len(a) > 1 && a[0] == "run" {
			return r.argv(a[1:], depth+1)
		}
	case "submodule":
		// submodule foreach [--recursive] [-q] CMD: CMD in each.
		if i := slices.Index(a, "foreach"); i >= 0 {
			cmd := a[i+1:]
			for len(cmd) > 0 && strings.HasPrefix(cmd[0], "-") {
				cmd = cmd[1:]
			}
			return len(cmd) > 0 && r.line(strings.Join(cmd, " "), depth+1, nil)
		}
	}
	return false
}

// gitMergeEdits reports whether a merge (git merge, or git pull merging)
// may open the editor on its commit's message. git merge edits it when
// its input and output are the terminal (builtin/merge.c,
// default_edit_option), unless GIT_MERGE_AUTOEDIT=no, --no-edit, a
// message given (-m, -F; merge only), or no merge commit made
// (--ff-only, --squash, --no-commit). A fast-forward makes none either,
// but whether the merge is one depends on the repository, which a line
// does not show — and the model can make it one that is not: taken to
// edit (fail closed; git merge --no-edit, --ff-only).
func (r *ireader) gitMergeEdits(f gitFlags, merge bool) bool {
	switch {
	case f.has("", "--ff-only", "--squash", "--no-commit", "--no-edit"):
		return false
	case f.has("e", "--edit"):
		return true
	case merge && f.has("mF", "--message", "--file"):
		return false
	case r.piped || r.envIs("GIT_MERGE_AUTOEDIT", "no", "false", "off", "0"):
		return false
	}
	return true
}

// gitRebase: -i and --edit-todo open the sequence editor, and the todo
// list may open the editor (squash, reword, fixup -c; --autosquash's
// squash! commits); --continue and --skip after a conflict open it on
// the commit's message; -x runs each command with the terminal.
func (r *ireader) gitRebase(g gitCall, depth int) bool {
	a := g.args
	f := readGitFlags(a, "sXCx", "--strategy", "--strategy-option", "--onto", "--exec", "--empty", "--whitespace")
	for i, w := range a {
		var cmd string
		switch {
		case (w == "-x" || w == "--exec") && i+1 < len(a):
			cmd = a[i+1]
		case strings.HasPrefix(w, "--exec="):
			cmd = w[len("--exec="):]
		case strings.HasPrefix(w, "-x") && len(w) > 2:
			cmd = w[2:]
		default:
			continue
		}
		if r.line(cmd, depth+1, nil) {
			return true
		}
	}
	switch {
	case f.has("", "--abort", "--quit", "--show-current-patch"):
		return false
	case f.has("", "--continue", "--skip"):
		return r.gitEditor(g, depth)
	case f.has("", "--edit-todo"):
		return r.gitSequenceEditor(g, depth)
	case f.has("i", "--interactive"):
		if r.gitSequenceEditor(g, depth) {
			return true
		}
		// The todo list as git wrote it (a sequence editor that leaves
		// it: GIT_SEQUENCE_EDITOR=:) picks each commit and opens no
		// editor; one that rewrites it, or --autosquash, may squash.
		seq := r.lookup("GIT_SEQUENCE_EDITOR")
		if c, ok := g.config("sequence.editor"); ok && (seq.unset || seq.host) {
			seq = envVals{vals: append(seq.vals, c)}
		}
		noop := !seq.unset && !seq.host && len(seq.vals) > 0 && !slices.ContainsFunc(seq.vals, func(v string) bool {
			return v != ":" && v != "true"
		})
		if noop && !f.has("", "--autosquash") {
			return false
		}
		return r.gitEditor(g, depth)
	case f.has("", "--autosquash"):
		return r.gitEditor(g, depth)
	}
	return false
}

// gitNotes: add and append open the editor unless given the note (-m,
// -F, -C); edit always.
func (r *ireader) gitNotes(g gitCall, depth int) bool {
	a := g.args
	for i := 0; i < len(a); i++ {
		switch w := a[i]; {
		case w == "--ref":
			i++
		case strings.HasPrefix(w, "-"):
		default:
			f := readGitFlags(a[i+1:], "mFCc", "--message", "--file", "--reuse-message", "--reedit-message")
			switch w {
			case "edit":
				return r.gitEditor(g, depth)
			case "add", "append":
				if f.has("ec", "--edit", "--reedit-message") || !f.has("mFC", "--message", "--file", "--reuse-message") {
					return r.gitEditor(g, depth)
				}
			}
			return false
		}
	}
	return false
}
