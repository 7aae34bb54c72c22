package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A mistake on the command line or in a file the processor needs stops it
// before it creates anything: no data dir, no keys, no authority, no NATS.
func TestMistakesStopBeforeAnythingStarts(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	badRules := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(badRules, []byte("rules: [{id: X, when: 'nonsense ((('}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"an --http address without a port", []string{"--auth", "none", "--http", "127.0.0.1"}, 2, `--http "127.0.0.1"`},
		{"an --http address in use", []string{"--auth", "none", "--http", busy.Addr().String()}, 1, "--http " + busy.Addr().String()},
		{"the embedded server's --listen address in use", []string{"--listen", busy.Addr().String()}, 1, "--listen " + busy.Addr().String()},
		{"a missing rules file", []string{"--rules", "/nonexistent/rules.yaml"}, 1, "/nonexistent/rules.yaml"},
		{"a rules file that does not compile", []string{"--rules", badRules}, 1, "bad.yaml"},
		{"a missing keys file", []string{"--keys", "/nonexistent/keys.yaml"}, 1, "/nonexistent/keys.yaml"},
		{"a missing listen certificate", []string{"--listen-tls-cert", "/nonexistent/c.pem", "--listen-tls-key", "/nonexistent/k.pem"}, 1, "/nonexistent/c.pem"},
		{"a missing callers file", []string{"--http", "127.0.0.1:0", "--http-tokens", "/nonexistent/callers.yaml"}, 1, "/nonexistent/callers.yaml"},
		{"a missing NATS credential", []string{"--nats-url", "nats://127.0.0.1:1", "--nats-creds", "/nonexistent/p.creds"}, 2, "/nonexistent/p.creds"},
		{"a missing nats context", []string{"--nats-context", "nope"}, 2, `no nats context "nope"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("XDG_CONFIG_HOME", t.TempDir())
			data := filepath.Join(t.TempDir(), "data")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var stdout, stderr bytes.Buffer
			args := append([]string{"--data-dir", data, "--listen", "127.0.0.1:0", "--log-format", "json"}, tc.args...)
			code := run(ctx, args, &stdout, &stderr)
			if code != tc.wantCode || !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("exit %d, want %d with %q; stderr:\n%s", code, tc.wantCode, tc.want, stderr.String())
			}
			if _, err := os.Stat(data); !os.IsNotExist(err) {
				entries, _ := os.ReadDir(data)
				t.Fatalf("the data dir was touched (%v): %v", err, entries)
			}
		})
	}
}
