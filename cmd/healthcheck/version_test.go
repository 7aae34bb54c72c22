package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestVersionFlag(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"--version"}, &out, &errOut, time.Second); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if got := out.String(); !strings.HasPrefix(got, "healthcheck ") || strings.Count(got, "\n") != 1 {
		t.Errorf("printed %q, want one line beginning %q", got, "healthcheck ")
	}
}
