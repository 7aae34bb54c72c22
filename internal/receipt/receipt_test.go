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
