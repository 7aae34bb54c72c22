package receipt_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/turnguard/turnguard/internal/acs"
	"github.com/turnguard/turnguard/internal/receipt"
)

func TestReceipts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "receipt-key.pem")
	s, created, err := receipt.LoadOrCreate(path)
	if err != nil || !created {
		t.Fatalf("first start: created %v, %v", created, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v, %v", fi, err)
	}
	again, created, err := receipt.LoadOrCreate(path)
	if err != nil || created || again.KeyID != s.KeyID {
		t.Fatalf("second start must load the same key: %v %v", created, err)
	}
	r := &acs.Response{JSONRPC: "2.0", ID: json.RawMessage(`"x"`), Result: &acs.Result{Type: "final", ACSVersion: "0.1.0", RequestID: "r", Decision: acs.Deny, Reasoning: "no <script> & such"}}
	rc, err := s.Sign(r)
	if err != nil {
		t.Fatal(err)
	}
	// The receipt verifies against the decision as any serializer writes it.
	raw, _ := json.MarshalIndent(r, "", "  ")
	pub, err := receipt.ParsePublicPEM(s.PublicPEM())
	if err != nil {
		t.Fatal(err)
	}
	if err := receipt.Verify(pub, raw, rc); err != nil {
		t.Fatalf("receipt does not verify: %v", err)
	}
	r.Result.Decision = acs.Allow
	tampered, _ := json.Marshal(r)
	if err := receipt.Verify(pub, tampered, rc); err == nil {
		t.Fatal("a tampered decision verified")
	}
	if again, _ := s.Sign(&acs.Response{JSONRPC: "2.0", ID: json.RawMessage(`"x"`), Result: &acs.Result{Type: "final", ACSVersion: "0.1.0", RequestID: "r", Decision: acs.Deny, Reasoning: "no <script> & such"}}); again != rc {
		t.Fatal("receipts are not deterministic")
	}
}

func TestLoadPublic(t *testing.T) {
	dir := t.TempDir()
	privPath := filepath.Join(dir, "receipt-key.pem")
	s, _, err := receipt.LoadOrCreate(privPath)
	if err != nil {
		t.Fatal(err)
	}
	pubPath := filepath.Join(dir, "receipt-key.pub.pem")
	if err := os.WriteFile(pubPath, s.PublicPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	notPEM := filepath.Join(dir, "garbage")
	if err := os.WriteFile(notPEM, []byte("nope"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		wantErr    bool
	}{
		{"private key", privPath, false},
		{"public key", pubPath, false},
		{"not PEM", notPEM, true},
		{"missing", filepath.Join(dir, "absent.pem"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pub, err := receipt.LoadPublic(tt.path)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr && receipt.KeyID(pub) != s.KeyID {
				t.Fatalf("key id %s, want %s", receipt.KeyID(pub), s.KeyID)
			}
		})
	}
}
