package shellcmd

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// MaxWrites bounds the files Writes returns.
const MaxWrites = 32

// downloaders save what they fetch to a file named after the URL unless
// told otherwise; curl does with -O (--remote-name).
var downloaders = map[string]bool{"wget": true, "wget2": true, "axel": true, "aria2c": true}

// Writes returns the files a command line writes, as the line spells them
// (unquoted; a relative path stays relative): the targets of its output
// redirections (>, >>, &>, >|, with or without a descriptor; /dev/…
// excepted), what tee writes, the value of an output option (-o, -O,
// --output, --output-document, attached or not), and the name a
// downloader gives a URL it saves without one (wget, wget2, axel,
// aria2c, curl -O or --remote-name): the URL's last path segment, or
// index.html; where cp, mv, install or ln puts a file: the
// destination, and the name each source gets in it; what a storage
// client downloads out of a bucket (bucketRead); and, where a fetch names
// its files elsewhere than on the line, the directory they land in
// (fetchwrites.go: a mirror, a list of URLs, a release's assets, another
// version control system's clone, a package or a model downloaded, a
// name made by an expansion). Sorted, distinct, at most MaxWrites. It
// over-approximates (an option's value is taken for a file whatever the
// program), and a line the parser refuses gives every word that is not
// an option.
func Writes(line string) []string {
	var w writes
	w.line(line, 0)
	return w.result()
}

// ArgvWrites is Writes of an argument vector (["wget", url] or
// ["bash", "-lc", "curl -o x url"]).
func ArgvWrites(argv []string) []string {
	var w writes
	w.call(argv, 0)
	return w.result()
}

type writes struct {
	files []string
	// partial holds, for the command being read (call), the literal
	// start of each word that holds an expansion (litPrefix; "" for the
	// others): where a file named by an expansion lands (unresolved).
	partial []string
	// chdir is where an earlier command of the line moved to (cd DIR,
	// pushd DIR), as it spells it, for a clone into "." after it; moved
	// that it moved somewhere the line does not spell (cd "$D", cd -).
	chdir string
	moved bool
}

// add adds a file written, or a directory filled (a trailing slash). The
// working directory, or one above it, spelt with dots only ("./", "..")
// is added only when filled wholly (a clone into it: fill): files of
// unknown names landing in it among the user's own (tar x from a pipe,
// unzip -d ., a release's assets) cannot be told from the user's, and
// remembering the whole project for them would make every later read of
// it a source.
func (w *writes) add(f string) {
	if f = strings.TrimSpace(f); strings.Trim(f, "./") != "" {
		w.put(f)
	}
}

// put adds f as it is, unless it is none, a device, already there or one
// past MaxWrites.
func (w *writes) put(f string) {
	if f == "" || strings.HasPrefix(f, "/dev/") || len(w.files) >= MaxWrites || slices.Contains(w.files, f) {
		return
	}
	w.files = append(w.files, f)
}

func (w *writes) result() []string {
	out := slices.Clone(w.files)
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return out
}

func (w *writes) line(line string, depth int) {
	if depth > maxDepth || len(line) > MaxParsed {
		w.words(line)
		return
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		w.words(line)
		return
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.BinaryCmd:
			if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
				w.script(n.Y, piped(n.X), depth)
			}
		case *syntax.Stmt:
			w.script(n, redirected(n), depth)
			for _, r := range n.Redirs {
				switch r.Op {
				case syntax.RdrOut, syntax.AppOut, syntax.RdrAll, syntax.AppAll, syntax.RdrClob:
					if s, ok := literal(r.Word); ok {
						w.add(s)
					} else if s, ok := knownDirWord(r.Word); ok {
						w.add(s)
					} else if d := unresolvedDir(litPrefix(r.Word)); d != "" {
						w.add(d) // > /tmp/page-$(date +%s).html
					}
				}
			}
		case *syntax.CallExpr:
			argv := make([]string, 0, len(n.Args))
			var partial []string
			for k, a := range n.Args {
				// A word holding an expansion is no file anyone can name;
				// its literal start may say where it is.
				s, ok := literal(a)
				if !ok {
					s, ok = knownDirWord(a)
				}
				if p := litPrefix(a); !ok && p != "" {
					if partial == nil {
						partial = make([]string, len(n.Args))
					}
					partial[k] = p
				}
				argv = append(argv, s)
			}
			prev := w.partial
			w.partial = partial
			w.call(argv, depth)
			w.partial = prev
			w.changedDir(argv)
		}
		return true
	})
}

// script adds what a shell writes that reads its script, in, on its
// standard input (bash <<'SH' … SH, echo "curl -o x …" | sh).
func (w *writes) script(st *syntax.Stmt, in *input, depth int) {
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || in == nil || !in.literal || len(call.Args) == 0 || depth >= maxDepth {
		return
	}
	argv := make([]string, len(call.Args))
	for i, a := range call.Args {
		argv[i], _ = literal(a)
	}
	// The shell, past any wrapper (sudo sh).
	for i, a := range argv {
		if shells[ProgramName(a)] {
			if shellReadsStdin(argv[i+1:]) {
				w.line(in.text, depth+1)
			}
			return
		}
	}
}

// words is the reading of a line the parser refused: every word that is
// not an option may be a file written.
func (w *writes) words(line string) {
	for _, s := range strings.FieldsFunc(line, func(r rune) bool {
		return strings.ContainsRune(" \t\r\n;&|()<>`$\"'{}\\", r)
	}) {
		if !strings.HasPrefix(s, "-") {
			w.add(s)
		}
	}
}

// call adds the files one simple command writes: its output options'
// values, tee's operands, a downloader's URL names, and the same of the
// script a shell runs with -c.
func (w *writes) call(argv []string, depth int) {
	for i, a := range argv {
		switch ProgramName(a) {
		case "git":
			switch GitSubcommand(argv[i:]) {
			case "clone":
				w.cloned(argv[i:], "clone")
				return
			case "submodule":
				if slices.Contains(argv[i:], "add") {
					w.cloned(argv[i:], "add")
					return
				}
			}
		case "gh":
			if j := slices.Index(argv[i:], "clone"); j > 0 && slices.Contains(argv[i:i+j], "repo") {
				w.cloned(argv[i:], "clone")
				return
			}
			if w.ghDownloaded(argv, i) {
				return
			}
		case "jj", "sl":
			if slices.Contains(argv[i:], "clone") {
				w.cloned(argv[i:], "clone")
				return
			}
		}
		if repoCopiers[packageName(a)] {
			// degit owner/repo DIR: the operands after the program.
			w.cloned(append([]string{""}, argv[i:]...), a)
			return
		}
	}
	// A storage client, past any wrapper (aws-vault exec p -- aws …) or
	// an interpreter running it (python3 -m awscli …).
	aws := awscliAt(argv)
	for i, a := range argv {
		client := argv[i:]
		if i+1 == aws {
			client = append([]string{"aws"}, argv[aws:]...)
		} else if !storageClients[ProgramName(a)] {
			continue
		}
		if ok, files := bucketRead(client); ok {
			for _, f := range files {
				w.value(f)
			}
			return
		}
		break
	}
	if i := programAt(argv); i >= 0 {
		if r, ok := runners[ProgramName(argv[i])]; ok && depth < maxDepth {
			// The shell line a runner's option gives it (nix-shell --run
			// '…', npm exec -c '…').
			for j := i + 1; j+1 < len(argv); j++ {
				if slices.Contains(r.lines, argv[j]) {
					w.line(argv[j+1], depth+1)
				}
			}
		}
		if copiers[ProgramName(argv[i])] {
			w.copied(argv[i+1:])
			return
		}
		if _, _, ok := copierAt(argv[i:]); ok {
			w.remoteCopied(argv[i:])
			return
		}
		if w.extracted(argv[i:]) || w.vcsCloned(argv, i) || w.packageFetched(argv, i) {
			return
		}
	}
	prog := ""          // the downloader or curl the words run, if any
	at := -1            // where it is
	remoteName := false // it names its file after the URL
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		name := ProgramName(a)
		switch {
		case a == "":
			// -o/tmp/$(date +%s).sh, --output="$DIR/x": where the
			// expansion leaves the file.
			w.unresolvedOutput(i, prog)
		case prog == "" && !isURL(a) && (downloaders[name] || name == "curl"):
			// The first (wget https://x.example/bin/curl runs wget).
			prog, at = name, i
		case name == "tee":
			for _, f := range argv[i+1:] {
				if !strings.HasPrefix(f, "-") {
					w.add(f)
				}
			}
			return
		case shells[name] && depth < maxDepth:
			for j := i + 1; j+1 < len(argv); j++ {
				if o := argv[j]; strings.HasPrefix(o, "-") && !strings.HasPrefix(o, "--") && strings.Contains(o, "c") {
					w.line(argv[j+1], depth+1)
					break
				}
			}
		case a == "--remote-name" || a == "--remote-name-all":
			remoteName = true
		case strings.EqualFold(a, "-Folder") || strings.EqualFold(a, "-LocalFolder"):
			// Read-S3Object -Folder, Copy-S3Object -LocalFolder: a directory.
			if i+1 < len(argv) {
				if v := argv[i+1]; v != "-" && !strings.HasPrefix(v, "-") && !isURL(v) {
					w.add(strings.TrimRight(v, "/") + "/")
				}
				i++
			}
		case strings.EqualFold(a, "-OutFile") || strings.EqualFold(a, "-File") || strings.EqualFold(a, "-LocalFile") ||
			strings.EqualFold(a, "-Destination"):
			// PowerShell's Invoke-WebRequest / Invoke-RestMethod (-OutFile),
			// Read-S3Object (-File), Copy-S3Object (-LocalFile),
			// Get-AzStorageBlobContent (-Destination).
			if i+1 < len(argv) {
				w.valueAt(argv, i+1)
				i++
			}
		case a == "--output" || a == "--output-document" || a == "--out":
			if i+1 < len(argv) {
				w.valueAt(argv, i+1)
				i++
			}
		case strings.HasPrefix(a, "--output=") || strings.HasPrefix(a, "--output-document=") || strings.HasPrefix(a, "--out="):
			w.value(a[strings.IndexByte(a, '=')+1:])
		case shortCluster(a) && (strings.HasSuffix(a, "o") || strings.HasSuffix(a, "O")):
			// -o FILE, -O FILE, -qO FILE; curl's -O takes no value.
			if prog == "curl" && strings.HasSuffix(a, "O") {
				remoteName = true
				continue
			}
			if i+1 < len(argv) {
				w.valueAt(argv, i+1)
				i++
			}
		case len(a) > 2 && (a[:2] == "-o" || a[:2] == "-O") && !shortCluster(a):
			w.value(a[2:])
		}
	}
	o := fetchOpts{dir: -1}
	if at >= 0 {
		o = downloadOptions(argv, at)
	}
	// Which option names the file is the downloader's own (downloadOptions:
	// wget's -o is its log, -O the page).
	if !(remoteName || o.remoteName || o.list || downloaders[prog] && !o.named) {
		return
	}
	w.downloaded(argv, max(at, 0), o)
}

// programAt is the index of the program a simple command runs, past
// wrappers (sudo, env, timeout …), their options and values and variable
// assignments; -1 for none.
func programAt(argv []string) int {
	for i, a := range argv {
		if a == "" || strings.HasPrefix(a, "-") || strings.Contains(a, "=") || strings.Trim(a, "0123456789.smhd") == "" ||
			wrappers[ProgramName(a)] {
			continue
		}
		return i
	}
	return -1
}

// copiers put a file's content under another name: the copy says what
// the file said.
var copiers = map[string]bool{"cp": true, "mv": true, "install": true, "ln": true}

// copyValueOptions are the copiers' options that take the next word as
// their value (GNU coreutils).
var copyValueOptions = map[string]bool{"-S": true, "--suffix": true, "-m": true, "--mode": true,
	"-o": true, "--owner": true, "-g": true, "--group": true}

// copied adds what cp, mv, install or ln writes: the destination (the
// last operand, or the -t/--target-directory value) and, as the
// destination may be a directory, the name each source gets in it.
func (w *writes) copied(args []string) {
	var operands []string
	dest := ""
	recursive := false // cp -r, -R, -a: a directory's copy is a directory
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--recursive" || a == "--archive" || shortCluster(a) && strings.ContainsAny(a[1:], "rRa"):
			recursive = true
		case a == "--":
			operands = append(operands, args[i+1:]...)
			i = len(args)
		case a == "-t" || a == "--target-directory":
			if i+1 < len(args) {
				dest = args[i+1]
				i++
			}
		case strings.HasPrefix(a, "--target-directory="):
			dest = a[len("--target-directory="):]
		case copyValueOptions[a]:
			i++
		case strings.HasPrefix(a, "-") && a != "-":
		default:
			operands = append(operands, a)
		}
	}
	if dest == "" {
		if len(operands) < 2 {
			return
		}
		dest, operands = operands[len(operands)-1], operands[:len(operands)-1]
	}
	if dest == "" {
		return
	}
	// A recursive copy's entries are directories (a file among them
	// named as one is named all the same): cp -r widget /tmp/x makes
	// /tmp/x the copy, or /tmp/x/widget when /tmp/x was there.
	entry := ""
	if recursive {
		entry = "/"
	}
	switch {
	case strings.Trim(dest, "./") == "":
		// Not the working directory itself (cp x . or ./): the names
		// the sources get in it are what is written.
	case recursive && len(operands) == 1 && !strings.HasSuffix(dest, "/") && !sharedDirs[strings.TrimRight(dest, "/")]:
		w.add(dest + "/")
	default:
		w.add(dest)
	}
	for _, src := range operands {
		if b := path.Base(strings.TrimRight(src, "/")); b != "" && b != "." && b != "/" && b != ".." {
			w.add(strings.TrimRight(dest, "/") + "/" + b + entry)
		}
	}
}

// sharedDirs are directories a recursive copy's destination names as the
// place its copy goes, not as the copy: remembering one whole would name
// every file in it.
var sharedDirs = map[string]bool{"/": true, "/tmp": true, "/var/tmp": true, "~": true, "$HOME": true, "${HOME}": true,
	"$TMPDIR": true, "${TMPDIR}": true, "/dev/shm": true}

// cloneValueOptions are git clone's options that take the next word as
// their value.
var cloneValueOptions = map[string]bool{
	"-o": true, "--origin": true, "-b": true, "--branch": true, "-u": true, "--upload-pack": true,
	"--reference": true, "--reference-if-able": true, "--separate-git-dir": true, "--depth": true,
	"--shallow-since": true, "--shallow-exclude": true, "-c": true, "--config": true, "--template": true,
	"-j": true, "--jobs": true, "--filter": true, "--server-option": true, "--bundle-uri": true, "--ref-format": true,
	"--name": true, "--remote": true, // git submodule add --name; jj git clone --remote
}

// cloned adds the directory a clone writes (git clone REPO [DIR], gh repo
// clone REPO [DIR], git submodule add REPO [DIR], jj git clone, sl
// clone), its operands after the word cmd: DIR, or the repository's
// name. It is added with a trailing slash, which says it is a directory
// (DirWritten).
func (w *writes) cloned(argv []string, cmd string) {
	var operands []string
	after := false
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case !after:
			after = a == cmd
		case a == "--":
		case cloneValueOptions[a]:
			i++
		case strings.HasPrefix(a, "-"):
		default:
			operands = append(operands, a)
		}
	}
	switch {
	case len(operands) >= 2:
		w.fill(strings.TrimRight(operands[1], "/")+"/", argv, cmd, "-C")
	case len(operands) == 1:
		if name := repoName(operands[0]); name != "" {
			w.add(name + "/")
		}
	}
}

// repoName is the directory git names a clone of repo after: the last
// component of its path (of owner/name, a URL or host:path), without .git.
func repoName(repo string) string {
	repo = strings.TrimSuffix(strings.TrimRight(repo, "/"), "/.git")
	if i := strings.LastIndexAny(repo, "/:"); i >= 0 {
		repo = repo[i+1:]
	}
	repo = strings.TrimSuffix(repo, ".git")
	if repo == "" || repo == "." || repo == ".." {
		return ""
	}
	return repo
}

// DirWritten reports whether a path Writes returned is a directory a
// command filled (a clone), and gives it without its trailing slash.
func DirWritten(p string) (string, bool) {
	if d, ok := strings.CutSuffix(p, "/"); ok && d != "" {
		return d, true
	}
	return p, false
}

// value adds an output option's value: not "-" (standard output), an
// option or a URL.
func (w *writes) value(v string) {
	if v != "-" && !strings.HasPrefix(v, "-") && !isURL(v) {
		w.add(v)
	}
}

// shortCluster reports whether a is a cluster of short options: a dash
// and letters only (-q, -qO, -fsSL).
func shortCluster(a string) bool {
	if len(a) < 2 || a[0] != '-' || a[1] == '-' {
		return false
	}
	for _, r := range a[1:] {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

func isURL(s string) bool {
	i := strings.Index(s, "://")
	return i > 0 && !strings.ContainsAny(s[:i], "/ ")
}

// urlName is the file a downloader names a URL's content: its path's last
// segment, or index.html for a path that ends in '/' or is empty.
func urlName(raw string) string {
	p := raw[strings.Index(raw, "://")+3:]
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	i := strings.IndexByte(p, '/')
	if i < 0 || strings.HasSuffix(p, "/") {
		return "index.html" // no path, or a directory's
	}
	return path.Base(p[i:])
}

// changedDir notes where a cd or pushd (argv) moves the rest of the line:
// a clone into "." after it fills that directory (add).
func (w *writes) changedDir(argv []string) {
	if len(argv) == 0 {
		return
	}
	switch ProgramName(argv[0]) {
	case "cd", "pushd", "popd", "chdir", "set-location":
	default:
		return
	}
	var ops []string
	for _, a := range argv[1:] {
		if !strings.HasPrefix(a, "-") || a == "-" {
			ops = append(ops, a)
		}
	}
	switch {
	case len(ops) != 1 || ops[0] == "" || ops[0] == "-" || ProgramName(argv[0]) == "popd":
		w.moved = true // cd, cd -, cd "$D", popd: somewhere the line does not say
	case path.IsAbs(ops[0]) || strings.HasPrefix(ops[0], "~"):
		w.chdir = ops[0]
	default:
		w.chdir = path.Join(w.chdir, ops[0])
	}
}

// knownDirWord reads a word that starts with the working directory or
// the home directory named by the shell — $PWD, ${PWD}, $(pwd), `pwd`,
// $HOME, ${HOME}, quoted or not — and goes on literally, as the path it
// names from there: "." or "~" and the rest ("$PWD/install.sh" is
// ./install.sh, "$(pwd)" the working directory). false for any other.
func knownDirWord(w *syntax.Word) (string, bool) {
	var parts []syntax.WordPart
	for _, p := range w.Parts {
		if q, ok := p.(*syntax.DblQuoted); ok {
			parts = append(parts, q.Parts...)
		} else {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return "", false
	}
	var b strings.Builder
	switch p := parts[0].(type) {
	case *syntax.ParamExp:
		if p.Param == nil || p.Excl || p.Length || p.Width || p.Index != nil || p.Slice != nil || p.Repl != nil || p.Names != 0 || p.Exp != nil {
			return "", false
		}
		switch p.Param.Value {
		case "PWD":
			b.WriteString(".")
		case "HOME":
			b.WriteString("~")
		default:
			return "", false
		}
	case *syntax.CmdSubst:
		if len(p.Stmts) != 1 || len(p.Stmts[0].Redirs) != 0 {
			return "", false
		}
		c, ok := p.Stmts[0].Cmd.(*syntax.CallExpr)
		if !ok || len(c.Args) != 1 || len(c.Assigns) != 0 {
			return "", false
		}
		if s, ok := literal(c.Args[0]); !ok || s != "pwd" {
			return "", false
		}
		b.WriteString(".")
	default:
		return "", false
	}
	for _, p := range parts[1:] {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(p.Value))
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		default:
			return "", false
		}
	}
	s := b.String()
	if len(s) > 1 && s[1] != '/' {
		return "", false // $PWDX, ${HOME}x: another name
	}
	return s, true
}

// fill adds the directory d a clone fills wholly ("." is the clone), from
// where the program's option opt (git -C DIR, hg --cwd DIR) before its
// command cmd moves it, if it does.
func (w *writes) fill(d string, argv []string, cmd, opt string) {
	chdir, moved := w.chdir, w.moved
	for i := 1; opt != "" && i < len(argv) && argv[i] != cmd; i++ {
		j, v, ok := optAt(argv, i, opt, "")
		if opt[1] == '-' {
			j, v, ok = optAt(argv, i, "", opt)
		}
		if !ok {
			continue
		}
		if j >= 0 {
			v = argv[j]
		}
		switch {
		case v == "":
			w.moved = true
		case path.IsAbs(v) || strings.HasPrefix(v, "~"):
			w.chdir = v
		default:
			w.chdir = path.Join(w.chdir, v)
		}
	}
	switch d = strings.TrimSpace(d); {
	case strings.Trim(d, "./") != "":
		w.add(d)
	case w.moved:
		// cd "$D" && git clone URL .: nowhere known.
	case w.chdir != "":
		// cd /tmp/w && git clone URL .: the clone is /tmp/w, not the
		// directory the step runs in.
		w.put(strings.TrimRight(path.Join(w.chdir, d), "/") + "/")
	default:
		w.put(d)
	}
	w.chdir, w.moved = chdir, moved
}
