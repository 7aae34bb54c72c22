package shellcmd

import (
	"slices"
	"strings"
	"testing"
)

// The directories a line reads everything under: a recursive search's
// operands past its pattern and options' values, the working directory
// when it names none; find's roots when what it finds is read; a
// listing's recursive names. Commands that read a file they name, or
// search without recursing, are no search.
func TestSearchRoots(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"rg TODO", []string{"."}},
		{"rg -t go -n TODO src/ cmd", []string{"cmd", "src/"}},
		{"rg -e TODO -e FIXME", []string{"."}},
		{"grep -rn TODO .", []string{"."}},
		{"grep -R --include '*.go' TODO vendor/", []string{"vendor/"}},
		{"grep -A 3 -r TODO widget", []string{"widget"}},
		{"cd app && ag needle", []string{"."}},
		{"find . -name '*.md' -exec cat {} +", []string{"."}},
		{"find widget docs -type f | xargs cat", []string{"docs", "widget"}},
		{"find -name '*.go' -execdir head {} ;", []string{"."}},
		{"tree -L 2", []string{"."}},
		{"ls -laR widget", []string{"widget"}},
		{"git status; rg -l x lib", []string{"lib"}},
		// fd lists what is under its paths (past its pattern), and -x
		// reads it; the command's words are not paths.
		{"fd -e md", []string{"."}},
		{"fd TODO src docs -x cat", []string{"docs", "src"}},
		{`fd -t f -x cat {} \; notes`, []string{"."}},
		{`fd -x cat {} \; TODO src`, []string{"src"}},
		{"fd --search-path a --base-directory b -X wc -l", []string{"a", "b"}},
		// PowerShell's recursive listing (Get-ChildItem -Recurse, gci -r,
		// ls -r and dir -s on Windows), piped to Select-String or not.
		{"Get-ChildItem -Recurse src | Select-String TODO", []string{"src"}},
		{"Get-ChildItem -Path src,docs -Recurse -Filter *.md", []string{"docs", "src"}},
		{"Get-ChildItem widget *.md -Depth 2", []string{"widget"}},
		{"gci -r | sls TODO", []string{"."}},
		{"gci -Rec -Include *.ps1 -LiteralPath lib", []string{"lib"}},
		{"ls -r", []string{"."}},
		{"dir -s docs", []string{"docs"}},
		// No search of everything under a directory:
		{"grep TODO main.go", nil},
		{"find . -name '*.md'", nil},
		{"ls -la", nil},
		{"cat README.md", nil},
		{"git grep TODO", nil},
		{"Get-ChildItem src", nil},
		{"ls -ltr", nil},
		{"Select-String -Path *.md -Pattern TODO", nil},
	} {
		if got := SearchRoots(tc.line); !slices.Equal(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.line, got, tc.want)
		}
	}
	if got := ArgvSearchRoots([]string{"rg", "TODO"}); !slices.Equal(got, []string{"."}) {
		t.Errorf("argv: %q", got)
	}
	// A line the parser refuses still searches where it names a search.
	if got := SearchRoots("rg TODO 'unterminated"); !slices.Equal(got, []string{"."}) {
		t.Errorf("refused line: %q", got)
	}
	// Bounded: a crafted line gives at most MaxSearchRoots.
	if got := SearchRoots("rg x " + strings.Repeat("d ", 1000)); len(got) > MaxSearchRoots {
		t.Errorf("%d roots", len(got))
	}
}

func FuzzSearchRoots(f *testing.F) {
	for _, s := range []string{"rg TODO", "grep -rn x .", "find . -exec cat {} +", "find a | xargs cat", "ls -R", "tree",
		"fd -x a ; b c", "fd --search-path", "fd -Xb", "gci -r -Path", "Get-ChildItem -Depth", "dir -s a,b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		got := SearchRoots(line)
		if len(got) > MaxSearchRoots || !slices.IsSorted(got) {
			t.Fatalf("%q: %q", line, got)
		}
	})
}
