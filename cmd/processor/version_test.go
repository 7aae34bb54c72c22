package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestVersionFlag(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, &out, &errOut); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut.String())
		}
		if got := out.String(); !strings.HasPrefix(got, "processor ") || strings.Count(got, "\n") != 1 {
			t.Errorf("%v printed %q, want one line beginning %q", args, got, "processor ")
		}
	}
}

// --version wins over flags that would otherwise stop the processor.
func TestVersionFlagBeforeValidation(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"--on-decision-failure", "maybe", "--version"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.HasPrefix(out.String(), "processor ") {
		t.Errorf("printed %q", out.String())
	}
}

// TURNGUARD_VERSION is scripts/build-images.sh's input, not --version: a
// processor started with it set must still serve.
func TestVersionFlagIgnoresEnvironment(t *testing.T) {
	t.Setenv("TURNGUARD_VERSION", "true")
	c, err := parseFlags(nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c.showVersion {
		t.Fatal("TURNGUARD_VERSION set --version")
	}
}
