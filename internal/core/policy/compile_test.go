package policy_test

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/core/policy"
	rulepack "github.com/turnguard/turnguard/rules"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestBrokenFiles: every file under testdata/broken is refused with
// diagnostics at precise positions; testdata/broken/<name>.golden holds
// exactly what `processor rules check` prints for it.
func TestBrokenFiles(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "broken", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 10 {
		t.Fatalf("%d broken fixtures, want at least 10 kinds", len(paths))
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			_, err := rulepack.Load(p)
			var ds policy.Diagnostics
			if !errors.As(err, &ds) || len(ds) == 0 {
				t.Fatalf("loaded without diagnostics (err %v)", err)
			}
			var got strings.Builder
			for _, d := range ds {
				if d.Pos.Line < 1 || d.Pos.Col < 1 {
					t.Errorf("diagnostic without a position: %s", d)
				}
				fmt.Fprintln(&got, d)
			}
			golden := strings.TrimSuffix(p, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test ./internal/core/policy -update writes it)", err)
			}
			if got.String() != string(want) {
				t.Errorf("diagnostics differ from %s:\n--- want\n%s--- got\n%s", golden, want, got.String())
			}
		})
	}
}

// FuzzCompile feeds arbitrary bytes to the rule file parser and compiler:
// nothing may panic, and a refusal is always Diagnostics with positions.
func FuzzCompile(f *testing.F) {
	paths, err := filepath.Glob(filepath.Join("testdata", "broken", "*.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	paths = append(paths, filepath.Join("..", "..", "ruletest", "testdata", "windows.yaml"), filepath.Join("..", "..", "..", "rules", "default.yaml"))
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		done := make(chan error, 1)
		go func() {
			file, err := policy.ParseFile("fuzz.yaml", src)
			if err == nil {
				_, err = policy.Compile([]*policy.File{file})
			}
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("no answer within 5s for %q", src)
		}
		if err == nil {
			return
		}
		var ds policy.Diagnostics
		if !errors.As(err, &ds) || len(ds) == 0 {
			t.Fatalf("refusal is %T, not Diagnostics: %v", err, err)
		}
		for _, d := range ds {
			if d.Pos.Line < 1 || d.Pos.Col < 1 {
				t.Fatalf("diagnostic without position: %s", d)
			}
		}
	})
}

// TestRevisionIsContent: the revision a decision cites as policy_version
// is the rule set's content, wherever it was loaded from; any edit changes
// it, and so does the order files are merged in.
func TestRevisionIsContent(t *testing.T) {
	// Relative paths are the repository's, as an operator at its root
	// writes them.
	t.Chdir(filepath.Join("..", "..", ".."))
	src, err := os.ReadFile(filepath.Join("rules", "default.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	elsewhere := filepath.Join(dir, "copy.yaml")
	edited := filepath.Join(dir, "edited.yaml")
	extra := filepath.Join(dir, "extra.yaml")
	for path, body := range map[string]string{
		elsewhere: string(src),
		edited:    strings.Replace(string(src), "window: {turns: 2", "window: {turns: 3", 1),
		extra:     "apiVersion: turnguard/v1\nkind: RuleSet\nmetadata: {name: extra}\n",
	} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	revision := func(paths ...string) string {
		t.Helper()
		rs, err := rulepack.Load(paths...)
		if err != nil {
			t.Fatalf("%v: %v", paths, err)
		}
		return rs.Revision
	}
	want := revision("builtin:default")
	for _, tc := range []struct {
		name  string
		paths []string
		same  bool
	}{
		{"relative path", []string{"rules/default.yaml"}, true},
		{"dot-relative path", []string{"./rules/default.yaml"}, true},
		{"a copy elsewhere", []string{elsewhere}, true},
		{"an edited copy", []string{edited}, false},
		{"another file added", []string{"builtin:default", extra}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := revision(tc.paths...); (got == want) != tc.same {
				t.Errorf("revision %s, builtin:default %s; want same=%v", got, want, tc.same)
			}
		})
	}
	if a, b := revision("builtin:default", extra), revision(extra, "builtin:default"); a == b {
		t.Errorf("files merged in another order have the same revision %s", a)
	}
}

// Diagnostics of several files come file by file, in the order the files
// were given, and by position within each: one report, the same every time.
func TestDiagnosticsOrder(t *testing.T) {
	dir := filepath.Join("testdata", "broken")
	given := []string{filepath.Join(dir, "override-unknown.yaml"), filepath.Join(dir, "window-zero-duration.yaml"), filepath.Join(dir, "bad-enums.yaml")}
	_, err := rulepack.Load(given...)
	var ds policy.Diagnostics
	if !errors.As(err, &ds) {
		t.Fatalf("loaded without diagnostics (err %v)", err)
	}
	index := map[string]int{}
	for i, p := range given {
		index[p] = i
	}
	seen := map[string]bool{}
	for i, d := range ds {
		seen[d.File] = true
		if i == 0 {
			continue
		}
		prev := ds[i-1]
		switch pi, di := index[prev.File], index[d.File]; {
		case pi > di:
			t.Errorf("%s comes after %s, whose file was given later", d, prev)
		case pi == di && (prev.Pos.Line > d.Pos.Line || prev.Pos.Line == d.Pos.Line && prev.Pos.Col > d.Pos.Col):
			t.Errorf("%s comes after %s in the same file", d, prev)
		}
	}
	if len(seen) < 2 {
		t.Fatalf("diagnostics of %d file(s), want several: %v", len(seen), ds)
	}
}
