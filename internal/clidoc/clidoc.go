// Package clidoc generates the flag reference of docs/reference/ from the
// commands' own --help, and checks it, so that the reference is the flag
// definitions and cannot drift from them.
package clidoc

import (
	"os"
	"strings"
	"testing"
)

// Reference is a command's reference page: a title and an introduction,
// then, for each argument list, what help prints for it.
func Reference(binary, intro string, commands [][]string, help func(args []string) string) string {
	var b strings.Builder
	b.WriteString("# " + binary + ": every flag and subcommand\n\n" + intro + "\n")
	for _, args := range commands {
		name := binary
		for _, a := range args {
			if !strings.HasPrefix(a, "-") {
				name += " " + a
			}
		}
		b.WriteString("\n## " + name + "\n\n```\n" + strings.TrimRight(help(args), "\n") + "\n```\n")
	}
	return b.String()
}

// Check compares a generated page with the file at path, rewriting the
// file first when update is set (go test -update).
func Check(t testing.TB, path, got string, update bool) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the commands' --help (go test -update rewrites it):\n%s", path, got)
	}
}
