package policy

import (
	"path"
	"strings"
	"testing"
)

// FuzzGlobMatch checks the shortcuts of globMatch, and the literal prefix
// ToolClasses filters with, against path.Match.
func FuzzGlobMatch(f *testing.F) {
	for _, c := range [][2]string{{"web_fetch*", "web_fetch_page"}, {"Bash", "Bash"}, {"Bash", "bash"}, {"mcp__*__fetch*", "mcp__x__fetch"},
		{"fetch*", "fetch/x"}, {"a\\*", "a*"}, {"payments.*", "payments.transfer"}, {"[", "["}, {"*", ""}, {"a/*", "a/b"}} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		want, _ := path.Match(pattern, s)
		if got := globMatch(pattern, s); got != want {
			t.Fatalf("globMatch(%q, %q) = %v, path.Match %v", pattern, s, got, want)
		}
		// ToolClasses skips a glob whose literal prefix the name lacks.
		if p := literalPrefix(pattern); want && !strings.HasPrefix(s, p) {
			t.Fatalf("path.Match(%q, %q) holds, but the name lacks the literal prefix %q", pattern, s, p)
		}
	})
}
