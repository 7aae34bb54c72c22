package shellcmd

import (
	"slices"
	"strings"
)

// A runner runs a command its arguments give after a subcommand (uv run
// pytest, npm exec -- eslint ., bundle exec rake, direnv exec . make):
// a project's environment around a program, which is read as its own
// call. Its other subcommands (uv pip install httpx) run nothing named
// there.
type runner struct {
	// subs are the subcommands that run a command; none: the runner's
	// own words are options and the command (dotenv -e .env -- cmd).
	subs []string
	// values are the options that take the next word as their value,
	// before the subcommand or after it.
	values []string
	// lines are the options whose value is a shell line the runner runs
	// (nix-shell --run '…', npm exec -c '…').
	lines []string
	// rest are the options after which every word is the command (nix
	// shell nixpkgs#curl -c curl …).
	rest []string
	// operands are the words between the subcommand and the command
	// (direnv exec DIR cmd); -1: all of them up to a --, the command
	// then only after it (mise exec node@20 -- node …).
	operands int
}

var runners = map[string]runner{
	"uv": {subs: []string{"run", "tool"}, values: []string{"--with", "--with-editable", "--with-requirements", "--python", "-p",
		"--package", "--directory", "--project", "--env-file", "--extra", "--group", "--only-group", "--no-group", "--index",
		"--default-index", "--index-url", "--extra-index-url", "--find-links", "-f", "--config-file", "--cache-dir",
		"--exclude-newer", "--python-preference", "--index-strategy", "--keyring-provider", "--resolution", "--prerelease",
		"--link-mode", "--color", "--from"}},
	"poetry":     {subs: []string{"run"}, values: []string{"-P", "--project", "-C", "--directory"}},
	"pipenv":     {subs: []string{"run"}, values: []string{"--python"}},
	"pdm":        {subs: []string{"run"}, values: []string{"-p", "--project", "--venv"}},
	"hatch":      {subs: []string{"run"}, values: []string{"-e", "--env", "-p", "--project", "--data-dir", "--cache-dir"}},
	"rye":        {subs: []string{"run"}, values: []string{"--pyproject"}},
	"pixi":       {subs: []string{"run", "exec"}, values: []string{"-e", "--environment", "--manifest-path", "-s", "--spec", "-c", "--channel"}},
	"conda":      {subs: []string{"run"}, values: []string{"-n", "--name", "-p", "--prefix", "--cwd"}},
	"mamba":      {subs: []string{"run"}, values: []string{"-n", "--name", "-p", "--prefix", "--cwd"}},
	"micromamba": {subs: []string{"run"}, values: []string{"-n", "--name", "-p", "--prefix", "--cwd", "-r", "--root-prefix"}},
	"npm":        {subs: []string{"exec", "x"}, values: []string{"-w", "--workspace", "--package", "--prefix"}, lines: []string{"-c", "--call"}},
	"pnpm":       {subs: []string{"exec", "dlx"}, values: []string{"-C", "--dir", "--filter", "-F", "--package"}, lines: []string{"-c", "--shell-mode"}},
	"yarn":       {subs: []string{"exec", "dlx"}, values: []string{"-p", "--package", "--cwd"}},
	"bun":        {subs: []string{"x"}, values: []string{"--cwd"}},
	"bundle":     {subs: []string{"exec"}, values: []string{"--gemfile"}},
	"mise":       {subs: []string{"exec", "x"}, values: []string{"-C", "--cd", "-j", "--jobs", "-E", "--env"}, lines: []string{"-c", "--command"}, operands: -1},
	"asdf":       {subs: []string{"exec"}},
	"direnv":     {subs: []string{"exec"}, operands: 1},
	"dotenv":     {values: []string{"-e", "-v", "-f", "--file", "-c"}},
	"nix-shell":  {values: []string{"-p", "--packages", "-I", "--arg", "--argstr", "-A", "--attr", "--expr", "-E"}, lines: []string{"--run", "--command"}, operands: -1},
	"devbox":     {subs: []string{"run"}, values: []string{"-c", "--config", "-e", "--env", "--env-file", "--environment"}},
	"sshpass":    {values: []string{"-p", "-f", "-d", "-P"}},
	"nix":        {subs: []string{"shell", "develop"}, values: []string{"-I", "--arg", "--argstr", "--override-input", "--profile"}, rest: []string{"-c", "--command"}, operands: -1},
}

// runner adds what a runner's call runs: a shell line an option gives
// it, and the command its words give, read as its own call; nix run
// INSTALLABLE runs the package's program (nixpkgs#curl: curl) with the
// words after --.
func (c *collector) runner(r runner, argv []string, known []bool, depth int, in *input) {
	if ProgramName(argv[0]) == "nix" && len(argv) > 2 && argv[1] == "run" {
		pkg := argv[2]
		if strings.HasPrefix(pkg, "-") {
			return
		}
		if remoteFlake(pkg) {
			c.add(RemoteCode) // nix run github:owner/repo: its author's program
		}
		pkg = pkg[strings.LastIndexAny(pkg, "#.")+1:]
		args, argk := []string(nil), []bool(nil)
		if dd := slices.Index(argv, "--"); dd >= 0 {
			args, argk = argv[dd+1:], known[dd+1:]
		}
		c.wrapped(append([]string{pkg}, args...), append([]bool{known[2]}, argk...), depth, in)
		return
	}
	i := 1
	if len(r.subs) > 0 {
		// The subcommand: the first word that is not an option (nor an
		// option's value).
		for ; i < len(argv); i++ {
			if strings.HasPrefix(argv[i], "-") {
				if slices.Contains(r.values, argv[i]) {
					i++
				}
				continue
			}
			break
		}
		if i >= len(argv) || !slices.Contains(r.subs, argv[i]) {
			return
		}
		if ProgramName(argv[0]) == "nix" {
			// The installables, before the command: nix shell
			// github:owner/repo -c …, its author's packages.
			ins := argv[i+1:]
			if j := slices.IndexFunc(ins, func(a string) bool { return slices.Contains(r.rest, a) || a == "--" }); j >= 0 {
				ins = ins[:j]
			}
			if slices.ContainsFunc(ins, remoteFlake) {
				c.add(RemoteCode)
			}
		}
		if ProgramName(argv[0]) == "uv" && argv[i] == "tool" {
			// uv tool run: uvx.
			if i+1 >= len(argv) || argv[i+1] != "run" {
				return
			}
			i++
		}
		i++
	} else if ProgramName(argv[0]) == "dotenv" && i < len(argv) && argv[i] == "run" {
		i++ // python-dotenv's dotenv run
	}
	c.runnerArgs(r, argv, known, i, 0, maxBranches, depth, in)
}

// runnerArgs reads a runner's words from argv[i], past its options and
// operands, to the command it runs.
func (c *collector) runnerArgs(r runner, argv []string, known []bool, i, operands, branches, depth int, in *input) {
	for ; i < len(argv); i++ {
		a := argv[i]
		if name, value, ok := strings.Cut(a, "="); ok && known[i] && slices.Contains(r.lines, name) {
			c.line(value, depth+1) // --run='…', --call='…'
			continue
		} else if ok && known[i] && slices.Contains(r.rest, name) {
			// nix develop --command=curl …
			c.wrapped(append([]string{value}, argv[i+1:]...), append([]bool{true}, known[i+1:]...), depth, in)
			return
		}
		switch {
		case !known[i]:
			if strings.HasPrefix(a, "-") || r.operands != 0 {
				continue
			}
			c.add(Unknown)
			return
		case a == "--":
			c.wrapped(argv[i+1:], known[i+1:], depth, in)
			return
		case slices.Contains(r.lines, a):
			if i+1 < len(argv) {
				if !known[i+1] {
					c.add(Unknown)
				} else {
					c.line(argv[i+1], depth+1)
				}
			}
			i++
		case slices.Contains(r.rest, a):
			c.wrapped(argv[i+1:], known[i+1:], depth, in)
			return
		case slices.Contains(r.values, a):
			i++
		case strings.HasPrefix(a, "--") && !strings.Contains(a, "=") && !runnerFlags[a] && branches > 0 && c.branch():
			// An option this reading does not know: its value, if it
			// takes one, is the next word.
			branches--
			c.runnerArgs(r, argv, known, i+2, operands, branches, depth, in)
		case strings.HasPrefix(a, "-"):
		case r.operands < 0 || operands < r.operands:
			operands++
		default:
			c.wrapped(argv[i:], known[i:], depth, in)
			return
		}
	}
}

// runnerFlags are runners' and containers' common long options that take
// no value, which need not be read both ways.
var runnerFlags = map[string]bool{"--frozen": true, "--locked": true, "--no-sync": true, "--all-extras": true,
	"--quiet": true, "--yes": true, "--recursive": true, "--keep-file-descriptors": true, "--isolated": true,
	"--no-project": true, "--offline": true, "--no-cache": true, "--active": true, "--verbose": true, "--no-TTY": true,
	"--no-dev": true, "--all-packages": true, "--exact": true, "--no-install": true, "--silent": true}

// wrapped adds the programs of the command a runner or another host runs.
func (c *collector) wrapped(argv []string, known []bool, depth int, in *input) {
	switch {
	case len(argv) == 0:
	case known[0] && strings.ContainsAny(argv[0], " \t"):
		// A program word with blanks (compose's --entrypoint 'curl -s')
		// is split as a shell splits a line.
		if depth < maxDepth {
			c.line(strings.Join(argv, " "), depth+1)
		} else {
			c.tooDeep(argv)
		}
	case depth < maxDepth:
		c.call(argv, known, depth+1, in)
	default:
		c.tooDeep(argv)
	}
}

// remoteFlake reports whether a nix installable is fetched from where it
// names, not a registry's: a forge's flake (github:, gitlab:, sourcehut:),
// a git or tarball URL (git+https://…, https://…/x.tar.gz) — anyone's
// code. nixpkgs#curl, .#app and a path are not.
func remoteFlake(ref string) bool {
	l := strings.ToLower(ref)
	for _, p := range []string{"github:", "gitlab:", "sourcehut:", "git+", "tarball+", "file+http", "http://", "https://"} {
		if strings.HasPrefix(l, p) {
			return !strings.HasPrefix(l, "github:nixos/nixpkgs")
		}
	}
	return false
}
