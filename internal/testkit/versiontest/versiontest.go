// Package versiontest checks what a command prints for its version: one
// line beginning with the command's name (internal/version's line), and
// exit status 0. Every command's TestVersionFlag calls Check, so that they
// all hold their binaries to the same line. Only tests import it.
package versiontest

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

// Run is a command's entry point as its tests call it: the command line
// (without the program name) in, the exit status out.
type Run func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// Check runs run once per command line, each split on spaces ("--version",
// "version", "--log-level x --version"), and fails t unless every one exits
// 0 having printed exactly one line that begins with name and a space.
func Check(t testing.TB, name string, run Run, commandLines ...string) {
	t.Helper()
	if len(commandLines) == 0 {
		t.Fatal("versiontest.Check: no command line to run")
	}
	for _, line := range commandLines {
		var out, errOut bytes.Buffer
		if code := run(t.Context(), strings.Fields(line), &out, &errOut); code != 0 {
			t.Errorf("%s %s: exit %d: %s", name, line, code, errOut.String())
			continue
		}
		if got := out.String(); !strings.HasPrefix(got, name+" ") || strings.Count(got, "\n") != 1 || !strings.HasSuffix(got, "\n") {
			t.Errorf("%s %s printed %q, want one line beginning %q", name, line, got, name+" ")
		}
	}
}
