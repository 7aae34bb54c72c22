package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/gateway"
)

// TestHTTPTokenAdd: http-token add prints a new token once, on standard
// output, and writes only its hash; certificate callers get no token.
func TestHTTPTokenAdd(t *testing.T) {
	file := filepath.Join(t.TempDir(), "callers.yaml")
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"http-token", "add", "--tokens", file, "--name", "laptop", "--tenant", "acme", "--agent-id", "claude-code:1"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	token := strings.TrimSpace(out.String())
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(token, gateway.TokenPrefix) || strings.Contains(string(raw), token) || !strings.Contains(string(raw), gateway.HashToken(token)) ||
		!strings.Contains(string(raw), "agent_id: claude-code:1") {
		t.Fatalf("token %q, file:\n%s", token, raw)
	}
	out.Reset()
	if code := run(context.Background(), []string{"http-token", "add", "--tokens", file, "--name", "ci", "--tenant", "acme", "--cert-uri", "spiffe://acme/ci"}, &out, &errOut); code != 0 || out.Len() != 0 {
		t.Fatalf("certificate caller: exit %d, stdout %q: %s", code, out.String(), errOut.String())
	}
	cs, err := gateway.LoadCallers(file)
	if err != nil || cs.Len() != 2 {
		t.Fatalf("%v %v", cs, err)
	}
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"http-token"}, 2},
		{[]string{"http-token", "add", "--tokens", file, "--name", "x"}, 2},
		{[]string{"http-token", "add", "--tokens", file, "--name", "laptop", "--tenant", "acme"}, 1},
		{[]string{"http-token", "add", "--tokens", file, "--name", "y", "--tenant", "a.b"}, 1},
		{[]string{"http-token", "add", "--tokens", file, "--name", "z", "--tenant", "acme", "--cert-dns", "a", "--cert-uri", "b"}, 1},
	} {
		if code := run(context.Background(), tc.args, &out, &errOut); code != tc.code {
			t.Errorf("%q: exit %d, want %d", tc.args, code, tc.code)
		}
	}
}

// TestHTTPSecurityAtStart: the files behind the flags are checked before
// anything starts.
func TestHTTPSecurityAtStart(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.yaml")
	certs := filepath.Join(dir, "certs.yaml")
	_ = os.WriteFile(empty, []byte("callers: []\n"), 0o600)
	_ = os.WriteFile(certs, []byte("callers:\n  - {name: ci, tenant: acme, cert_uri: spiffe://acme/ci}\n"), 0o600)
	for _, tc := range []struct {
		name, want string
		args       []string
	}{
		{"a missing callers file", "--http-tokens", []string{"--http-tokens", filepath.Join(dir, "missing.yaml")}},
		{"no callers", "lists no callers", []string{"--http-tokens", empty}},
		{"certificate callers without a client CA", "--http-client-ca", []string{"--http-tokens", certs}},
		{"a missing certificate", "--http-tls-cert", []string{"--http-tokens", certs, "--http-tls-cert", filepath.Join(dir, "c.pem"), "--http-tls-key", filepath.Join(dir, "k.pem"), "--http-client-ca", filepath.Join(dir, "ca.pem")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := append([]string{"--http", "127.0.0.1:0", "--listen", "none", "--data-dir", t.TempDir(), "--log-format", "json"}, tc.args...)
			if code := run(context.Background(), args, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), tc.want) {
				t.Fatalf("exit %d, stderr %s", code, errOut.String())
			}
		})
	}
}
