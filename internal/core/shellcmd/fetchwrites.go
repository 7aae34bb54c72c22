package shellcmd

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// What a fetch writes under names the line does not spell: a mirror's
// tree, a list of URLs read from a file, a release's assets, another
// version control system's clone, a package or a model downloaded. Where
// the names cannot be known, the directory they land in is remembered
// (with a trailing slash, as a clone's: DirWritten); where they can, the
// names. Where that directory is the one the command runs in, nothing
// is: the files land among the user's own (writes.add).

// litPrefix is the literal text a word holding an expansion starts with
// (/tmp/ of /tmp/$(date +%s).sh, page- of "page-$i.html"), "" when it
// starts with the expansion ("$OUT", ${DIR}/x).
func litPrefix(w *syntax.Word) string {
	s, _ := wordPrefix(w, false)
	return s
}

// unresolvedDir is the directory a file lands in whose name is an
// expansion starting with prefix (litPrefix): the directory the literal
// part names (/tmp/ for /tmp/$(date +%s).sh: any file under it may be
// the one written — fail closed, at the cost of naming the directory's
// other files); "" for a name with literal text but no directory
// (page-$i.html: the working directory, among the user's files), when
// nothing is literal
// ("$OUT": the file may be anywhere, and no directory remembered would
// be the right one) or the literal part is the root alone (/$(x): every
// file).
func unresolvedDir(prefix string) string {
	if prefix == "" {
		return ""
	}
	i := strings.LastIndexByte(prefix, '/')
	if i < 0 {
		return "" // the working directory, among the user's files (writes.add)
	}
	if strings.Trim(prefix[:i+1], "/") == "" {
		return ""
	}
	return prefix[:i+1]
}

// unresolved is unresolvedDir of the word argv[j] of the command being
// read, when it holds an expansion; "" otherwise.
func (w *writes) unresolved(j int) string {
	if j < 0 || j >= len(w.partial) {
		return ""
	}
	return unresolvedDir(w.partial[j])
}

// valueAt adds the file an output option's value names, argv[j]: the
// file, or where an expansion in its name leaves it (unresolved).
func (w *writes) valueAt(argv []string, j int) {
	if argv[j] != "" {
		w.value(argv[j])
		return
	}
	if d := w.unresolved(j); d != "" {
		w.add(d)
	}
}

// dirAt adds the directory argv[j] names, or the one an expansion in it
// leaves the files under (unresolved): a directory a command fills.
func (w *writes) dirAt(argv []string, j int) {
	if argv[j] != "" {
		w.dir(argv[j])
		return
	}
	if d := w.unresolved(j); d != "" {
		w.add(d)
	}
}

// dir adds d as a directory filled, unless it is the working directory
// ("" or ".": among the user's files, writes.add), "-", an option or a
// URL.
func (w *writes) dir(d string) {
	if d == "-" || strings.HasPrefix(d, "-") || isURL(d) {
		return
	}
	if d = strings.TrimRight(d, "/"); d == "" || d == "." {
		return // the working directory, among the user's files (writes.add)
	}
	w.add(d + "/")
}

// unresolvedOutput adds where an output option whose value is attached
// and holds an expansion leaves its file (--output=/tmp/$(date).sh,
// -o/tmp/$N.sh): the word is argv[i], of which only its literal start
// is known.
func (w *writes) unresolvedOutput(i int, prog string) {
	if i >= len(w.partial) {
		return
	}
	p := w.partial[i]
	for _, o := range []string{"--output=", "--output-document=", "--out="} {
		if v, ok := strings.CutPrefix(p, o); ok {
			if d := unresolvedDir(v); d != "" {
				w.add(d)
			}
			return
		}
	}
	if len(p) > 2 && (p[:2] == "-o" || p[:2] == "-O" && prog != "curl") && !shortCluster(p) {
		if d := unresolvedDir(p[2:]); d != "" {
			w.add(d)
		}
	}
}

// shortOpts reads a cluster of short options as getopt does: the letters
// before the first one among values (flags), that letter (0 for none),
// and its value — the rest of the word, or the next word (next).
func shortOpts(a, values string) (flags string, letter byte, value string, next bool) {
	if len(a) < 2 || a[0] != '-' || a[1] == '-' {
		return "", 0, "", false
	}
	k := strings.IndexAny(a[1:], values)
	if k < 0 {
		return a[1:], 0, "", false
	}
	k++
	if k+1 == len(a) {
		return a[1:k], a[k], "", true
	}
	return a[1:k], a[k], a[k+1:], false
}

// longValue reads args[i] as the long option name with a value (--dir
// DIR, --dir=DIR): the index of the word holding the value and the value
// attached (with j == i), or j == -1 when args[i] is not that option.
func longValue(args []string, i int, name string) (j int, attached string) {
	switch a := args[i]; {
	case a == name && i+1 < len(args):
		return i + 1, ""
	case strings.HasPrefix(a, name+"="):
		return i, a[len(name)+1:]
	}
	return -1, ""
}

// downloadValues are, for each downloader, the letters of its short
// options that take a value (wget's -n takes the letters after it: -nH,
// -nd); a cluster's reading stops at the first.
var downloadValues = map[string]string{
	"wget": "oaeiBtOTwQPUlARDXIn", "wget2": "oaeiBtOTwQPUlARDXIn", "curl": "AbcCdDeEFhHKmoPQrtTuUwxXyYz",
	"aria2c": "dilojsxktmTMU", "axel": "onsHU",
}

// fetchOpts is what a downloader's options say of the files it writes.
type fetchOpts struct {
	dir        int    // the word naming the directory it saves into (-P, --directory-prefix, --output-dir, -d, --dir); -1 for none
	dirValue   string // the directory when attached to its option (-P/tmp/dl, --dir=/tmp/dl)
	named      bool   // an option names the file (wget -O, aria2c -o, axel -o), not the URL
	remoteName bool   // curl -O, --remote-name, --remote-name-all: the URL's name
	mirror     bool   // wget -r, -m, -x: a tree under a directory per host
	noHostDir  bool   // wget -nH, -nd: the tree is under the directory itself
	list       bool   // the URLs are in a file (-i, --input-file, curl -K, --config), which may name the files too
	unknown    bool   // names it cannot tell: the server's (curl -J, --content-disposition, --trust-server-names), other hosts' (-H), a torrent's
}

// downloadOptions reads the options of the downloader argv[at] runs
// (wget, wget2, curl, aria2c, axel).
func downloadOptions(argv []string, at int) fetchOpts {
	prog := ProgramName(argv[at])
	o := fetchOpts{dir: -1}
	// saveDir records the directory option's value: the word j, or the
	// value attached to the option's word i.
	saveDir := func(i, j int, attached string) {
		if j != i {
			o.dir = j
		} else if o.dirValue = attached; attached == "" {
			o.dirValue = "."
		}
	}
	for i := at + 1; i < len(argv); i++ {
		a := argv[i]
		if strings.HasPrefix(a, "--") {
			j, v, long := -1, "", ""
			for _, name := range downloadLongValues[prog] {
				if j, v = longValue(argv, i, name); j >= 0 {
					long = name
					break
				}
			}
			switch long {
			case "--directory-prefix", "--output-dir", "--dir":
				saveDir(i, j, v)
			case "--input-file", "--config":
				o.list = true
			case "--torrent-file", "--metalink-file":
				o.unknown = true
			case "--output-document", "--out", "--output":
				o.named = true
			}
			if j > i {
				i = j
			}
			switch a {
			case "--recursive", "--mirror", "--force-directories":
				o.mirror = prog == "wget" || prog == "wget2"
			case "--no-host-directories", "--no-directories":
				o.noHostDir = true
			case "--content-disposition", "--trust-server-names", "--span-hosts", "--protocol-directories", "--remote-header-name":
				o.unknown = true
			case "--remote-name", "--remote-name-all":
				o.remoteName = true
			}
			continue
		}
		if strings.EqualFold(a, "-OutFile") {
			// PowerShell's wget and curl, Invoke-WebRequest's aliases.
			o.named = true
			i++
			continue
		}
		if !strings.HasPrefix(a, "-") {
			// aria2c's torrent, metalink or magnet: names it holds.
			o.unknown = o.unknown || prog == "aria2c" && (strings.HasPrefix(a, "magnet:") ||
				strings.HasSuffix(a, ".torrent") || strings.HasSuffix(a, ".metalink") || strings.HasSuffix(a, ".meta4"))
			continue
		}
		flags, letter, value, next := shortOpts(a, downloadValues[prog])
		switch prog {
		case "wget", "wget2":
			o.mirror = o.mirror || strings.ContainsAny(flags, "rmx")
			o.unknown = o.unknown || strings.Contains(flags, "H")
		case "curl":
			o.remoteName = o.remoteName || strings.Contains(flags, "O")
			o.unknown = o.unknown || strings.Contains(flags, "J")
		}
		if letter == 0 {
			continue
		}
		j := i
		if next {
			if i+1 >= len(argv) {
				continue
			}
			i++
			j, value = i, argv[i]
		}
		switch {
		case letter == 'n':
			o.noHostDir = o.noHostDir || value == "H" || value == "d"
		case letter == 'P' && prog != "curl", letter == 'd' && prog == "aria2c":
			if next {
				o.dir = j
			} else {
				o.dirValue = value
			}
		case letter == 'i', letter == 'K' && prog == "curl":
			o.list = true
		case (letter == 'T' || letter == 'M') && prog == "aria2c":
			o.unknown = true
		case letter == 'O' && prog != "curl", letter == 'o' && (prog == "aria2c" || prog == "axel"):
			o.named = true
		}
	}
	return o
}

// downloadLongValues are the downloaders' long options, taking a value,
// that downloadOptions reads.
var downloadLongValues = map[string][]string{
	"wget":   {"--directory-prefix", "--input-file", "--output-document"},
	"wget2":  {"--directory-prefix", "--input-file", "--output-document"},
	"curl":   {"--output-dir", "--config"},
	"aria2c": {"--dir", "--input-file", "--out", "--torrent-file", "--metalink-file"},
	"axel":   {"--output"},
}

// downloaded adds what a downloader (argv[at]) names after the URLs it
// fetches: a mirror's directory per host (wget -r: x.example/, under its
// -P prefix), or its prefix when -nH or -nd leave out the host's; the
// URLs' names; and the directory it saves into (none for the working
// directory) when the names cannot be told — the URLs are in a file (-i,
// curl -K: which may name the files too, as curl's output options), fed
// by xargs or parallel, or expansions (wget "$URL"), or the server names
// the file (curl -J, wget --content-disposition).
func (w *writes) downloaded(argv []string, at int, o fetchOpts) {
	saveDir := func() {
		switch {
		case o.dir >= 0:
			w.dirAt(argv, o.dir)
		case o.dirValue != "":
			w.dir(o.dirValue)
		}
	}
	urls, expansions := 0, 0
	for i, a := range argv {
		switch {
		case i > at && a == "" && i != o.dir:
			expansions++
		case isURL(a):
			urls++
		}
	}
	fed := slices.ContainsFunc(argv[:at], func(a string) bool { n := ProgramName(a); return n == "xargs" || n == "parallel" })
	unknown := o.unknown || o.list || fed || urls == 0 && expansions > 0
	if o.mirror {
		if o.noHostDir || unknown || urls == 0 {
			saveDir()
			return
		}
		prefix := o.dirValue
		if o.dir >= 0 {
			if prefix = argv[o.dir]; prefix == "" {
				saveDir() // -P "$DIR": where its expansion leaves it, if anywhere known
				return
			}
		}
		for _, a := range argv {
			if h := urlHost(a); h != "" {
				if prefix != "" && prefix != "." {
					h = strings.TrimRight(prefix, "/") + "/" + h
				}
				w.add(h + "/")
			}
		}
		return
	}
	for _, a := range argv {
		if isURL(a) {
			w.add(urlName(a))
		}
	}
	if unknown {
		saveDir()
	}
}

// urlHost is the directory wget -r names a URL's files under: its host,
// lower-cased, with a port that is not the scheme's own; "" for a word
// that is no URL.
func urlHost(raw string) string {
	if !isURL(raw) {
		return ""
	}
	i := strings.Index(raw, "://")
	scheme, h := strings.ToLower(raw[:i]), raw[i+3:]
	if j := strings.IndexAny(h, "/?#"); j >= 0 {
		h = h[:j]
	}
	if j := strings.LastIndexByte(h, '@'); j >= 0 {
		h = h[j+1:]
	}
	h = strings.ToLower(h)
	if host, port, ok := strings.Cut(h, ":"); ok && !strings.HasPrefix(h, "[") &&
		(port == "" || port == "80" && scheme == "http" || port == "443" && scheme == "https" || port == "21" && scheme == "ftp") {
		h = host
	}
	if h == "" || h == "." || h == ".." {
		return ""
	}
	return h
}

// optAt reads argv[i] as an option taking a value, spelt short (-D DIR,
// -DDIR) or long (--dir DIR, --dir=DIR), either "" for none: ok, and its
// value — the index j of the next word, or attached to the word (j -1).
func optAt(argv []string, i int, short, long string) (j int, attached string, ok bool) {
	a := argv[i]
	switch {
	case a == short && short != "" || a == long && long != "":
		if i+1 < len(argv) {
			return i + 1, "", true
		}
	case long != "" && strings.HasPrefix(a, long+"="):
		return -1, a[len(long)+1:], true
	case len(short) == 2 && len(a) > 2 && strings.HasPrefix(a, short):
		return -1, a[2:], true
	}
	return -1, "", false
}

// optDir adds the directory an option's value names (optAt's j or
// attached), dirAt's way.
func (w *writes) optDir(argv []string, j int, attached string) {
	if j >= 0 {
		w.dirAt(argv, j)
	} else {
		w.dir(attached)
	}
}

// optFile adds the file an option's value names (optAt's j or attached),
// valueAt's way.
func (w *writes) optFile(argv []string, j int, attached string) {
	if j >= 0 {
		w.valueAt(argv, j)
	} else {
		w.value(attached)
	}
}

// operands are the words of args that are neither options nor the values
// of those in values; all the words after "--".
func operands(args []string, values map[string]bool) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			return append(out, args[i+1:]...)
		case values[a]:
			i++
		case strings.HasPrefix(a, "-") && a != "-":
		default:
			out = append(out, a)
		}
	}
	return out
}

// ghValues are the options of gh release download and gh run download
// that take a value.
var ghValues = map[string]bool{"-R": true, "--repo": true, "-D": true, "--dir": true, "-O": true, "--output": true,
	"-p": true, "--pattern": true, "-A": true, "--archive": true, "-n": true, "--name": true}

// ghDownloaded adds what gh (argv[at]) downloads: a release's assets (gh
// release download: the file -O names, or, their names being the
// release's, the directory -D names; nothing without one), a run's
// artifacts (gh run download: one directory per artifact under -D's, or
// -D's itself for a single -n NAME: DIR/NAME/ for each of several), a
// gist (gh gist clone GIST [DIR]: a clone, named after the gist's id);
// false for gh's other commands.
func (w *writes) ghDownloaded(argv []string, at int) bool {
	ops := operands(argv[at+1:], ghValues)
	if len(ops) < 2 {
		return false
	}
	switch ops[0] + " " + ops[1] {
	case "gist clone":
		w.cloned(argv[at:], "clone")
		return true
	case "release download", "run download":
	default:
		return false
	}
	dir, dirValue, file, fileValue := -1, "", -1, ""
	var names []string
	for i := at + 1; i < len(argv) && argv[i] != "--"; i++ {
		j, v, ok := optAt(argv, i, "-D", "--dir")
		switch {
		case ok:
			dir, dirValue = j, v
		case ops[0] == "release":
			if j, v, ok = optAt(argv, i, "-O", "--output"); ok {
				file, fileValue = j, v
			}
		default:
			if j, v, ok = optAt(argv, i, "-n", "--name"); ok && j >= 0 {
				names = append(names, argv[j])
			} else if ok {
				names = append(names, v)
			}
		}
		if !ok && ghValues[argv[i]] {
			j = i + 1
		}
		if j > i {
			i = j
		}
	}
	base := dirValue
	if dir >= 0 {
		base = argv[dir]
	}
	switch {
	case file >= 0 || fileValue != "":
		w.optFile(argv, file, fileValue)
	case len(names) > 1 && (base != "" || dir < 0):
		for _, n := range names {
			if n != "" && !strings.ContainsAny(n, "/\\") && n != "." && n != ".." {
				w.dir(path.Join(base, n))
			}
		}
	case dir >= 0 || dirValue != "":
		w.optDir(argv, dir, dirValue)
	}
	return true
}

// vcsClone is how another version control system clones: the commands
// that do (a repository's files in a new directory: the last operand, or
// the source's last component), and their options — and the program's
// own, before the command — that take a value.
type vcsClone struct {
	cmds   []string
	values map[string]bool
}

// vcsClones are Mercurial's (hg clone SOURCE [DEST]; its -R, --cwd,
// --config … before it), Subversion's (svn checkout|co|export URL
// [PATH]), Bazaar's and Breezy's (bzr branch|checkout FROM [TO]), Darcs'
// (darcs clone|get REPO [DIR]) and Pijul's (pijul clone REMOTE [PATH]).
// Fossil's and CVS's are fossilCloned and cvsCheckedOut.
var vcsClones = map[string]vcsClone{
	"hg": {[]string{"clone"}, map[string]bool{"-u": true, "--updaterev": true, "-r": true, "--rev": true, "-b": true,
		"--branch": true, "-e": true, "--ssh": true, "--remotecmd": true, "--include": true, "--exclude": true,
		"-R": true, "--repository": true, "--cwd": true, "--config": true, "--encoding": true, "--encodingmode": true,
		"--color": true, "--pager": true}},
	"svn": {[]string{"checkout", "co", "export"}, map[string]bool{"-r": true, "--revision": true, "--depth": true,
		"--username": true, "--password": true, "--config-dir": true, "--config-option": true, "--native-eol": true}},
	"bzr": {[]string{"branch", "checkout", "co", "get", "clone"}, map[string]bool{"-r": true, "--revision": true,
		"--files-from": true, "-d": true, "--directory": true}},
	"darcs": {[]string{"clone", "get"}, map[string]bool{"-t": true, "--tag": true, "--to-match": true, "--to-patch": true,
		"--to-hash": true, "--context": true, "--repodir": true, "--remote-darcs": true}},
	"pijul": {[]string{"clone"}, map[string]bool{"--channel": true, "--change": true, "--state": true, "--path": true}},
}

// vcsCloned adds the directory a clone by another version control system
// (argv[at]) fills (vcsClones, fossilCloned, cvsCheckedOut); false when
// argv[at] runs none.
func (w *writes) vcsCloned(argv []string, at int) bool {
	name := ProgramName(argv[at])
	switch name {
	case "brz":
		name = "bzr"
	case "fossil":
		return w.fossilCloned(argv, at)
	case "cvs":
		return w.cvsCheckedOut(argv, at)
	}
	vc, ok := vcsClones[name]
	if !ok {
		return false
	}
	ops := operands(argv[at+1:], vc.values)
	if len(ops) < 2 || !slices.Contains(vc.cmds, ops[0]) {
		return false
	}
	srcs, dest, hasDest := ops[1:], "", false
	if len(srcs) > 1 && !(name == "svn" && isURL(srcs[len(srcs)-1])) {
		// The last operand is where it goes (svn checkout URL URL: both
		// sources, each in its own directory).
		srcs, dest, hasDest = srcs[:len(srcs)-1], srcs[len(srcs)-1], true
	}
	switch {
	case hasDest && dest == "":
		// hg clone URL "$DIR": where cannot be told.
	case hasDest && len(srcs) == 1:
		// hg clone URL .: hg, bzr, darcs and pijul clone, and svn export
		// without --force exports, only into a directory that is empty or
		// not there, which is then the clone, as git clone's. svn
		// checkout (and cvs, fossil open) check out among files already
		// there: "." is the user's files, not remembered.
		if name == "svn" && (ops[0] != "export" || slices.Contains(argv[at+1:], "--force")) {
			w.dir(dest)
			break
		}
		d := strings.TrimRight(dest, "/")
		if d == "" {
			d = "."
		}
		w.fill(d+"/", argv[at:], ops[0], map[string]string{"hg": "--cwd"}[name])
	default:
		// Each source under DEST (svn checkout URL... PATH), or in the
		// working directory, named after its last component.
		for _, src := range srcs {
			if n := sourceName(src); n != "" {
				w.dir(path.Join(dest, n))
			}
		}
	}
	return true
}

// sourceName is the directory a clone of src is named after: repoName of
// src without a URL's query and fragment (hg's #branch) or a peg revision
// (svn's @123).
func sourceName(src string) string {
	if i := strings.IndexAny(src, "?#"); i >= 0 {
		src = src[:i]
	}
	n := repoName(src)
	if i := strings.IndexByte(n, '@'); i > 0 {
		n = n[:i]
	}
	return n
}

// fossilValues are fossil clone's and fossil open's options that take a
// value.
var fossilValues = map[string]bool{"-A": true, "--admin-user": true, "-B": true, "--httpauth": true,
	"--ssh-command": true, "--ssl-identity": true, "--transport-command": true, "--workdir": true, "--repodir": true}

// fossilCloned adds what Fossil writes: fossil clone URI [FILE] the
// repository (FILE, else the URI's last component with .fossil) and,
// when it opens it (FILE omitted or --workdir DIR given, without
// --no-open), the check-out — DIR, or a directory named after the
// repository; fossil open REPO the check-out, in --workdir's DIR or the
// working directory.
func (w *writes) fossilCloned(argv []string, at int) bool {
	ops := operands(argv[at+1:], fossilValues)
	if len(ops) < 2 || ops[0] != "clone" && ops[0] != "open" {
		return false
	}
	workdir, attached := -1, ""
	for i := at + 1; i < len(argv); i++ {
		if j, v, ok := optAt(argv, i, "", "--workdir"); ok {
			workdir, attached = j, v
		}
	}
	opens := workdir >= 0 || attached != ""
	if ops[0] == "open" {
		if opens {
			w.optDir(argv, workdir, attached)
		}
		return true
	}
	name := sourceName(ops[1])
	name = strings.TrimSuffix(name, ".fossil")
	switch {
	case len(ops) > 2:
		w.value(ops[2])
	case name != "":
		w.add(name + ".fossil")
	}
	switch {
	case slices.Contains(argv[at+1:], "--no-open"):
	case opens:
		w.optDir(argv, workdir, attached)
	case len(ops) == 2 && name != "":
		w.add(name + "/")
	}
	return true
}

// cvsGlobalValues are cvs's options before its command that take a
// value; cvsValues those of checkout and export.
var (
	cvsGlobalValues = map[string]bool{"-d": true, "-T": true, "-e": true, "-s": true, "-z": true}
	cvsValues       = map[string]bool{"-d": true, "-r": true, "-D": true, "-j": true, "-k": true}
)

// cvsCheckedOut adds what cvs checkout (co, get) and cvs export write:
// the directory -d names, or each module's own; nothing with -p, which
// prints the files.
func (w *writes) cvsCheckedOut(argv []string, at int) bool {
	i := at + 1
	for ; i < len(argv) && strings.HasPrefix(argv[i], "-"); i++ {
		if cvsGlobalValues[argv[i]] {
			i++
		}
	}
	if i >= len(argv) || !slices.Contains([]string{"checkout", "co", "get", "export", "ex"}, argv[i]) {
		return false
	}
	args := argv[i+1:]
	if slices.Contains(args, "-p") {
		return true
	}
	for k := range args {
		if j, v, ok := optAt(args, k, "-d", ""); ok {
			if j >= 0 {
				w.dirAt(argv, i+1+j)
			} else {
				w.dir(v)
			}
			return true
		}
	}
	for _, m := range operands(args, cvsValues) {
		w.dir(m)
	}
	return true
}

// packageFetched adds what a package's or a model's downloader
// (argv[at]) puts on disk for the agent to read — pip download and pip
// wheel, npm pack of a registry's package, huggingface-cli and hf
// download, yt-dlp and youtube-dl, kaggle's downloads, gdown; false for
// anything else. go mod download is not one: the module cache it fills
// is read by the build, not named by the agent's reads, and a module
// that matters is run, which the window already judges. Nor is git lfs
// pull: it fills files of a clone already remembered, or the project's
// own.
func (w *writes) packageFetched(argv []string, at int) bool {
	name := ProgramName(argv[at])
	if interpreter(name) && at+2 < len(argv) && argv[at+1] == "-m" {
		at += 2 // python3 -m pip …
		name = ProgramName(argv[at])
	}
	args := argv[at+1:]
	sub := ""
	if ops := operands(args, nil); len(ops) > 0 {
		sub = ops[0]
	}
	switch {
	case (name == "pip" || name == "pip3" || strings.HasPrefix(name, "pip3.")) && (sub == "download" || sub == "wheel"):
		// pip download -d DIR, pip wheel -w DIR: the packages' files,
		// named by their versions, which the line need not say.
		short, long := "-d", "--dest"
		if sub == "wheel" {
			short, long = "-w", "--wheel-dir"
		}
		w.dirOption(argv, at, short, long)
	case name == "npm" && sub == "pack":
		w.npmPacked(argv, at)
	case (name == "huggingface-cli" || name == "hf") && sub == "download":
		w.hubDownloaded(argv, at)
	case name == "yt-dlp" || name == "youtube-dl":
		w.videoDownloaded(argv, at)
	case name == "kaggle":
		ops := operands(args, map[string]bool{"-p": true, "--path": true, "-f": true, "--file": true, "-c": true, "-d": true, "-v": true})
		if !slices.ContainsFunc(ops[:min(len(ops), 4)], func(o string) bool { return o == "download" || o == "output" || o == "pull" }) {
			return false
		}
		w.dirOption(argv, at, "-p", "--path")
	case name == "gdown":
		// gdown -O FILE (or DIR/); without it, the name Drive gives.
		for i := at + 1; i < len(argv); i++ {
			if j, v, ok := optAt(argv, i, "-O", "--output"); ok {
				if slices.Contains(args, "--folder") {
					w.optDir(argv, j, v)
				} else {
					w.optFile(argv, j, v)
				}
				return true
			}
		}
	default:
		return false
	}
	return true
}

// dirOption adds the directory the option short or long (-d, --dest) of
// argv[at]'s command names; nothing without one (the working directory).
func (w *writes) dirOption(argv []string, at int, short, long string) {
	for i := at + 1; i < len(argv); i++ {
		if j, v, ok := optAt(argv, i, short, long); ok {
			w.optDir(argv, j, v)
			return
		}
	}
}

// npmPacked adds the tarball npm pack writes of a registry's package:
// NAME-VERSION.tgz (scope-NAME-VERSION.tgz for @scope/NAME) in
// --pack-destination's directory or the working directory, for a spec
// with an exact version; that directory for any other (a tag, a range, a
// URL, a repository), whose version the line does not say. A spec that
// is a local path (., ./pkg) is the project's own package.
func (w *writes) npmPacked(argv []string, at int) {
	dest, attached := -1, ""
	for i := at + 1; i < len(argv); i++ {
		if j, v, ok := optAt(argv, i, "", "--pack-destination"); ok {
			dest, attached = j, v
		}
	}
	if slices.Contains(argv[at+1:], "--dry-run") {
		return
	}
	base := attached
	if dest >= 0 {
		base = argv[dest]
	}
	specs := operands(argv[at+1:], map[string]bool{"--pack-destination": true, "-w": true, "--workspace": true})
	for _, spec := range specs[1:] {
		switch {
		case spec == "" || spec == "." || strings.HasPrefix(spec, "./") || strings.HasPrefix(spec, "../") ||
			strings.HasPrefix(spec, "/") || strings.HasPrefix(spec, "~") || strings.HasPrefix(spec, "file:"):
		case npmTarball(spec) != "" && (dest < 0 || base != ""):
			w.add(path.Join(base, npmTarball(spec)))
		case dest >= 0:
			w.dirAt(argv, dest)
		case attached != "":
			w.dir(attached)
		}
	}
}

// npmTarball is the file npm pack names a package spec's tarball, for a
// spec with an exact version (left-pad@1.3.0, @scope/x@2.0.0-rc.1); ""
// for any other.
func npmTarball(spec string) string {
	at := strings.LastIndexByte(spec, '@')
	if at <= 0 {
		return ""
	}
	name, version := spec[:at], spec[at+1:]
	if version == "" || version[0] < '0' || version[0] > '9' || strings.ContainsAny(version, " <>=^~*|xX:/") ||
		strings.Count(version, ".") < 2 || strings.Contains(name, ":") {
		return ""
	}
	name = strings.TrimPrefix(name, "@")
	if strings.Count(name, "/") > 1 || name == "" {
		return ""
	}
	return strings.ReplaceAll(name, "/", "-") + "-" + version + ".tgz"
}

// hubValues are huggingface-cli's and hf's download options that take a
// value.
var hubValues = map[string]bool{"--repo-type": true, "--revision": true, "--include": true, "--exclude": true,
	"--cache-dir": true, "--local-dir": true, "--token": true, "--max-workers": true, "--local-dir-use-symlinks": true}

// hubDownloaded adds where huggingface-cli download and hf download put
// a repository's files: --local-dir's directory, or the repository's
// folder in the hub's cache (models--ORG--NAME/, datasets--…, spaces--…,
// wherever the cache is: a path through it names it).
func (w *writes) hubDownloaded(argv []string, at int) {
	kind := "model"
	for i := at + 1; i < len(argv); i++ {
		if j, v, ok := optAt(argv, i, "", "--local-dir"); ok {
			w.optDir(argv, j, v)
			return
		}
		if j, v, ok := optAt(argv, i, "", "--repo-type"); ok {
			if j >= 0 {
				v = argv[j]
			}
			kind = v
		}
	}
	ops := operands(argv[at+1:], hubValues)
	if len(ops) < 2 || ops[1] == "" || strings.Contains(ops[1], "..") {
		return
	}
	switch kind {
	case "model", "dataset", "space":
		w.add(kind + "s--" + strings.ReplaceAll(ops[1], "/", "--") + "/")
	}
}

// videoListings are yt-dlp's and youtube-dl's options that print what
// they find, or do nothing, instead of downloading: such a call writes
// only what a --write-… option asks for.
var videoListings = map[string]bool{"-F": true, "--list-formats": true, "-j": true, "--dump-json": true, "-J": true,
	"--dump-single-json": true, "-O": true, "--print": true, "-s": true, "--simulate": true, "--skip-download": true,
	"-g": true, "--get-url": true, "-e": true, "--get-title": true, "--list-subs": true, "--list-thumbnails": true,
	"--version": true, "-U": true, "--update": true, "-h": true, "--help": true}

// videoDownloaded adds where yt-dlp or youtube-dl puts what it
// downloads — a video, its subtitles or its description, text the agent
// reads: the file an output template (-o) names, or the directory its
// literal part names when it holds fields (subs/%(id)s.%(ext)s: subs/)
// and the working directory when that part has none; yt-dlp's -P
// directories; nothing with neither. A TYPE: prefix (subtitle:, -P
// temp:DIR) is left out.
func (w *writes) videoDownloaded(argv []string, at int) {
	if !slices.ContainsFunc(argv[at+1:], func(a string) bool { return strings.HasPrefix(a, "--write-") }) &&
		slices.ContainsFunc(argv[at+1:], func(a string) bool { return videoListings[a] }) {
		return
	}
	for i := at + 1; i < len(argv); i++ {
		j, v, ok := optAt(argv, i, "-o", "--output")
		isDir := false
		if !ok && ProgramName(argv[at]) == "yt-dlp" {
			j, v, ok = optAt(argv, i, "-P", "--paths")
			isDir = true
		}
		if !ok {
			continue
		}
		if j >= 0 {
			if v = argv[j]; v == "" {
				if d := w.unresolved(j); d != "" {
					w.add(d)
				}
				i = j
				continue
			}
			i = j
		}
		if k := strings.IndexByte(v, ':'); k > 1 && strings.Trim(v[:k], "abcdefghijklmnopqrstuvwxyz_") == "" {
			v = v[k+1:]
		}
		switch {
		case isDir:
			w.dir(v)
		case strings.Contains(v, "%"):
			if d := unresolvedDir(v[:strings.IndexByte(v, '%')]); d != "" {
				w.add(d)
			}
		default:
			w.value(v)
		}
	}
}
