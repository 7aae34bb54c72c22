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
		if got := out.String(); !strings.HasPrefix(got, "loadgen ") || strings.Count(got, "\n") != 1 {
			t.Errorf("%v printed %q, want one line beginning %q", args, got, "loadgen ")
		}
	}
}
