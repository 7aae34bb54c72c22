package shellcmd

import (
	"slices"
	"strings"
)

// RemoteCode is the name Programs gives a command that fetches a
// program from where the line names it and runs it: a package runner
// given a URL or a repository instead of a registry's package (npx
// github:owner/repo, npx owner/repo, bunx https://…/pkg.tgz, uvx --from
// git+https://…, pipx run --spec git+…). What it prints is what the
// code's author wrote. A registry's package (npx eslint, uvx ruff) is not
// one, as installing it is not: the project's own tools run that way —
// nor is go run MODULE@VERSION, which the module proxy serves as a
// registry does (go run …/staticcheck@v0.8.2).
const RemoteCode = "remote code"

// packageRunners run a package they fetch: the subcommand that does
// ("" for none: npx PKG), and the options whose value names the package.
var packageRunners = map[string]struct {
	sub  []string
	opts []string
}{
	"npx":  {opts: []string{"-p", "--package"}},
	"bunx": {opts: []string{"-p", "--package"}},
	"npm":  {sub: []string{"exec", "x"}, opts: []string{"-p", "--package"}},
	"pnpm": {sub: []string{"dlx"}, opts: []string{"--package"}},
	"yarn": {sub: []string{"dlx"}, opts: []string{"-p", "--package"}},
	"bun":  {sub: []string{"x"}, opts: []string{"-p", "--package"}},
	"uvx":  {opts: []string{"--from", "--with"}},
	"uv":   {sub: []string{"tool"}, opts: []string{"--from", "--with"}},
	"pipx": {sub: []string{"run"}, opts: []string{"--spec"}},
}

// remoteCode reports whether a call fetches code from an address the
// line names and runs it (RemoteCode).
func remoteCode(name string, argv []string) bool {
	r, ok := packageRunners[name]
	if !ok {
		return false
	}
	i := 1
	if len(r.sub) > 0 {
		i = slices.IndexFunc(argv[1:], func(a string) bool { return !strings.HasPrefix(a, "-") }) + 1
		if i == 0 || !slices.Contains(r.sub, argv[i]) {
			return false
		}
		i++
		if name == "uv" && (i >= len(argv) || argv[i] != "run") {
			return false // uv tool install …: fetched, not run
		}
	}
	npm := name != "uvx" && name != "uv" && name != "pipx"
	for ; i < len(argv); i++ {
		a := argv[i]
		if o, v, ok := strings.Cut(a, "="); ok && slices.Contains(r.opts, o) {
			if remoteSpec(v, npm) {
				return true
			}
			continue
		}
		switch {
		case slices.Contains(r.opts, a) && i+1 < len(argv):
			if remoteSpec(argv[i+1], npm) {
				return true
			}
			i++
		case a == "--" || a == "run":
			// npm exec -- PKG; uv tool run PKG
		case slices.Contains(runners[name].values, a) || slices.Contains(runners[name].lines, a):
			i++ // npm exec -w WS, npm exec -c 'LINE': no package
		case strings.HasPrefix(a, "-"):
		default:
			return remoteSpec(a, npm) // the package, and the rest its arguments
		}
	}
	return false
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
