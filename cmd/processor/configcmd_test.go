package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigCheck: config check reads the file as a start would, checks
// the files it names, and says what it found or why a start would fail.
func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := write("good.yaml", "rules: [builtin:default]\nskew-window: 2m\nmax_envelope_bytes: 65536\n")
	broken := write("broken-rules.yaml", "apiVersion: turnguard/v1\nkind: RuleSet\nrules: [{id: X}]\n")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"a good file", []string{"--config", good}, 0, "max-envelope-bytes 65536, skew-window 2m0s"},
		{"the command line over the file", []string{"--config", good, "--skew-window", "30s"}, 0, "skew-window 30s"},
		{"an unknown setting", []string{"--config", write("typo.yaml", "skew-windw: 2m\n")}, 2, "line 1: skew-windw: no such setting"},
		{"a bad value", []string{"--config", write("bad.yaml", "on-rule-error: maybe\n")}, 2, "--on-rule-error"},
		{"rules that do not compile", []string{"--config", write("r.yaml", "rules: ["+broken+"]\n")}, 1, "rules:"},
		{"a missing file", []string{"--config", filepath.Join(dir, "nope.yaml")}, 2, "--config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), append([]string{"config", "check"}, tt.args...), &out, &errOut)
			if code != tt.code || !strings.Contains(out.String()+errOut.String(), tt.want) {
				t.Fatalf("exit %d (want %d)\nstdout %s\nstderr %s\nwant %q", code, tt.code, out.String(), errOut.String(), tt.want)
			}
		})
	}
}
