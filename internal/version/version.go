// Package version says what a turnguard binary was built from, in one line
// that every command prints for `version` and `--version`:
//
//	processor v0.0.0-20261203100000-1a2b3c4d5e6f+dirty (rev 1a2b3c4d5e6f, 2026-12-03T10:00:00Z, modified) go1.26.8
//	replay (devel) go1.26.8
//
// That is: the binary's name; the module version (a tag, a pseudo-version,
// or "(devel)" when Go stamped none); in parentheses what Go's VCS stamp
// knows — the first 12 hex digits of vcs.revision, vcs.time, and
// "modified" when the working tree had uncommitted changes; then the Go
// toolchain. A build without VCS information (-buildvcs=false, a tree
// without .git, go run) has no parentheses at all rather than empty ones.
package version

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// version, when set at link time, replaces the module version Go stamped:
//
//	go build -ldflags "-X github.com/turnguard/turnguard/internal/version.version=v1.2.3"
//
// The container images set it, because their builds see no Git metadata.
var version string

// revisionLen is how much of vcs.revision is shown: as in Go's
// pseudo-versions, enough to be unique in practice and still short.
const revisionLen = 12

// String is the version line of the running binary called name.
func String(name string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		// A binary built without module support: only the toolchain
		// is known.
		bi = &debug.BuildInfo{GoVersion: runtime.Version()}
	}
	if version != "" {
		// A copy, so that the process-wide build info is not changed.
		b := *bi
		b.Main.Version = version
		bi = &b
	}
	return Format(name, bi)
}

// Format is the version line of a binary called name built as bi. It reads
// nothing but its arguments, so that every shape of build info can be
// tested.
func Format(name string, bi *debug.BuildInfo) string {
	mod := "(devel)"
	goVersion := ""
	var settings []debug.BuildSetting
	if bi != nil {
		if bi.Main.Version != "" {
			mod = bi.Main.Version
		}
		goVersion = bi.GoVersion
		settings = bi.Settings
	}
	var rev, at string
	modified := false
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	var vcs []string
	if rev != "" {
		vcs = append(vcs, "rev "+rev[:min(len(rev), revisionLen)])
	}
	if at != "" {
		vcs = append(vcs, at)
	}
	if modified {
		vcs = append(vcs, "modified")
	}
	var b strings.Builder
	b.WriteString(name)
	b.WriteString(" ")
	b.WriteString(mod)
	if len(vcs) > 0 {
		b.WriteString(" (")
		b.WriteString(strings.Join(vcs, ", "))
		b.WriteString(")")
	}
	if goVersion != "" {
		b.WriteString(" ")
		b.WriteString(goVersion)
	}
	return b.String()
}
