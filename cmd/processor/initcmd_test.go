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

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/turnguard/turnguard/internal/gateway"
	"github.com/turnguard/turnguard/internal/keyfile"
	"github.com/turnguard/turnguard/internal/natsauth"
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
	if _, _, err := keyfile.ReceiptSigner(filepath.Join(dir, "receipt-key.pem")); err != nil {
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

// TestInitUpgradesLayout1: over an authority of the one-account layout,
// init revokes the credentials it wrote (moved aside) and writes new ones
// in the new accounts, and rewrites an auth.conf that preloads accounts.
func TestInitUpgradesLayout1(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tg")
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"init", "--dir", dir}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	// What layout 1 looked like: no layout file, a memory resolver.
	if err := os.Remove(filepath.Join(dir, "auth", "layout.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "auth.conf"), []byte("resolver: MEMORY\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Layout 1's agent credential: signed by the one account's key.
	seed, err := os.ReadFile(filepath.Join(dir, "auth", "account.nk"))
	if err != nil {
		t.Fatal(err)
	}
	account, err := nkeys.FromSeed(bytes.TrimSpace(seed))
	if err != nil {
		t.Fatal(err)
	}
	user, _ := nkeys.CreateUser()
	pub, _ := user.PublicKey()
	uc := jwt.NewUserClaims(pub)
	uc.Permissions = natsauth.User{Role: natsauth.RoleAgent, Tenant: "default"}.Permissions()
	userJWT, err := uc.Encode(account)
	if err != nil {
		t.Fatal(err)
	}
	userSeed, _ := user.Seed()
	old, err := jwt.FormatUserConfig(userJWT, userSeed)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "creds", "agent.creds"), old, 0o600); err != nil {
		t.Fatal(err)
	}
	if code := run(context.Background(), []string{"init", "--dir", dir}, &out, &errOut); code != 0 {
		t.Fatalf("second init: exit %d: %s", code, errOut.String())
	}
	auth, err := natsauth.Load(filepath.Join(dir, "auth"))
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range []natsauth.Role{natsauth.RoleAgent, natsauth.RoleSecurity, natsauth.RoleAdmin, natsauth.RoleProcessor} {
		u := natsauth.User{Role: role}
		if role == natsauth.RoleAgent {
			u.Tenant = "default"
		}
		creds, err := os.ReadFile(filepath.Join(dir, "creds", string(role)+".creds"))
		if err != nil {
			t.Fatal(err)
		}
		if !auth.Current(creds, u) {
			t.Errorf("%s.creds after the upgrade is not current", role)
		}
		// Security was already in its account (this authority was made by
		// this version); the others were revoked.
		if _, err := os.Stat(filepath.Join(dir, "creds", string(role)+".creds.revoked")); (err == nil) == (role == natsauth.RoleSecurity) {
			t.Errorf("%s.creds.revoked: %v", role, err)
		}
	}
	if moved, err := os.ReadFile(filepath.Join(dir, "creds", "agent.creds.revoked")); err != nil || !bytes.Equal(moved, old) || auth.Current(old, natsauth.User{Role: natsauth.RoleAgent, Tenant: "default"}) {
		t.Errorf("agent.creds.revoked is not the revoked credential: %v", err)
	}
	if conf, err := os.ReadFile(filepath.Join(dir, "auth.conf")); err != nil || !strings.Contains(string(conf), "type: full") {
		t.Errorf("auth.conf of layout 1 was not rewritten: %s, %v", conf, err)
	}
}
