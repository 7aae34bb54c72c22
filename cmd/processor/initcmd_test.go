package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/gateway"
	"github.com/turnguard/turnguard/internal/receipt"
)

// TestInit: processor init lays out everything a separate deployment
// shares, and a second run over the same directory changes nothing (the
// compose file runs it at every `up`).
func TestInit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tg")
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"init", "--dir", dir, "--http-names", "localhost, 127.0.0.1,processor1"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	files := []string{"auth.conf", "creds/agent.creds", "creds/security.creds", "creds/admin.creds", "creds/processor.creds",
		"state-key", "receipt-key.pem", "receipt-key.pub", "http-tls.pem", "http-tls-key.pem", "http-tokens.yaml", "http-token"}
	before := map[string][]byte{}
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || len(raw) == 0 {
			t.Fatalf("%s: %v (%d bytes)", f, err, len(raw))
		}
		before[f] = raw
	}
	// The certificate is for the names given.
	block, _ := pem.Decode(before["http-tls.pem"])
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if err := cert.VerifyHostname("processor1"); err != nil {
		t.Error(err)
	}
	if err := cert.VerifyHostname("127.0.0.1"); err != nil {
		t.Error(err)
	}
	// The token is the demo caller's, whose hash alone is in the callers file.
	token := strings.TrimSpace(string(before["http-token"]))
	callers, err := gateway.LoadCallers(filepath.Join(dir, "http-tokens.yaml"))
	if err != nil || callers.Len() != 1 || strings.Contains(string(before["http-tokens.yaml"]), token) ||
		!strings.Contains(string(before["http-tokens.yaml"]), gateway.HashToken(token)) {
		t.Fatalf("callers %v (%v):\n%s", callers, err, before["http-tokens.yaml"])
	}
	if _, _, err := receipt.LoadOrCreate(filepath.Join(dir, "receipt-key.pem")); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"state-key", "receipt-key.pem", "http-tls-key.pem", "http-token", "creds/processor.creds"} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is %s: readable by others", f, fi.Mode().Perm())
		}
	}

	out.Reset()
	if code := run(context.Background(), []string{"init", "--dir", dir}, &out, &errOut); code != 0 {
		t.Fatalf("second run: exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "nothing created") {
		t.Errorf("second run: %q", out.String())
	}
	for _, f := range files {
		if raw, _ := os.ReadFile(filepath.Join(dir, f)); !bytes.Equal(raw, before[f]) {
			t.Errorf("%s changed on the second run", f)
		}
	}
	if code := run(context.Background(), []string{"init"}, &out, &errOut); code != 2 {
		t.Errorf("init without --dir: exit %d", code)
	}
}
