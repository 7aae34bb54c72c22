package gateway_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/gateway"
)

func TestParseCallers(t *testing.T) {
	h := gateway.HashToken("a token")
	tests := []struct {
		name    string
		file    string
		callers int
		wantErr string
	}{
		{"empty file", "", 0, ""},
		{"no callers", "callers: []\n", 0, ""},
		{"token and certificate callers", authCallers(), 7, ""},
		{"an upper-case hash", "callers:\n  - {name: a, tenant: t, token_sha256: " + strings.ToUpper(h) + "}\n", 1, ""},
		{"an unknown field", "callers:\n  - {name: a, tenant: t, token: secret}\n", 0, "field token not found"},
		{"an unknown top-level field", "tokens: []\n", 0, "field tokens not found"},
		{"no name", "callers:\n  - {tenant: t, token_sha256: " + h + "}\n", 0, "name must be set"},
		{"a name longer than the state keeps", "callers:\n  - {name: " + strings.Repeat("n", 257) + ", tenant: t, token_sha256: " + h + "}\n", 0, "at most 256"},
		{"a name twice", "callers:\n  - {name: a, tenant: t, token_sha256: " + h + "}\n  - {name: a, tenant: t, cert_dns: x}\n", 0, "used twice"},
		{"a token twice", "callers:\n  - {name: a, tenant: t, token_sha256: " + h + "}\n  - {name: b, tenant: u, token_sha256: " + h + "}\n", 0, "the same token"},
		{"a plaintext token", "callers:\n  - {name: a, tenant: t, token_sha256: tgt_secret}\n", 0, "64 hex digits"},
		{"a short hash", "callers:\n  - {name: a, tenant: t, token_sha256: abcd}\n", 0, "64 hex digits"},
		{"no credential", "callers:\n  - {name: a, tenant: t}\n", 0, "exactly one"},
		{"a token and a certificate", "callers:\n  - {name: a, tenant: t, token_sha256: " + h + ", cert_dns: x}\n", 0, "exactly one"},
		{"two certificate identities", "callers:\n  - {name: a, tenant: t, cert_dns: x, cert_uri: y}\n", 0, "exactly one"},
		{"a tenant with a dot", "callers:\n  - {name: a, tenant: a.b, token_sha256: " + h + "}\n", 0, "tenant token"},
		{"no tenant", "callers:\n  - {name: a, token_sha256: " + h + "}\n", 0, "tenant token"},
		{"a null entry", "callers:\n  -\n", 0, "empty entry"},
		{"not YAML", "callers: [", 0, "callers file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := gateway.ParseCallers([]byte(tc.file))
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one mentioning %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case cs.Len() != tc.callers:
				t.Fatalf("%d callers, want %d", cs.Len(), tc.callers)
			}
		})
	}
}

// TestAppendCaller: http-token add's file handling. Entries are added to
// a new or existing file, comments survive, the file stays 0600, and a
// caller that would make the file invalid is not written.
func TestAppendCaller(t *testing.T) {
	path := filepath.Join(t.TempDir(), "callers.yaml")
	token, hash, err := gateway.NewToken()
	if err != nil || !strings.HasPrefix(token, gateway.TokenPrefix) || gateway.HashToken(token) != hash || len(token) < 40 {
		t.Fatalf("NewToken: %q %q %v", token, hash, err)
	}
	if err := gateway.AppendCaller(path, gateway.Caller{Name: "alice", Tenant: "acme", TokenSHA256: hash}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append([]byte("# who may call turnguard\n"), raw...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := gateway.AppendCaller(path, gateway.Caller{Name: "ci", Tenant: "acme", AgentID: "ci-agent", CertURI: "spiffe://acme/ci"}); err != nil {
		t.Fatal(err)
	}
	if err := gateway.AppendCaller(path, gateway.Caller{Name: "alice", Tenant: "other", TokenSHA256: gateway.HashToken("x")}); err == nil || !strings.Contains(err.Error(), "used twice") {
		t.Fatalf("a second alice: %v", err)
	}
	cs, err := gateway.LoadCallers(path)
	if err != nil || cs.Len() != 2 || !cs.HasTokens() || !cs.HasCerts() {
		t.Fatalf("%v %v", cs, err)
	}
	if raw, err = os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "# who may call turnguard") || strings.Contains(string(raw), token) {
		t.Fatalf("file:\n%s", raw)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
}

// FuzzParseCallers: whatever the file holds, parsing ends in an error or
// in callers that each have a name, a tenant and one credential.
func FuzzParseCallers(f *testing.F) {
	f.Add([]byte(authCallers()))
	f.Add([]byte("callers:\n  - {name: a, tenant: t, token_sha256: " + gateway.HashToken("x") + "}\n"))
	f.Add([]byte("callers: [{name: a, tenant: t, cert_subject: 'CN=a,O=b'}]"))
	f.Add([]byte("callers: &a [*a]"))
	f.Add([]byte("callers:\n  - !!binary aGVsbG8=\n"))
	f.Add([]byte("{callers: null}"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		cs, err := gateway.ParseCallers(raw)
		if err != nil {
			return
		}
		for _, tenant := range cs.Tenants() {
			if tenant == "" || strings.ContainsAny(tenant, ". *>") {
				t.Fatalf("tenant %q accepted", tenant)
			}
		}
	})
}
