// Package shellcmd tells which programs a shell command line runs, so that
// a catalog can say what a shell call does by what it runs (a curl brings a
// page into the session) rather than by the tool's name (Bash runs
// anything).
//
// The answer over-approximates, because it feeds fail-closed decisions: a
// program named through a variable or a substitution is Unknown, a line
// the parser refuses gives every word it holds, and the words after a
// wrapper (sudo, env, xargs, timeout, find -exec, …) all count, whether
// they are the program it runs or that program's arguments.
package shellcmd

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

const (
	// Unknown stands for a program the line names through a variable, a
	// substitution or an expansion ("$CURL" url, $(which curl) url): the
	// line runs something no reading of it can name.
	Unknown = "?"
	// MaxParsed is the longest command line parsed as shell; a longer one
	// gives every word it holds (fail closed) at a cost linear in its size.
	MaxParsed = 16 << 10
	// MaxPrograms bounds the names returned.
	MaxPrograms = 256
	// maxDepth bounds the nesting of sh -c and eval scripts read.
	maxDepth = 4
	// maxCalls bounds the commands one line is read for (collector.calls).
	maxCalls = 1024
	// maxWork bounds the words one line's readings look at, summed over
	// every command read, every line parsed and every tail read as words
	// (collector.work): a line of a few thousand words, read many ways,
	// would otherwise be looked at in full once per reading.
	maxWork = 1 << 17
)

// wrappers run the program their arguments name.
var wrappers = map[string]bool{
	"sudo": true, "doas": true, "su": true, "env": true, "xargs": true, "parallel": true, "time": true, "timeout": true,
	"nohup": true, "nice": true, "ionice": true, "stdbuf": true, "setsid": true, "chroot": true, "unbuffer": true,
	"exec": true, "command": true, "builtin": true, "watch": true, "strace": true, "ltrace": true, "flock": true,
	"find": true, "npx": true, "uvx": true, "pipx": true, "bunx": true, "busybox": true, "script": true, "caffeinate": true,
	"proxychains": true, "proxychains4": true, "torsocks": true, "firejail": true, "unshare": true, "nsenter": true,
	"aws-vault": true, "op": true, "doppler": true, "saml2aws": true, "wsl": true, "runuser": true, "systemd-run": true,
	"taskset": true, "chrt": true,
}

// shells run the script their -c option gives.
var shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "ash": true, "mksh": true, "fish": true}

// Programs returns the programs line runs, lower-cased base names (/usr/bin/curl
// is curl), sorted and without duplicates; Unknown among them when a
// program is not named literally.
func Programs(line string) []string {
	var c collector
	c.line(line, 0)
	return c.result()
}

// Argv returns the programs an argument vector runs (an exec-style command:
// ["bash", "-lc", "curl …"] or ["curl", "-s", url]).
func Argv(argv []string) []string {
	var c collector
	c.argv(argv, 0)
	return c.result()
}

type collector struct {
	names map[string]bool
	// calls counts the commands read; past maxCalls (a line crafted to
	// be read many ways) the rest are named as words and Unknown, so a
	// reading's work is bounded whatever the line.
	calls int
	// work counts the words looked at (spend): each command's words,
	// each line parsed (a word per two bytes) and each word of a line
	// read as words (four: it is taken apart several ways). Past
	// maxWork the rest is Unknown: a reading's time is bounded by the
	// line's budget, not by its readings times its length.
	work int
	// remoteSet and gitFetched: the line points a git remote somewhere
	// (git remote add or set-url with a URL, git -c remote.NAME.url=) and
	// fetches or pulls one: together, another's work whatever the
	// remote's name (gitFetches).
	remoteSet, gitFetched bool
	// hosts, when Hosts reads the line (non-nil), are the hosts its
	// dialers are given (dialers.go).
	hosts map[string]bool
}

// tooDeep adds what a command past what is read runs — nested past
// maxDepth, or past maxCalls: its words as programs, and Unknown — what is
// not read is not taken for nothing. Past maxWork only Unknown: the words
// are not read again.
func (c *collector) tooDeep(argv []string) {
	c.add(Unknown)
	if c.work <= maxWork {
		c.words(strings.Join(argv, " "))
	}
}

// branch counts a second reading of a command's options (one it does
// not know, read both ways) among the commands read, and reports
// whether the budget allows it; a branch not taken adds Unknown.
func (c *collector) branch() bool {
	if c.calls++; c.calls > maxCalls || c.work > maxWork {
		c.add(Unknown)
		return false
	}
	return true
}

// spend charges n words to the line's budget (maxWork) and reports
// whether the reading may go on; one the budget cannot hold adds Unknown,
// which fails closed, and spends the rest of the budget: what follows
// is not read either.
func (c *collector) spend(n int) bool {
	if c.work+n > maxWork {
		c.work = maxWork + 1
		c.add(Unknown)
		return false
	}
	c.work += n
	return true
}

func (c *collector) add(name string) {
	if c.names == nil {
		c.names = map[string]bool{}
	}
	if len(c.names) < MaxPrograms {
		c.names[name] = true
	}
}

func (c *collector) result() []string {
	out := make([]string, 0, len(c.names))
	for n := range c.names {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// program adds the program a word names (ProgramName).
func (c *collector) program(word string) {
	if word == "" {
		return
	}
	c.add(ProgramName(word))
	if repoCopiers[packageName(word)] {
		c.add(GitClone) // degit owner/repo app, npx degit …: a clone without its history
	}
}

// ProgramName is the name a word gives the program it runs: its base name
// — past the last / or \ (C:\Windows\System32\curl.exe) — lower-cased,
// without Windows' .exe (curl.exe, which PowerShell and Git Bash users
// write because curl is an alias there, is curl), .cmd or .bat (the
// Google Cloud and Azure CLIs are gcloud.cmd and az.cmd).
func ProgramName(word string) string {
	word = strings.TrimRight(word, "/\\")
	if i := strings.LastIndexAny(word, "/\\"); i >= 0 {
		word = word[i+1:]
	}
	name := strings.ToLower(word)
	for _, ext := range []string{".exe", ".cmd", ".bat"} {
		if n := strings.TrimSuffix(name, ext); n != "" && n != name {
			name = n
			break
		}
	}
	if name == "" {
		return "."
	}
	return name
}

func (c *collector) line(line string, depth int) {
	if depth > maxDepth || c.calls > maxCalls {
		c.tooDeep([]string{line})
		return
	}
	if len(line) > MaxParsed {
		c.words(line)
		return
	}
	if !c.spend(len(line)/2 + 1) {
		return
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		c.words(line)
		return
	}
	if drivePath(line) {
		// A Windows path written as PowerShell and cmd write it
		// (C:\Tools\curl.exe), which shell quoting would mangle: its
		// words may name programs too.
		c.words(line)
	}
	// What each command reads on its standard input, when the line gives
	// it: a here-document, a here-string, a pipe. Walk visits a statement
	// and a pipe before the command in them.
	stdin := map[*syntax.CallExpr]*input{}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.BinaryCmd:
			if call, ok := n.Y.Cmd.(*syntax.CallExpr); ok && (n.Op == syntax.Pipe || n.Op == syntax.PipeAll) {
				stdin[call] = piped(n.X)
			}
		case *syntax.DeclClause:
			for _, a := range n.Args {
				c.assignedProxy(a) // export HTTPS_PROXY=…
			}
		case *syntax.Stmt:
			if call, ok := n.Cmd.(*syntax.CallExpr); ok {
				if in := redirected(n); in != nil {
					stdin[call] = in
				}
			}
			if c.hosts != nil {
				for _, r := range n.Redirs {
					if r.Word == nil {
						continue
					}
					if w, ok := literal(r.Word); ok {
						c.devHost(w)
					}
				}
			}
		}
		if call, ok := n.(*syntax.CallExpr); ok && len(call.Args) > 0 {
			argv := make([]string, len(call.Args))
			known := make([]bool, len(call.Args))
			for i, w := range call.Args {
				argv[i], known[i] = literal(w)
				if !known[i] && len(w.Parts) == 1 {
					if _, ok := w.Parts[0].(*syntax.ProcSubst); ok {
						argv[i] = procSubst
					}
				}
			}
			for _, a := range call.Assigns {
				// GIT_CONFIG_KEY_0=remote.origin.url …: git's config set
				// in the environment, which may point a remote anywhere.
				if a.Name != nil && strings.HasPrefix(a.Name.Value, "GIT_CONFIG_") {
					c.pointRemote()
				}
				c.assignedProxy(a)
			}
			c.call(argv, known, depth, stdin[call])
			if c.hosts != nil && known[0] && slices.Contains(known, false) {
				// A host in $'…' (curl $'\x67et.evil.example'), which the
				// programs' reading does not decode.
				c.ansiDialed(call, argv, known)
			}
			// A URL handed over in the command's environment (U=https://…
			// node -e 'fetch(process.env.U)') is one of its arguments.
			if name := ProgramName(argv[0]); known[0] && readsURL(name) {
				for _, a := range call.Assigns {
					if a.Value == nil {
						continue // U= and U=(…) hand over no word
					}
					if v, ok := literal(a.Value); ok && hasURL(v) {
						c.add(ScriptURL)
					}
				}
			}
		}
		return true
	})
}

// words is the reading of a line the parser refused: every word in it,
// split at blanks and shell operators, may be a program — and git with
// clone among the words may be a clone.
func (c *collector) words(line string) {
	if c.work > maxWork {
		c.add(Unknown)
		return
	}
	var git, clone, fetch, other, interp, url, storage, object bool
	split := strings.FieldsFunc(line, func(r rune) bool {
		return strings.ContainsRune(" \t\r\n;&|()<>`$\"'{}\\", r)
	})
	// And each word as the shell joins it: quotes and backslashes
	// removed (c\url, c'u'rl are curl).
	for _, w := range strings.FieldsFunc(line, func(r rune) bool { return strings.ContainsRune(" \t\r\n;&|()<>`", r) }) {
		if drivePath(w) {
			continue // C:\Tools\curl.exe: backslashes that separate
		}
		if j := strings.Map(func(r rune) rune {
			if strings.ContainsRune(`\'"`, r) {
				return -1
			}
			return r
		}, w); j != w && j != "" {
			split = append(split, j)
		}
	}
	c.work += 4 * len(split)
	if c.hosts != nil {
		c.refusedHosts(line)
	}
	for _, w := range split {
		c.program(w)
		git = git || ProgramName(w) == "git"
		clone = clone || w == "clone"
		fetch = fetch || w == "fetch" || w == "pull"
		other = other || remoteRepo(w)
		interp = interp || readsURL(ProgramName(w))
		url = url || hasURL(w)
		storage = storage || storageClients[ProgramName(w)]
		object = object || rcloneRemote(w)
	}
	if storage && object {
		c.add(BucketRead)
	}
	if git && clone {
		c.add(GitClone)
	}
	if git && fetch && other {
		c.add(GitFetch)
	}
	if interp && url {
		c.add(ScriptURL)
	}
}

// drivePath reports whether line holds a Windows drive path with
// backslashes (C:\…).
func drivePath(line string) bool {
	for i := 0; i+2 < len(line); i++ {
		if line[i+1] == ':' && line[i+2] == '\\' && (line[i]|0x20 >= 'a' && line[i]|0x20 <= 'z') && (i == 0 || !isWordByte(line[i-1])) {
			return true
		}
	}
	return false
}

func isWordByte(b byte) bool {
	return b == '_' || b|0x20 >= 'a' && b|0x20 <= 'z' || b >= '0' && b <= '9'
}

// ScriptURL is the name Programs gives an interpreter run with a URL among
// its arguments or in its environment — inline code that opens it
// (python3 -c "…urlopen('https://…')", node -e "fetch('https://…')") or a
// script given it — or with inline code that opens a connection however
// it names the host (node -e "require('https').get({host: …})"); and a
// program that reads a URL it is given (pandoc, a headless browser's
// --dump-dom, svn, hg, bzr): the fetch is in the code or the program, not in a
// program the line names.
const ScriptURL = "script url"

// interpreter reports whether a program runs code: python (any
// version), node and its TypeScript runners (tsx, ts-node), deno, bun,
// ruby, perl, php, pwsh and powershell, R (Rscript), julia, lua,
// babashka (bb), groovy.
func interpreter(name string) bool {
	switch name {
	case "node", "nodejs", "tsx", "ts-node", "deno", "bun", "ruby", "perl", "php", "pwsh", "powershell", "osascript",
		"r", "rscript", "julia", "lua", "luajit", "bb", "groovy":
		return true
	}
	return strings.HasPrefix(name, "python")
}

// urlReaders read what a URL among their arguments names: documents
// converted or printed from the web, a page rendered by a headless
// browser, another version control system's checkout, clone or cat
// (Subversion, Mercurial, Fossil, Bazaar and Breezy, Darcs, Pijul).
var urlReaders = map[string]bool{"pandoc": true, "chromium": true, "chromium-browser": true, "google-chrome": true,
	"google-chrome-stable": true, "chrome": true, "firefox": true, "wkhtmltopdf": true, "wkhtmltoimage": true,
	"yt-dlp": true, "youtube-dl": true, "svn": true, "hg": true, "fossil": true, "bzr": true, "brz": true,
	"darcs": true, "pijul": true}

// readsURL reports whether a program given a URL reads it: an
// interpreter (the code may) or a URL reader.
func readsURL(name string) bool { return interpreter(name) || urlReaders[name] }

// networkCode are what inline code calls to open a connection without a
// URL literal (a host and a path apart, a URL built at run time).
var networkCode = []string{"urlopen", "urllib", "requests.", "http.client", "httpx", "aiohttp", "socket.",
	"require('http", `require("http`, "require('net", `require("net`, "from 'http", `from "http`,
	"fetch(", "axios", "net/http", "net::http", "open-uri", "lwp::", "http::tiny", "io::socket",
	"file_get_contents('http", `file_get_contents("http`, "curl_init", "fsockopen", "invoke-webrequest",
	"invoke-restmethod", "net.webclient", "deno.connect", "boto3", "botocore", "google.cloud", "azure.storage",
	"minio", "download.file", "httr", "http.get(", "http.request(", "downloads.download", "socket.http"}

// processCode are what inline code calls to start a program.
var processCode = []string{"os.system", "os.popen", "subprocess", "popen(", "check_output", "spawn(", "spawnsync", "execsync",
	"execfilesync", "child_process", "system(", "exec(", "qx(", "qx{", "qx/", "`", "shell_exec", "passthru", "proc_open",
	"%x(", "%x{", "open3", "runtime.getruntime", "processbuilder", "start-process", "invoke-expression", "iex ",
	"deno.command", "bun.spawn", "$("}

// spawnsProcess reports whether inline code calls processCode.
func spawnsProcess(code string) bool {
	code = strings.ToLower(code)
	for _, n := range processCode {
		if strings.Contains(code, n) {
			return true
		}
	}
	return false
}

// opensConnection reports whether inline code calls networkCode.
func opensConnection(code string) bool {
	code = strings.ToLower(code)
	for _, n := range networkCode {
		if strings.Contains(code, n) {
			return true
		}
	}
	return false
}

func hasURL(arg string) bool {
	a := strings.ToLower(arg)
	return strings.Contains(a, "http://") || strings.Contains(a, "https://") || strings.Contains(a, "ftp://")
}

// inlineCode reports whether the code an interpreter's -c, -e, -r or
// --eval option runs (or any other argument, for a refused line's words)
// satisfies f.
func inlineCode(args []string, f func(string) bool) bool {
	for i, a := range args {
		switch a {
		case "-c", "-e", "-r", "-E", "--eval", "-p", "--print", "-Command", "-command", "-c:":
			if i+1 < len(args) && f(args[i+1]) {
				return true
			}
		}
	}
	return false
}

// repoCopiers copy a repository's files from a forge without git (a clone
// without its history): degit, its fork tiged, giget.
var repoCopiers = map[string]bool{"degit": true, "tiged": true, "giget": true}

// packageName is the program a word names, without an npm version
// (giget@latest).
func packageName(w string) string {
	name := ProgramName(w)
	if i := strings.LastIndexByte(name, '@'); i > 0 {
		name = name[:i]
	}
	return name
}

// GitClone is the name Programs gives a git that clones (git clone …):
// unlike git's other commands, whose output says what they did, it brings
// a repository's files — anyone's — into the session.
const GitClone = "git clone"

// GitFetch is the name Programs gives a git that fetches or pulls another's
// work into the repository — from a URL, a remote other than origin and
// upstream (defaultRemotes), or a pull (merge) request's ref: what git
// log -p, git show or git diff then print is that contributor's text. A
// fetch of the repository's own branches is not one: its output says
// what it did.
const GitFetch = "git fetch"

// remoteRepo reports whether a git argument names another's work: a URL
// (https://, ssh://, git://, file://, or scp-like user@host:path), or a
// pull or merge request's ref (pull/123/head, refs/pull/…,
// merge-requests/7/head).
func remoteRepo(a string) bool {
	l := strings.ToLower(strings.TrimPrefix(a, "+"))
	if strings.Contains(l, "://") {
		return true
	}
	if at, colon := strings.IndexByte(l, '@'), strings.IndexByte(l, ':'); at > 0 && colon > at && !strings.Contains(l[:at], "/") {
		return true
	}
	for _, p := range []string{"pull/", "refs/pull/", "merge-requests/", "refs/merge-requests/"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

// GitSubcommand is the command a git argument vector runs (clone for
// git -C dir clone url), past git's own options; "" when there is none.
func GitSubcommand(argv []string) string {
	if i := gitAt(argv); i >= 0 {
		return argv[i]
	}
	return ""
}

func (c *collector) argv(argv []string, depth int) {
	known := make([]bool, len(argv))
	for i := range known {
		known[i] = true
	}
	c.call(argv, known, depth, nil)
}

// call adds the programs one simple command runs; in is what the line
// gives it on its standard input, nil for nothing the line says.
func (c *collector) call(argv []string, known []bool, depth int, in *input) {
	if len(argv) == 0 {
		return
	}
	if c.calls++; c.calls > maxCalls || !c.spend(len(argv)) {
		c.tooDeep(argv)
		return
	}
	if !known[0] {
		c.add(Unknown)
		return
	}
	c.program(argv[0])
	name := ProgramName(argv[0])
	c.dialed(name, argv, known)
	c.subcommandFetch(name, argv)
	if serviceLogs(name, argv) {
		c.add(PodLogs) // heroku logs, aws logs tail, gcloud logging read, …
	}
	switch name {
	case "git":
		c.gitFetches(argv)
		c.gitAliases(argv, known, depth)
	case "jj", "sl":
		c.otherVCS(name, argv)
	}
	if storageClients[name] && bucketReadAny(argv, known) || bucketCmdlets[name] && cmdletReads(argv) {
		c.add(BucketRead)
	}
	if args, ok := containerCLI(argv); ok {
		// docker run amazon/aws-cli s3 cp …: the image's client runs.
		if depth < maxDepth {
			c.call(args, slices.Repeat([]bool{true}, len(args)), depth+1, nil)
		} else {
			c.tooDeep(args)
		}
	}
	if readsURL(name) && slices.ContainsFunc(argv[1:], hasURL) {
		c.add(ScriptURL)
	}
	if j := awscliAt(argv); interpreter(name) && j > 0 {
		// python -m awscli … is aws ….
		if depth < maxDepth {
			c.call(append([]string{"aws"}, argv[j:]...), append([]bool{true}, known[j:]...), depth+1, nil)
		} else {
			c.tooDeep(argv[j:])
		}
	}
	if interpreter(name) && slices.Contains(argv[1:], procSubst) {
		c.add(Unknown) // python3 <(…): code another command prints
	}
	if interpreter(name) && inlineCode(argv[1:], opensConnection) ||
		name == "deno" && len(argv) > 2 && argv[1] == "eval" && opensConnection(argv[2]) {
		c.add(ScriptURL)
	}
	if interpreter(name) {
		// Inline code that starts a process names its program in its
		// text (os.system("curl …"), subprocess.run(["curl", …]), perl's
		// qx(wget …)): its words may be programs, as a refused line's are.
		inlineCode(argv[1:], func(code string) bool {
			if spawnsProcess(code) {
				c.words(code)
			}
			return false
		})
	}
	if in != nil {
		switch {
		case depth >= maxDepth:
			if shells[name] || interpreter(name) || loginShell(name, argv[1:]) {
				c.tooDeep([]string{in.text})
			}
		case loginShell(name, argv[1:]):
			c.stdinScript("sh", []string{"sh"}, in, depth)
		default:
			c.stdinScript(name, argv, in, depth)
		}
	}
	if r, ok := runners[name]; ok {
		c.runner(r, argv, known, depth, in)
	}
	if name == "pwsh" || name == "powershell" {
		c.psHosts(argv, known, depth)
	}
	switch name {
	case "ssh":
		if depth < maxDepth {
			c.ssh(argv, known, depth, in)
		} else {
			c.tooDeep(argv[1:])
		}
	case "docker", "podman", "nerdctl", "docker-compose":
		c.container(argv, known, depth, in)
	case "buildah":
		if s, i := containerSubcommand(argv); (s == "bud" || s == "build") && remoteBuild(argv[i+1:]) {
			c.add(RemoteCode)
		}
	case "kubectl", "oc":
		c.kubectl(argv, known, depth, in)
	case "mosh":
		if depth < maxDepth {
			c.mosh(argv, known, depth, in)
		} else {
			c.tooDeep(argv[1:])
		}
	case "vagrant", "gcloud", "az":
		c.vmShell(name, argv, known, depth, in)
	case "go", "npx", "bunx", "npm", "pnpm", "yarn", "bun", "uvx", "uv", "pipx":
		if remoteCode(name, argv) {
			c.add(RemoteCode)
		}
	case "stern":
		c.add(PodLogs)
	case "fd", "fdfind":
		c.fd(argv, known, depth) // fd -x CMD, fd -X CMD
	}
	if name == "scp" || name == "rsync" {
		c.copierCommands(name, argv, known, depth)
	}
	if _, _, _, in, _ := remoteCopy(argv); in {
		c.add(RemoteCopy) // scp host:f ., docker cp web:/x ., kubectl cp pod:/x .
	}
	if awks[name] {
		c.awk(argv, known, depth, in)
	}
	switch {
	case shells[name]:
		for i := 1; i < len(argv); i++ {
			a := argv[i]
			if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "c") {
				if i+1 < len(argv) {
					if !known[i+1] {
						c.add(Unknown)
					} else {
						c.line(argv[i+1], depth+1)
					}
				}
				return
			}
			if !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "+") {
				c.scriptFile(a, in)
				return
			}
		}
	case name == "source" || name == ".":
		if len(argv) > 1 {
			if stdinPath(argv[1]) && in != nil && depth < maxDepth {
				c.stdinScript("sh", []string{"sh"}, in, depth)
			} else {
				c.scriptFile(argv[1], in)
			}
		}
	case name == "cmd":
		// cmd /c line, cmd /k line (any case): the rest is the line it
		// runs, read as a shell line.
		for i := 1; i < len(argv); i++ {
			if o := strings.ToLower(argv[i]); o == "/c" || o == "/k" || o == "/r" {
				for j := i + 1; j < len(argv); j++ {
					if !known[j] {
						c.add(Unknown)
						return
					}
				}
				c.line(strings.Join(argv[i+1:], " "), depth+1)
				return
			}
		}
	case name == "eval":
		for i := 1; i < len(argv); i++ {
			if !known[i] {
				c.add(Unknown)
				return
			}
		}
		c.line(strings.Join(argv[1:], " "), depth+1)
	case wrappers[name]:
		// What the wrapper runs is one of its words; which one depends on
		// its options, so each counts.
		urlSet := false // env U=https://… node …: a URL in its environment
		// dialing: no word before could be the program the wrapper runs,
		// so a dialer's words are its own (timeout 10 grep curl README.md
		// does not give curl a host; sudo -u root curl HOST does).
		dialing := true
		for i := 1; i < len(argv); i++ {
			if !known[i] {
				c.add(Unknown)
				continue
			}
			a := argv[i]
			if a == "" || strings.HasPrefix(a, "-") || strings.Contains(a, "=") {
				urlSet = urlSet || strings.Contains(a, "=") && !strings.HasPrefix(a, "-") && hasURL(a)
				if k, v, ok := strings.Cut(a, "="); ok && !strings.HasPrefix(a, "-") {
					c.proxyHost(k, v) // env HTTPS_PROXY=… curl …
				}
				continue
			}
			c.program(a)
			if dialing {
				// The hosts a dialer it may run is given (sudo nc HOST
				// PORT); its words are programs too, as below.
				c.dialed(ProgramName(a), argv[i:], known[i:])
				dialing = wrapperValue(a, argv[i-1])
			}
			// A program read past its name run by this one — a shell, eval,
			// git, a storage client, an interpreter or a URL reader, another
			// wrapper: read what it runs in turn (sudo bash -c '…', sudo git
			// clone …, timeout 30 python3 -c '…').
			if n := ProgramName(a); readPastName(n) {
				if urlSet && readsURL(n) {
					c.add(ScriptURL)
				}
				if depth < maxDepth {
					c.call(argv[i:], known[i:], depth+1, in)
				} else {
					c.tooDeep(argv[i:])
				}
				return
			}
		}
	}
}

// procSubst stands for a process substitution's word (<(…)), which
// names no file the line shows: what another command prints.
const procSubst = "<(…)"

// scriptFile adds what a shell or source runs from a script file it is
// given: nothing the line says for a file (followed as a file), Unknown
// for one it does not show — a process substitution's output, the
// standard input or a descriptor with no input the line gives.
func (c *collector) scriptFile(a string, in *input) {
	if a == procSubst || stdinPath(a) && in == nil {
		c.add(Unknown)
	}
}

// remoteRunners run a command elsewhere: on a host, in a container.
var remoteRunners = map[string]bool{"ssh": true, "docker": true, "podman": true, "nerdctl": true, "docker-compose": true,
	"kubectl": true, "oc": true, "mosh": true, "vagrant": true, "gcloud": true, "az": true}

// readPastName reports whether call reads more of a program's words
// than its name: what a wrapper runs is read as its own call when it is
// one of these.
func readPastName(n string) bool {
	_, runs := runners[n]
	_, fetchesCode := packageRunners[n]
	return fetchesCode || logClients[n] || n == "fd" || n == "fdfind" || n == "go" || n == "scp" || n == "rsync" || shells[n] || n == "eval" || n == "cmd" || n == "git" || storageClients[n] || wrappers[n] || readsURL(n) || runs ||
		remoteRunners[n] || n == "su" || n == "doas" || awks[n]
}

// literal is a word's value when it holds no expansion: plain text, single
// or double quotes around plain text, escapes.
func literal(w *syntax.Word) (string, bool) {
	if len(w.Parts) == 1 {
		if l, ok := w.Parts[0].(*syntax.Lit); ok && !strings.Contains(l.Value, `\`) {
			return l.Value, true // a plain word: no copy
		}
	}
	return wordValue(w, false)
}

// wordValue is a word's value when it holds no expansion; a $'…' string
// is decoded when ansi is set (ansiC), and is no literal otherwise
// ($'\x63url': escapes the words do not show).
func wordValue(w *syntax.Word, ansi bool) (string, bool) {
	if s, whole := wordPrefix(w, ansi); whole {
		return s, true
	}
	return "", false
}

// wordPrefix is a word's literal text up to its first expansion (a $'…'
// string counts as one unless ansi), and whether that is the whole word.
func wordPrefix(w *syntax.Word, ansi bool) (string, bool) {
	var b strings.Builder
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(p.Value))
		case *syntax.SglQuoted:
			switch {
			case !p.Dollar:
				b.WriteString(p.Value)
			case ansi:
				b.WriteString(ansiC(p.Value))
			default:
				return b.String(), false
			}
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return b.String(), false
				}
				b.WriteString(l.Value)
			}
		default:
			return b.String(), false
		}
	}
	return b.String(), true
}

// unescape removes the backslashes of an unquoted word (\curl is curl).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
