package shellcmd

import (
	"slices"
	"testing"
)

// The words a shell expands as globs: unquoted, unescaped * ? [ — not a
// pattern quoted for a program, a commit message's, a here-document's.
func TestGlobWords(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"cat */README.md", []string{"*/README.md"}},
		{"rm -f *.log && ls w*", []string{"*.log", "w*"}},
		{"cat 'wid'get/*.md", []string{"widget/*.md"}},
		{"bash -lc 'cat */x'", []string{"*/x"}},
		{"rg -g '**/*.go' TODO src", nil},
		{"git commit -m 'build: ignore */dist output'", nil},
		{"echo \"**/*.log\" >> .gitignore", nil},
		{"git commit -m \"$(cat <<'EOF'\nchore: add **/*.log\nEOF\n)\"", nil},
		{"expr 3 \\* 4", nil},
		{"psql -c 'SELECT * FROM users'", nil},
		{"rg TODO 'unterminated */x", []string{"*/x"}}, // refused: every glob-like word
	} {
		if got := GlobWords(tc.line); !slices.Equal(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.line, got, tc.want)
		}
	}
	if got := ArgvGlobWords([]string{"bash", "-lc", "cat */x"}); !slices.Equal(got, []string{"*/x"}) {
		t.Errorf("argv shell: %q", got)
	}
	if got := ArgvGlobWords([]string{"cat", "*/x"}); got != nil {
		t.Errorf("argv without a shell expands nothing: %q", got)
	}
}

func FuzzGlobWords(f *testing.F) {
	for _, s := range []string{"cat */x", "rg -g '**' x", "bash -c 'ls *'", "echo \"*\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if got := GlobWords(line); len(got) > MaxGlobWords {
			t.Fatalf("%q: %d words", line, len(got))
		}
	})
}
