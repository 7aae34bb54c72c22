package policy

import (
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/shellcmd"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// Files that carry a taint label (taint sources with files): what a
// fetch wrote to disk enters the session again whenever a later call
// names the file — a Read of it three turns on, a cat, a script run.

// classListsNames is the catalog class of tools whose output is the names
// of files, not their content (Claude Code's Glob and LS, Cursor's
// list_dir and file searches, an MCP server's directory listings);
// classSearches of those whose output is lines of the files under a path,
// the working directory when none is given (Grep, Cursor's searches).
const (
	classListsNames = "lists_names"
	classSearches   = "searches"
)

// globNamesDir reports whether the glob path w (cleaned, lower-cased,
// holding a /) names the remembered directory d or something under it: a
// word that starts with ** (anything under the working directory: d
// relative), or whose first components match d's last ones (*/README.md,
// w*/src for widget; d relative or not, as namesDir reads a relative word
// from the directory d is in); an absolute word from its first, literal,
// component on.
func globNamesDir(w, d string) bool {
	if !strings.Contains(w, "/") {
		return false // * or ** alone: a glob of names, not of a path through d
	}
	ws := strings.Split(w, "/")
	if ws[0] == "**" {
		return !path.IsAbs(d) // anything under the working directory
	}
	ds := strings.Split(strings.TrimPrefix(d, "/"), "/")
	if path.IsAbs(w) {
		ws = ws[1:]
		if len(ws) == 0 || strings.ContainsAny(ws[0], "*?[") {
			return false // /** and the like: a comment's, not a path's
		}
		return matchDirPrefix(ws, ds)
	}
	for k := 1; k <= len(ds); k++ {
		if matchDirPrefix(ws, ds[len(ds)-k:]) {
			return true
		}
	}
	return false
}

// matchDirPrefix reports whether the glob components ws begin with ones
// matching the directory's components ds (** matches the rest).
func matchDirPrefix(ws, ds []string) bool {
	for i, dc := range ds {
		if i >= len(ws) {
			return false
		}
		if ws[i] == "**" {
			return true
		}
		if ok, err := path.Match(ws[i], dc); err != nil || !ok {
			return false
		}
	}
	return true
}

// eachUnquotedWord calls fn with the words of the call's command line and
// string arguments that quotes or backslashes split or hid (sh
// "ins"tall.sh, cat wid"get"/x, sh install\.sh): read again without them.
func eachUnquotedWord(t *ToolView, fn func(string)) {
	visit := func(s string) {
		if strings.ContainsAny(s, `'"\`) {
			eachWord(unquoter.Replace(s), fn)
		}
	}
	visit(t.RawCommand)
	EachString(t.Args, visit)
}

var unquoter = strings.NewReplacer(`'`, "", `"`, "", `\`, "")

// commandWrites are the files the command lines among the call's sinks
// write (shellcmd.Writes), cleaned (cleanPath), and the directories they
// fill (a clone: Dir); those that cannot be remembered (longer than
// turnstate.MaxFileTaintPath) left out. Path and Dir only.
//
// A directory named only by dots — the one the command runs in, which
// Writes gives only when a clone fills it (git clone URL .) — is
// remembered by its absolute path (commandDir of cwd); where the host said
// no working directory it cannot be told apart from any other, and is
// left out.
func commandWrites(t *ToolView, cwd string) []turnstate.FileTaint {
	var out []turnstate.FileTaint
	dir := commandDir(t, cwd)
	add := func(ws []string) {
		for _, w := range ws {
			w, isDir := shellcmd.DirWritten(w)
			if isDir && dir != "" && dotsOnly(w) {
				w = absPath(dir, w)
			}
			out = appendFile(out, turnstate.FileTaint{Path: w, Dir: isDir})
		}
	}
	// A directory a clone or an extraction fills, named relative to dir,
	// is remembered by its absolute path from there, unless the line
	// moves (cd, pushd, git -C: it may be relative to anywhere, and is
	// remembered as the line spells it). Relative, widget/ would also be
	// named by every path through a directory of that name — with the
	// step's cwd /home/dev/widget, every file of the user's project once
	// a clone of an upstream widget is remembered.
	addIn := func(ws []string, moves bool) {
		for i, w := range ws {
			if d, isDir := shellcmd.DirWritten(w); isDir && dir != "" && !moves && !dotsOnly(d) && relativeDir(d) {
				ws[i] = absPath(dir, strings.ToLower(strings.ReplaceAll(d, "\\", "/"))) + "/"
			}
		}
		add(ws)
	}
	eachCommand(t, func(line string) { addIn(shellcmd.Writes(line), movesDir.MatchString(line)) },
		func(argv []string) { addIn(shellcmd.ArgvWrites(argv), movesDir.MatchString(strings.Join(argv, " "))) }, func() {})
	return out
}

// movesDir matches a command line that may run a command elsewhere than
// where it starts: a cd, pushd or popd (Set-Location), or an option
// moving a program (git -C, hg --cwd, make --directory).
var movesDir = regexp.MustCompile("(^|[\\s;&|(`'\"])(?i:cd|pushd|popd|chdir|set-location)($|[\\s;&|)`'\"])|\\s(-C|--cwd|--directory|--work-tree|--git-dir)(\\s|=|$)")

// relativeDir reports whether d is a relative path that names a place
// (not ~/…, $VAR/…, or a Windows drive's).
func relativeDir(d string) bool {
	d = strings.TrimSpace(d)
	if d == "" || strings.HasPrefix(d, "~") || strings.HasPrefix(d, "$") || strings.HasPrefix(d, "/") || strings.HasPrefix(d, "\\") {
		return false
	}
	_, abs := rooted(strings.ToLower(strings.ReplaceAll(d, "\\", "/")))
	return !abs
}

// dotsOnly reports whether a relative path names the working directory or
// one above it with no name of its own: ".", "..", "./..".
func dotsOnly(p string) bool {
	p = strings.TrimSpace(strings.ReplaceAll(p, "\\", "/"))
	return p != "" && strings.Trim(p, "./") == "" && !strings.HasPrefix(p, "/")
}

// appendFile appends f to files with its path cleaned (cleanPath), unless
// it names no file, cannot be remembered (longer than
// turnstate.MaxFileTaintPath) or is there already.
func appendFile(files []turnstate.FileTaint, f turnstate.FileTaint) []turnstate.FileTaint {
	f.Path = cleanPath(f.Path)
	if f.Path == "" || acs.StoredLen(f.Path) > turnstate.MaxFileTaintPath ||
		slices.ContainsFunc(files, func(o turnstate.FileTaint) bool { return o.Path == f.Path }) {
		return files
	}
	return append(files, f)
}

// cleanPath is the form files are remembered and named in: path.Clean,
// without a leading ./, ~/ or $HOME/ (a path naming the file from
// elsewhere then ends with it) or $PWD/ (the working directory's: a
// relative path). "" for no file ("", ".", "/", "~").
func cleanPath(p string) string {
	p = strings.TrimSpace(p)
	if f, ok := fileURI(p); ok {
		p = f
	}
	// Windows writes C:\Users\dev\app\install.ps1.
	p = strings.ReplaceAll(p, "\\", "/")
	for _, home := range []string{"~/", "$HOME/", "${HOME}/", "$PWD/", "${PWD}/", "$(pwd)/"} {
		p = strings.TrimPrefix(p, home)
	}
	if p == "" {
		return ""
	}
	p = path.Clean(p)
	p = strings.TrimPrefix(p, "./")
	switch p {
	case ".", "/", "..", "~":
		return ""
	}
	return p
}

// copySuffix marks a remembered file that a later call wrote from one
// remembered before (taintFileReads): a copy. Copies make room for
// copies first, and a copy written over a file remembered with the same
// label keeps that file's source, so that a call writing many files
// cannot push the file it read out of the session's memory (and its next
// read in): at most one file not a copy makes room for a call's copies.
const copySuffix = ":copy"

func copied(f turnstate.FileTaint) bool { return strings.HasSuffix(f.Source, copySuffix) }

// rememberFiles adds files to the session's FileTaints, newest last; past
// turnstate.MaxFileTaints the oldest is forgotten — the oldest copy first
// when a copy comes.
func rememberFiles(sess *turnstate.Session, files []turnstate.FileTaint) {
	for _, f := range files {
		if copied(f) {
			if i := slices.IndexFunc(sess.FileTaints, func(o turnstate.FileTaint) bool { return o.Path == f.Path && o.Label == f.Label }); i >= 0 {
				f.Source = sess.FileTaints[i].Source // an origin stays one
			}
		}
		sess.FileTaints = slices.DeleteFunc(sess.FileTaints, func(o turnstate.FileTaint) bool { return o.Path == f.Path && o.Label == f.Label })
		if background(f) {
			n := 0
			for _, o := range sess.FileTaints {
				if background(o) {
					n++
				}
			}
			if n >= maxBackgroundFiles {
				// The oldest background file makes room, not a fetch's.
				i := slices.IndexFunc(sess.FileTaints, background)
				sess.FileTaints = slices.Delete(sess.FileTaints, i, i+1)
			}
		}
		if len(sess.FileTaints) >= turnstate.MaxFileTaints {
			if i := slices.IndexFunc(sess.FileTaints, copied); copied(f) && i >= 0 {
				sess.FileTaints = slices.Delete(sess.FileTaints, i, i+1)
			} else {
				sess.FileTaints = slices.Delete(sess.FileTaints, 0, len(sess.FileTaints)-turnstate.MaxFileTaints+1)
			}
		}
		sess.FileTaints = append(sess.FileTaints, f)
	}
}

// taintFileReads makes a call that names a remembered file a source of
// the file's label, as an output source: once let run, the label is set
// when its result arrives (or at the session's next envelope). A file is
// named by any word of the call's string arguments and command line that
// is its path, ends with it, or is the end of it (a relative name from
// the directory it was written in); a directory a clone filled, by any
// word naming it or a path under it (namesDir). What such a call writes
// (commandWrites: cp's destination, a redirect's file, the directory tar
// -C fills) is remembered with the file's label.
//
// A message the host sends for the agent's own work — not the user's
// words: Claude Code's <task-notification> that a background task
// finished or printed, labelled agent_generated — that names a remembered
// file brings it in at once: the label is set by the message (a
// background fetch's task id: its page is all there now).
func (e *evalCtx) taintFileReads(res *Result) {
	if len(e.sess.FileTaints) == 0 {
		return
	}
	// words calls fn with each word, and whether a glob in it is one a
	// shell or a Glob expands (a word of a command line, a Glob's
	// pattern), not text that happens to hold a * (a comment's /**, a
	// markdown bullet, a multiplication).
	var words func(fn func(w string, glob bool))
	var take func(f turnstate.FileTaint)
	var roots []string
	namesOnly := false
	cwd := workingDir(e.in.Req)
	switch e.hook {
	case "toolCallRequest":
		t := e.toolView()
		cwd = commandDir(t, cwd)
		// A Glob or a listing of a directory answers with names, not what
		// the files say: a *.md after a fetch saved notes.md brings
		// nothing of it in. The names in a directory a clone filled are
		// its author's, though, and a listing of it reads them.
		namesOnly = slices.Contains(t.Classes, classListsNames)
		roots = searchRoots(t)
		words = func(fn func(string, bool)) {
			plain := func(w string) { fn(w, false) }
			eachCallWord(t, plain)
			eachUnquotedWord(t, plain)
			glob := func(ws []string) {
				for _, w := range ws {
					fn(w, true)
				}
			}
			eachCommand(t, func(line string) { glob(shellcmd.GlobWords(line)) }, func(argv []string) { glob(shellcmd.ArgvGlobWords(argv)) }, func() {})
			if p := globPattern(t); p != "" {
				fn(p, true)
			}
		}
		// The call becomes a source of the label, set when its output
		// arrives; and what it writes — a copy (cp, a redirect), an
		// extraction (tar -C, unzip -d), a conversion's output — carries
		// the file's content on, and its label, as the fetch's files do.
		take = func(f turnstate.FileTaint) {
			res.Unanswered = append(res.Unanswered, turnstate.UnansweredCall{Label: f.Label, Hit: e.hit(f.Source+":read", false), Output: true, Held: e.streams()})
			for _, w := range commandWrites(t, workingDir(e.in.Req)) {
				w.Label, w.Source = f.Label, strings.TrimSuffix(f.Source, copySuffix)+copySuffix
				res.Files = append(res.Files, w)
			}
		}
	case "userMessage":
		words = func(fn func(string, bool)) { e.noticeWords(func(w string) { fn(w, false) }) }
		take = func(f turnstate.FileTaint) { e.setTaint(f.Label, f.Source+":notified") }
	default:
		return
	}
	var labels []string
	named := func(f turnstate.FileTaint) {
		if !slices.Contains(labels, f.Label) {
			labels = append(labels, f.Label)
			take(f)
		}
	}
	byBase := make(map[string][]turnstate.FileTaint, len(e.sess.FileTaints))
	var dirs []turnstate.FileTaint
	for _, f := range e.sess.FileTaints {
		if f.Dir {
			dirs = append(dirs, f)
			continue
		}
		b := strings.ToLower(path.Base(f.Path))
		byBase[b] = append(byBase[b], f)
	}
	// Compared without case: macOS and Windows do not tell Install.sh from
	// install.sh. A glob a shell or a Glob expands (cat tasks/*.output,
	// cat */README.md) names each file and directory it matches.
	visit := func(word string, glob bool) {
		w := strings.ToLower(cleanPath(word))
		if w == "" {
			return
		}
		glob = glob && strings.ContainsAny(w, "*?[")
		// A word that reads as a path is also compared as the absolute
		// path it names from the working directory: cat src/app.py in a
		// directory a clone filled (git clone URL ., remembered by its
		// absolute path; or cd widget before, the step's cwd in it), a
		// glob of its files (cat *.md), cat ../app/x.sh of a file
		// remembered as /home/dev/app/x.sh, a Windows drive path.
		aw := ""
		if r, ok := rooted(w); ok {
			aw = path.Clean(r)
		} else if cwd != "" && pathLike(w) {
			aw = path.Join(cwd, w)
		}
		if !namesOnly {
			for _, f := range byBase[path.Base(w)] {
				if p := strings.ToLower(f.Path); namesFile(w, p) || aw != "" && namesFile(aw, p) {
					named(f)
				}
			}
		}
		if !namesOnly && glob {
			// In the session's order, as the rest: the state after the
			// envelope does not depend on a map's.
			for _, f := range e.sess.FileTaints {
				if !f.Dir && globNamesFile(w, strings.ToLower(f.Path)) {
					named(f)
				}
			}
		}
		for _, f := range dirs {
			d := strings.ToLower(f.Path)
			if namesDir(w, d) || glob && globNamesDir(w, d) ||
				aw != "" && (namesDir(aw, d) || glob && globNamesDir(aw, d)) {
				named(f)
			}
		}
	}
	words(visit)
	// A search reads everything under its roots: a clone there, or in
	// the working directory a search of it reads (relative names are the
	// working directory's), and the files a fetch saved there. Where the
	// host said its working directory (metadata.cwd), a root and a file
	// are also compared as absolute paths: a search of the project by its
	// absolute path reads the clone remembered as vendor/x, and a search
	// of "." a file remembered by its absolute path.
	for _, root := range roots {
		everywhere := root == "/" || root == "~" || root == "~/"
		r := strings.ToLower(cleanPath(root))
		here := r == "" // ".", "..", "./.": the working directory, or above it
		glob := strings.ContainsAny(r, "*?[")
		abs := ""
		if cwd != "" && !glob && !strings.HasPrefix(strings.TrimSpace(root), "~") && !strings.HasPrefix(strings.TrimSpace(root), "$") {
			abs = absPath(cwd, strings.ToLower(strings.ReplaceAll(strings.TrimSpace(root), "\\", "/")))
		}
		for _, f := range e.sess.FileTaints {
			p := strings.ToLower(f.Path)
			switch {
			case background(f):
			case everywhere:
				named(f)
			case here, glob && path.IsAbs(r) != path.IsAbs(p):
				if !path.IsAbs(p) {
					named(f)
				}
			case glob:
				if globNamesRoot(r, p) {
					named(f)
				}
			case p == r || strings.HasPrefix(p, r+"/") || f.Dir && namesDir(r, p):
				named(f)
			}
			if abs != "" && !background(f) {
				if fp := absPath(cwd, p); fp == abs || abs == "/" || strings.HasPrefix(fp, abs+"/") {
					named(f)
				}
			}
		}
	}
}

// commandDir is the directory a call's command runs in: its working
// directory argument (Codex's workdir) from cwd, when it has one; cwd
// otherwise ("" when neither is absolute).
func commandDir(t *ToolView, cwd string) string {
	for _, k := range dirArgs {
		d, ok := t.Args[k].(string)
		if d = strings.ToLower(strings.ReplaceAll(strings.TrimSpace(d), "\\", "/")); !ok || d == "" || len(d) > maxCwdBytes {
			continue
		}
		if r, ok := rooted(d); ok {
			return path.Clean(r)
		}
		if cwd != "" {
			return path.Join(cwd, d)
		}
		return ""
	}
	return cwd
}

// absPath is p (lower-cased, with slashes) from the absolute directory
// cwd (rooted).
func absPath(cwd, p string) string {
	if r, ok := rooted(p); ok {
		return path.Clean(r)
	}
	return path.Join(cwd, p)
}

// rooted is an absolute path p (lower-cased, with slashes) in one form for
// both systems: "/home/dev/app" as it is, a Windows drive path
// "c:/users/dev/app" as "/c:/users/dev/app"; ok false for a relative path.
func rooted(p string) (string, bool) {
	switch {
	case strings.HasPrefix(p, "/"):
		return p, true
	case len(p) >= 3 && p[1] == ':' && p[2] == '/' && p[0] >= 'a' && p[0] <= 'z':
		return "/" + p, true
	}
	return "", false
}

// maxCwdBytes bounds the working directory a step may say (Linux's
// PATH_MAX): each search root and remembered path is joined to it, so a
// megabyte of it would cost that per pair.
const maxCwdBytes = 4096

// workingDir is the step's working directory (metadata.cwd) as an
// absolute path (rooted), lower-cased as remembered paths are compared; ""
// when the envelope says none, or one not absolute or longer than
// maxCwdBytes.
func workingDir(req *acs.Request) string {
	if req == nil || len(req.Params.Metadata.Cwd) > maxCwdBytes {
		return ""
	}
	d, ok := rooted(strings.ToLower(strings.ReplaceAll(strings.TrimSpace(req.Params.Metadata.Cwd), "\\", "/")))
	if !ok {
		return ""
	}
	return path.Clean(d)
}

// pathLike reports whether a relative word (cleaned) reads as a path
// rather than a command's word: it holds a separator or a dot (src/app.py,
// README.md, .env). A bare name (Makefile) does not.
func pathLike(w string) bool {
	return !strings.HasPrefix(w, "-") && !strings.Contains(w, "://") && strings.ContainsAny(w, "./")
}

// globNamesRoot reports whether a search root that is a glob (rg TODO *,
// ls -R w*/) matches the first components of the remembered path p, or
// all of it: a search of it reads p.
func globNamesRoot(r, p string) bool {
	rs, ps := strings.Split(strings.TrimPrefix(r, "/"), "/"), strings.Split(strings.TrimPrefix(p, "/"), "/")
	if len(rs) > len(ps) {
		return false
	}
	for i, c := range rs {
		if ok, err := path.Match(c, ps[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

// searchRoots are the directories a call reads everything under: a tool
// classed searches, its path (the working directory, ".", when it names
// none); a command line's recursive searches (shellcmd.SearchRoots).
func searchRoots(t *ToolView) []string {
	var roots []string
	if slices.Contains(t.Classes, classSearches) {
		// Claude Code's path; Cursor's target_directories, and the
		// directory before the first glob of its include_pattern.
		if p, ok := t.Args["path"].(string); ok && strings.TrimSpace(p) != "" {
			roots = append(roots, p)
		}
		EachString(t.Args["target_directories"], func(d string) { roots = append(roots, d) })
		if inc, ok := t.Args["include_pattern"].(string); ok {
			if i := strings.IndexAny(inc, "*?["); i >= 0 {
				inc = inc[:i]
			}
			if d := path.Dir(strings.TrimSuffix(inc, "/") + "/x"); strings.TrimSpace(inc) != "" && d != "." {
				roots = append(roots, d)
			}
		}
		if len(roots) == 0 {
			roots = append(roots, ".")
		}
	}
	eachCommand(t, func(line string) { roots = append(roots, shellcmd.SearchRoots(line)...) },
		func(argv []string) { roots = append(roots, shellcmd.ArgvSearchRoots(argv)...) }, func() {})
	return roots
}

// globPattern is a Glob's pattern from where it searches: its path and
// pattern joined ("" for a tool not classed lists_names, or no pattern).
func globPattern(t *ToolView) string {
	if !slices.Contains(t.Classes, classListsNames) {
		return ""
	}
	pat, _ := t.Args["pattern"].(string)
	if pat == "" {
		return ""
	}
	if p, ok := t.Args["path"].(string); ok && cleanPath(p) != "" {
		return path.Join(p, pat)
	}
	return pat
}

// noticeWords calls fn with the words of a userMessage's text parts that
// are not the user's (labelled, and not user_input or system), and with
// the path each of its file parts attaches, whoever's: an attached file's
// content enters the context (Claude Code's @notes.md), and the user
// naming a file the page wrote does not make what it says the user's.
func (e *evalCtx) noticeWords(fn func(string)) {
	p, _ := e.in.Payload.(map[string]any)
	parts, _ := p["content"].([]any)
	for _, part := range parts {
		pm, _ := part.(map[string]any)
		prov, _ := pm["provenance"].(map[string]any)
		origin, _ := prov["origin"].(string)
		value, _ := pm["value"].(string)
		switch {
		case pm["type"] == "file":
			fn(value)
		case pm["type"] == "text" && origin != "" && origin != "user_input" && origin != "system":
			eachWord(value, fn)
		}
	}
}

// globNamesFile reports whether the glob w matches the remembered file p,
// compared over the components both have at their ends (tasks/*.output
// and /tmp/…/tasks/bt2kelt7i.output; *.output and bt2kelt7i.output).
func globNamesFile(w, p string) bool {
	ws, ps := strings.Split(w, "/"), strings.Split(p, "/")
	n := min(len(ws), len(ps))
	ok, err := path.Match(strings.Join(ws[len(ws)-n:], "/"), strings.Join(ps[len(ps)-n:], "/"))
	return err == nil && ok
}

// namesFile reports whether the cleaned word w names the remembered file
// p: the same path, a longer path ending with it, or its end.
func namesFile(w, p string) bool {
	return endsWithPath(w, p) || endsWithPath(p, w)
}

// namesDir reports whether the cleaned word w names the remembered
// directory d or something under it: d itself or a path under it, a
// longer path ending with it or passing through it (d relative), or, for
// w relative, a path from the directory d is in (its base name first).
func namesDir(w, d string) bool {
	if w == d || strings.HasPrefix(w, d+"/") || endsWithPath(w, d) {
		return true
	}
	if d[0] != '/' && strings.Contains(w, "/"+d+"/") {
		return true
	}
	if w[0] == '/' {
		return false
	}
	// A relative w from a directory d is under (widget/x for widget; for
	// d absolute, also a path from further up: app/vendor/w/x, as ~/ or
	// $HOME/ leave ~/app/vendor/w/x), d's last components first.
	for i := len(d) - 1; i >= 0; i-- {
		if d[i] != '/' {
			continue
		}
		if s := d[i+1:]; s != "" && (w == s || strings.HasPrefix(w, s+"/")) {
			return true
		}
		if d[0] != '/' {
			break // d relative: its base name only, as before
		}
	}
	base := path.Base(d)
	return w == base || strings.HasPrefix(w, base+"/")
}

// endsWithPath reports whether the path a ends with the path b, at a
// component boundary.
func endsWithPath(a, b string) bool {
	if !strings.HasSuffix(a, b) {
		return false
	}
	i := len(a) - len(b)
	return i == 0 || b[0] == '/' || a[i-1] == '/'
}

// eachCallWord calls fn with every word of the call's command line and
// string arguments (eachWord).
func eachCallWord(t *ToolView, fn func(string)) {
	eachWord(t.RawCommand, fn)
	EachString(t.Args, func(s string) { eachWord(s, fn) })
}

// eachWord calls fn with every word of s, split at white space and shell
// punctuation.
func eachWord(s string, fn func(string)) {
	for _, w := range strings.FieldsFunc(s, func(r rune) bool {
		return strings.ContainsRune(" \t\r\n;&|()<>`\"'=,", r)
	}) {
		fn(w)
	}
}

// EachString calls fn with every string in an argument value, objects'
// members in the order of their names (the decision must not follow a
// map's order).
func EachString(v any, fn func(string)) {
	switch v := v.(type) {
	case string:
		fn(v)
	case []any:
		for _, x := range v {
			EachString(x, fn)
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			EachString(v[k], fn)
		}
	}
}

// pathParts is ToolView.PathParts: the names along every path the call's
// string arguments and command line name. A word is a path when it holds
// a separator, '/' or a Windows '\'; a URL's words are not (its path is
// on a server, and a fetch taints by its own source), but a file: URI's
// are (fileURI).
func pathParts(t *ToolView) []string {
	var out []string
	visit := func(word string) {
		if f, ok := fileURI(word); ok {
			word = f
		}
		if !strings.ContainsAny(word, `/\`) || strings.Contains(word, "://") {
			return
		}
		for _, part := range strings.FieldsFunc(word, func(r rune) bool { return r == '/' || r == '\\' }) {
			switch part {
			case ".", "..", "~":
				continue
			}
			out = append(out, part)
		}
	}
	eachCallWord(t, visit)
	if out == nil {
		return []string{}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// backgroundAnnounce is how a shell tool's result says the command goes on
// in the background (Claude Code: "Command running in background with ID:
// bt2kelt7i. Output is being written to: /tmp/claude-1000/…/bt2kelt7i.output"),
// and the file it writes.
var (
	backgroundAnnounce = regexp.MustCompile(`(?i)running in (?:the )?background with id:? ([A-Za-z0-9_.-]{1,64})`)
	backgroundFile     = regexp.MustCompile(`(?i)output is being written to:? (\S{1,1000})`)
)

// backgroundOutputs are the handles under which the output of a call whose
// result says it went on in the background can be read later — its task id
// (Claude Code's backgroundTaskId: TaskOutput and BashOutput name it), the
// file the output is written to, and the id's own .output file — as files
// carrying label: what the command fetches arrives after its result, when a
// call reads one of them, and the label is set again then.
func backgroundOutputs(payload any, label, source string) []turnstate.FileTaint {
	var out []turnstate.FileTaint
	for _, n := range slices.Concat(announcements(payload)...) {
		files := []string{n}
		if !strings.Contains(n, "/") && !strings.HasSuffix(n, ".output") {
			files = append(files, n+".output") // a task id: its output file too
		}
		for _, f := range files {
			out = appendFile(out, turnstate.FileTaint{Label: label, Path: f, Source: source + backgroundSuffix})
		}
	}
	return out
}

// announcements are, for each output of a result that says a command
// went on in the background, the names it gives: the host's own field
// (backgroundTaskId) — what the command printed (stdout) is the page's,
// whatever it says — or the task id and output file a text that is the
// announcement alone gives (announced).
func announcements(payload any) [][]string {
	p, _ := payload.(map[string]any)
	outputs, _ := p["outputs"].([]any)
	var out [][]string
	for _, o := range outputs {
		om, _ := o.(map[string]any)
		switch v := om["value"].(type) {
		case map[string]any:
			if id, ok := v["backgroundTaskId"].(string); ok {
				out = append(out, []string{id})
			}
		case string:
			if a := announced(v); len(a) > 0 {
				out = append(out, a)
			}
		}
	}
	return out
}

// backgroundSuffix marks the source of a file remembered for a background
// task (rememberFiles keeps at most maxBackgroundFiles of them).
const backgroundSuffix = ":background"

// background reports whether a file was remembered for a background task.
func background(f turnstate.FileTaint) bool { return strings.HasSuffix(f.Source, backgroundSuffix) }

// maxBackgroundFiles bounds the files remembered for background tasks, so
// that results announcing tasks — a host sending text can be sent a page
// that is nothing but an announcement — cannot push the files fetches
// wrote out of the session's turnstate.MaxFileTaints.
const maxBackgroundFiles = 6

// announced are the task id and output file a text announces. Such a
// result is the announcement and little else: a longer text, or one that
// does not start with it, is a page that quotes it — whose words would
// otherwise take the place of the files remembered (at most
// turnstate.MaxFileTaints).
func announced(text string) []string {
	text = strings.TrimSpace(text)
	if len(text) > maxAnnouncement {
		return nil
	}
	m := backgroundAnnounce.FindStringSubmatchIndex(text)
	if m == nil || !strings.HasPrefix(strings.ToLower(text[:m[0]]), "command") || m[0] > len("command ") {
		return nil
	}
	out := []string{strings.TrimRight(text[m[2]:m[3]], ".")}
	if f := backgroundFile.FindStringSubmatch(text); f != nil {
		out = append(out, strings.TrimRight(f[1], ".,"))
	}
	return out
}

// maxAnnouncement bounds the text read as an announcement: Claude Code's
// is about 200 bytes, its output file's path included.
const maxAnnouncement = 2048

// fileURI is the path a file: URI names — file:///home/dev/a.ts,
// file://localhost/etc/x, file:///C:/src/a.ts (C:/src/a.ts) — with its
// percent-escapes decoded: an IDE's tools (Claude Code's getDiagnostics)
// name the files they read so. false for any other word.
func fileURI(w string) (string, bool) {
	const scheme = "file://"
	if len(w) < len(scheme) || !strings.EqualFold(w[:len(scheme)], scheme) {
		return "", false
	}
	p := w[len(scheme):]
	if i := strings.IndexByte(p, '/'); i > 0 {
		p = p[i:] // a host (localhost): the path is what follows
	} else if i < 0 {
		return "", false
	}
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i] // an editor's #L10, a ?line=10: not the file's name
	}
	if len(p) >= 3 && p[0] == '/' && p[2] == ':' {
		p = p[1:] // /C:/src: a Windows drive
	}
	return percentDecoded(p), true
}

// percentDecoded decodes a URI path's %XX escapes; a malformed one stays.
func percentDecoded(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	unhex := func(c byte) (byte, bool) {
		switch {
		case c >= '0' && c <= '9':
			return c - '0', true
		case c|0x20 >= 'a' && c|0x20 <= 'f':
			return c | 0x20 - 'a' + 10, true
		}
		return 0, false
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if ok1 && ok2 {
				b = append(b, hi<<4|lo)
				i += 2
				continue
			}
		}
		b = append(b, s[i])
	}
	return string(b)
}
