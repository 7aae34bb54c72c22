package rules

import (
	"path"
	"testing"
)

// FuzzGlobMatch checks the shortcuts of globMatch against path.Match.
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
	})
}
