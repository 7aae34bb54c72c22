package shellcmd

import (
	"slices"
	"strings"
)

// defaultRemotes are the remotes a fetch or a pull of which is the
// repository's own work: the clone's origin, and the upstream a fork
// tracks. Any other name is a remote someone added — often another's
// fork (git remote add contrib https://…; git fetch contrib) — and git's
// config, which the line does not show, says where it points: such a
// fetch is taken for another's work.
var defaultRemotes = []string{"origin", "upstream", "."}

// gitFetchValueOptions are git fetch's and git pull's options that take
// the next word as their value.
var gitFetchValueOptions = map[string]bool{"--depth": true, "--deepen": true, "--shallow-since": true,
	"--shallow-exclude": true, "-j": true, "--jobs": true, "--upload-pack": true, "--negotiation-tip": true,
	"--refmap": true, "-o": true, "--server-option": true, "--filter": true, "--recurse-submodules-default": true,
	"-s": true, "--strategy": true, "-X": true, "--strategy-option": true, "--cleanup": true}

// gitAt is the index of the command a git argument vector runs (past
// git's own options), or -1.
func gitAt(argv []string) int {
	for i := 1; i < len(argv); i++ {
		switch a := argv[i]; {
		case a == "-C" || a == "-c" || a == "--git-dir" || a == "--work-tree" || a == "--namespace" || a == "--config-env" || a == "--super-prefix":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return i
		}
	}
	return -1
}

// fetchesOther reports whether git fetch's or git pull's arguments name
// another's work: a URL or a pull request's ref (remoteRepo), or a remote
// other than defaultRemotes (the first operand; each with --multiple).
func fetchesOther(args []string) bool {
	if slices.ContainsFunc(args, remoteRepo) {
		return true
	}
	multiple := slices.Contains(args, "--multiple")
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
		case gitFetchValueOptions[a]:
			i++
		case strings.HasPrefix(a, "-"):
		default:
			if !slices.Contains(defaultRemotes, a) {
				return true
			}
			if !multiple {
				return false
			}
		}
	}
	return false
}

// gitFetches adds what a git command brings in of another's work: a
// clone, a fetch or a pull of another's (fetchesOther), git archive
// --remote, a remote added and fetched at once (git remote add -f), a
// submodule added (a clone) or updated with --init or --remote (a fetch).
func (c *collector) gitFetches(argv []string) {
	at := gitAt(argv)
	if at < 0 {
		return
	}
	args := argv[at+1:]
	for i, a := range argv[1:at] {
		// git -c remote.NAME.url=URL, -c url.URL.insteadOf=…,
		// --config-env=…: the remote points elsewhere.
		if argv[i] == "-c" && remoteConfig(a) || strings.HasPrefix(a, "--config-env") {
			c.pointRemote()
		}
	}
	switch argv[at] {
	case "clone":
		c.add(GitClone)
	case "fetch", "pull":
		if fetchesOther(args) {
			c.add(GitFetch)
		}
		c.fetchRemote()
	case "archive":
		// git archive --remote=<repository>: another's files.
		if slices.ContainsFunc(args, func(a string) bool { return a == "--remote" || strings.HasPrefix(a, "--remote=") }) {
			c.add(GitFetch)
		}
	case "config":
		// git config remote.origin.url URL (set, --add, …).
		if slices.ContainsFunc(args, remoteConfig) {
			c.pointRemote()
		}
	case "remote":
		if len(args) > 0 && args[0] == "add" && slices.ContainsFunc(args[1:], func(a string) bool { return a == "-f" || a == "--fetch" }) {
			c.add(GitFetch)
		}
		switch {
		case len(args) > 0 && (args[0] == "add" || args[0] == "set-url") && slices.ContainsFunc(args[1:], remoteRepo):
			c.pointRemote()
		case len(args) > 0 && args[0] == "update":
			c.fetchRemote()
		}
	case "submodule":
		sub := slices.IndexFunc(args, func(a string) bool { return !strings.HasPrefix(a, "-") })
		switch {
		case sub < 0:
		case args[sub] == "add":
			c.add(GitClone)
		case args[sub] == "update" && slices.ContainsFunc(args[sub+1:], func(a string) bool { return a == "--init" || a == "--remote" }):
			c.add(GitFetch)
		}
	}
}

// otherVCS adds what Jujutsu (jj git clone, jj git fetch of a URL or a
// remote other than defaultRemotes) and Sapling (sl clone, sl pull of a
// URL) bring in, as git's.
func (c *collector) otherVCS(name string, argv []string) {
	switch name {
	case "jj":
		g := slices.Index(argv, "git")
		if g < 0 || g+1 >= len(argv) {
			return
		}
		switch argv[g+1] {
		case "clone":
			c.add(GitClone)
		case "fetch":
			for i, a := range argv[g+2:] {
				if remoteRepo(a) || (a == "--remote" && g+3+i < len(argv) && !slices.Contains(defaultRemotes, argv[g+3+i])) ||
					strings.HasPrefix(a, "--remote=") && !slices.Contains(defaultRemotes, a[len("--remote="):]) || a == "--all-remotes" {
					c.add(GitFetch)
					return
				}
			}
		}
	case "sl":
		sub := slices.IndexFunc(argv[1:], func(a string) bool { return !strings.HasPrefix(a, "-") })
		if sub < 0 {
			return
		}
		switch argv[1+sub] {
		case "clone":
			c.add(GitClone)
		case "pull":
			if slices.ContainsFunc(argv[2+sub:], remoteRepo) {
				c.add(GitFetch)
			}
		}
	}
}

// pointRemote records that the line points a git remote at a URL, and
// fetchRemote that it fetches or pulls one: a line doing both (git remote
// add origin URL && git pull origin main, git remote set-url origin URL;
// git fetch --all) brings another's work in, whatever the remote's name.
func (c *collector) pointRemote() {
	c.remoteSet = true
	if c.gitFetched {
		c.add(GitFetch)
	}
}

func (c *collector) fetchRemote() {
	c.gitFetched = true
	if c.remoteSet {
		c.add(GitFetch)
	}
}

// remoteConfig reports whether a git config key (or key=value) says where
// a remote fetches from: remote.NAME.url, remote.NAME.pushurl aside, or a
// url.BASE.insteadOf rewriting every remote's address.
func remoteConfig(a string) bool {
	key, _, _ := strings.Cut(strings.ToLower(a), "=")
	return strings.HasPrefix(key, "remote.") && strings.HasSuffix(key, ".url") ||
		strings.HasPrefix(key, "url.") && strings.HasSuffix(key, ".insteadof")
}

// gitAliases adds what a git alias the line defines runs: a shell
// command (alias.NAME='!curl …'), read as a line wherever it is defined —
// git -c alias.x='!…' x, git config alias.x '!…' && git x — and a git
// command (alias.NAME='fetch https://…'), read as git's when -c defines
// it for the command run, or git config sets it. An alias set in one
// call and used in a later one is not followed: git's config is not on
// the line.
func (c *collector) gitAliases(argv []string, known []bool, depth int) {
	at := gitAt(argv)
	if at < 0 {
		return
	}
	for i := 1; i+1 < at; i++ {
		if argv[i] != "-c" || !known[i+1] {
			continue
		}
		key, value, _ := strings.Cut(argv[i+1], "=")
		name, ok := strings.CutPrefix(strings.ToLower(key), "alias.")
		if !ok {
			continue
		}
		if cmd, shell := strings.CutPrefix(value, "!"); shell {
			c.line(cmd, depth+1)
		} else if name == strings.ToLower(argv[at]) {
			c.gitFetches(append(append([]string{"git"}, strings.Fields(value)...), argv[at+1:]...))
		}
	}
	if argv[at] != "config" {
		return
	}
	for i := at + 1; i+1 < len(argv); i++ {
		if !strings.HasPrefix(strings.ToLower(argv[i]), "alias.") {
			continue
		}
		switch value := argv[i+1]; {
		case !known[i+1]:
			c.add(Unknown) // git config alias.x "$CMD"
		case strings.HasPrefix(value, "!"):
			c.line(value[1:], depth+1)
		default:
			c.gitFetches(append([]string{"git"}, strings.Fields(value)...))
		}
		return
	}
}
