package shellcmd

import (
	"slices"
	"strings"
)

// RemoteCode is the name Programs gives a command that fetches a
// program from where the line names it and runs it: a package runner
// given a URL or a repository instead of a registry's package (npx
// github:owner/repo, npx owner/repo, bunx https://…/pkg.tgz, uvx --from
// git+https://…, pipx run --spec git+…), uv run given a script's URL or
// a dependency's repository (uv run https://…/tool.py, uv run --with
// git+https://… s.py), docker build (podman build, buildah bud) of a
// repository's or a URL's context (remoteBuild). What it prints is what the
// code's author wrote. A registry's package (npx eslint, uvx ruff) is not
// one, as installing it is not: the project's own tools run that way —
// nor is go run MODULE@VERSION, which the module proxy serves as a
// registry does (go run …/staticcheck@v0.8.2).
const RemoteCode = "remote code"

// packageRunners run a package they fetch: the subcommands that do
// ("" for none: npx PKG), the options whose value names the package, and
// those whose value is something else — a directory, a registry's or an
// index's URL, a Python version — skipped, not taken for the package.
var packageRunners = map[string]struct {
	sub    []string
	opts   []string
	values []string
}{
	"npx":  {opts: []string{"-p", "--package"}, values: npmValueOptions},
	"bunx": {opts: []string{"-p", "--package"}, values: []string{"--cwd"}},
	"npm":  {sub: []string{"exec", "x"}, opts: []string{"-p", "--package"}, values: npmValueOptions},
	"pnpm": {sub: []string{"dlx"}, opts: []string{"--package"}, values: []string{"-C", "--dir", "--filter", "-F", "--registry",
		"--reporter", "--loglevel", "--allow-build", "-c", "--shell-mode"}},
	"yarn": {sub: []string{"dlx"}, opts: []string{"-p", "--package"}, values: []string{"--cwd"}},
	"bun":  {sub: []string{"x"}, opts: []string{"-p", "--package"}, values: []string{"--cwd"}},
	"uvx":  {opts: []string{"--from", "--with"}, values: uvValueOptions},
	"uv":   {sub: []string{"tool", "run"}, opts: []string{"--from", "--with"}, values: uvValueOptions},
	"pipx": {sub: []string{"run"}, opts: []string{"--spec"}, values: []string{"--python", "--index-url", "-i", "--pip-args",
		"--backend"}},
}

// npmValueOptions are the options npx and npm exec take with a value
// (npm's configuration given on its command line: -w packages/web,
// --registry https://…) and -c, --call, whose value is a line.
var npmValueOptions = []string{"-w", "--workspace", "--prefix", "-C", "--cache", "--userconfig", "--globalconfig",
	"--registry", "--node-options", "--loglevel", "--script-shell", "--shell", "--include", "--omit", "--cafile",
	"--proxy", "--https-proxy", "--noproxy", "--scope", "--tag", "--otp", "--install-strategy", "-c", "--call"}

// uvValueOptions are the options uvx, uv tool run and uv run take with a
// value other than a package (--python 3.12, --index-url https://…).
var uvValueOptions = []string{"--with-editable", "--with-requirements", "--python", "-p", "--package",
	"--directory", "--project", "--env-file", "--extra", "--group", "--only-group", "--no-group", "--index",
	"--default-index", "--index-url", "-i", "--extra-index-url", "--find-links", "-f", "--config-file", "--cache-dir",
	"--exclude-newer", "--python-preference", "--index-strategy", "--keyring-provider", "--resolution", "--prerelease",
	"--link-mode", "--color", "-C", "--config-setting", "--upgrade-package", "-P", "--reinstall-package",
	"--refresh-package", "--no-build-package", "--no-binary-package", "--allow-insecure-host", "--constraints",
	"--overrides", "--build-constraints", "--python-platform"}

// remoteCode reports whether a call fetches code from an address the
// line names and runs it (RemoteCode): a package runner's package, or
// uv run's script (uv run https://…/tool.py), or one an option names
// before or after the subcommand (pnpm --package=github:… dlx cmd).
func remoteCode(name string, argv []string) bool {
	r, ok := packageRunners[name]
	if !ok {
		return false
	}
	sub := 0 // the subcommand's last word
	if len(r.sub) > 0 {
		sub = runnerSubcommand(argv, r.values)
		if sub >= len(argv) || !slices.Contains(r.sub, argv[sub]) {
			return false
		}
		if name == "uv" && argv[sub] == "tool" {
			if sub++; sub >= len(argv) || argv[sub] != "run" {
				return false // uv tool install …: fetched, not run
			}
		}
	}
	npm := name != "uvx" && name != "uv" && name != "pipx"
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if o, v, ok := strings.Cut(a, "="); ok && slices.Contains(r.opts, o) {
			if remoteSpec(v, npm) {
				return true
			}
			continue
		}
		switch {
		case i <= sub && !strings.HasPrefix(a, "-"):
			// the subcommand (npm exec, uv tool run)
		case slices.Contains(r.opts, a) && i+1 < len(argv):
			if remoteSpec(argv[i+1], npm) {
				return true
			}
			i++
		case a == "--":
			// npm exec -- PKG
		case slices.Contains(r.values, a):
			i++ // npx -w packages/web, uvx --python 3.12: no package
		case strings.HasPrefix(a, "-"):
		default:
			return remoteSpec(a, npm) // the package, and the rest its arguments
		}
	}
	return false
}

// runnerSubcommand is the index of a package runner's subcommand: its
// first word that is neither an option nor a value option's value (npm
// -w packages/web exec …).
func runnerSubcommand(argv, values []string) int {
	i := 1
	for i < len(argv) && strings.HasPrefix(argv[i], "-") {
		if slices.Contains(values, argv[i]) {
			i++
		}
		i++
	}
	return i
}

// remoteSpec reports whether a package runner's package names code by its
// address: a URL, a git repository (git+…, git@host:…), a forge's
// shorthand (github:, gitlab:, bitbucket:, gist:) and, for npm's
// runners, owner/repo (GitHub's; @scope/pkg is the registry's).
func remoteSpec(spec string, npm bool) bool {
	l := strings.ToLower(spec)
	for _, p := range []string{"git+", "git://", "github:", "gitlab:", "bitbucket:", "gist:", "ssh://"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	if hasURL(l) || remoteRepo(l) && !strings.HasPrefix(l, "pull/") && !strings.Contains(l, "merge-requests/") {
		return true
	}
	return npm && strings.Contains(l, "/") && !strings.ContainsAny(l[:1], "@./~") && !strings.Contains(l, ":")
}
