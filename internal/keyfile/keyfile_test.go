package keyfile_test

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/turnguard/turnguard/internal/core/receipt"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/internal/keyfile"
)

func TestStateKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "state-key")
	key, created, err := keyfile.StateKey(path)
	if err != nil || !created || len(key) != turnstate.StateKeySize {
		t.Fatalf("first start: %d bytes, created %v, %v", len(key), created, err)
	}
	if runtime.GOOS != "windows" {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("key file mode %v (%v), want 0600", fi.Mode().Perm(), err)
		}
	}
	again, created, err := keyfile.StateKey(path)
	if err != nil || created || !bytes.Equal(again, key) {
		t.Fatalf("second start: created %v, same key %v, %v", created, bytes.Equal(again, key), err)
	}
	short := filepath.Join(t.TempDir(), "short")
	if err := os.WriteFile(short, []byte("too short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := keyfile.StateKey(short); err == nil {
		t.Error("a 9-byte key file was accepted")
	}
}

// TestStateKeyConcurrently starts many processors on one missing
// key file at once: all of them end up with the same key.
func TestStateKeyConcurrently(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state-key")
	const n = 16
	keys := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { keys[i], _, errs[i] = keyfile.StateKey(path) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || !bytes.Equal(keys[i], keys[0]) {
			t.Fatalf("starter %d: %v, same key %v", i, errs[i], bytes.Equal(keys[i], keys[0]))
		}
	}
}

func TestWriteReceiptPublic(t *testing.T) {
	dir := t.TempDir()
	priv := filepath.Join(dir, "receipt-key.pem")
	s, _, err := keyfile.ReceiptSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	pubPath := keyfile.ReceiptPublicPath(priv)
	if pubPath != filepath.Join(dir, "receipt-key.pub") {
		t.Fatalf("public path %s", pubPath)
	}
	for range 2 { // the second write finds it in place
		if err := keyfile.WriteReceiptPublic(pubPath, s); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(pubPath)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("public key file %v, %v", fi, err)
	}
	pub, err := keyfile.ReceiptPublic(pubPath)
	if err != nil || !pub.Equal(s.Public()) {
		t.Fatalf("ReceiptPublic: %v", err)
	}
	if p := keyfile.ReceiptPublicPath(filepath.Join(dir, "key.pub")); p == filepath.Join(dir, "key.pub") {
		t.Fatal("the public key would overwrite a private key named .pub")
	}
}

func TestReceiptPublic(t *testing.T) {
	dir := t.TempDir()
	privPath := filepath.Join(dir, "receipt-key.pem")
	s, _, err := keyfile.ReceiptSigner(privPath)
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
			pub, err := keyfile.ReceiptPublic(tt.path)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr && receipt.KeyID(pub) != s.KeyID {
				t.Fatalf("key id %s, want %s", receipt.KeyID(pub), s.KeyID)
			}
		})
	}
}

// TestReceiptSigner: the first start creates the key (mode 0600), the next
// loads the same one, and starters racing on a missing file agree on it.
func TestReceiptSigner(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "receipt-key.pem")
	s, created, err := keyfile.ReceiptSigner(path)
	if err != nil || !created {
		t.Fatalf("first start: created %v, %v", created, err)
	}
	if runtime.GOOS != "windows" {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("key file %v, %v", fi, err)
		}
	}
	again, created, err := keyfile.ReceiptSigner(path)
	if err != nil || created || again.KeyID != s.KeyID {
		t.Fatalf("second start must load the same key: %v %v", created, err)
	}
	racing := filepath.Join(t.TempDir(), "receipt-key.pem")
	const n = 8
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s, _, err := keyfile.ReceiptSigner(racing)
			if err == nil {
				ids[i] = s.KeyID
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("starter %d: %v, key %s, want %s", i, errs[i], ids[i], ids[0])
		}
	}
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	if err := os.WriteFile(garbage, []byte("nope"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := keyfile.ReceiptSigner(garbage); err == nil {
		t.Fatal("a file that is not PEM was loaded as a key")
	}
}

func TestKeyring(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keys.yaml")
	if err := os.WriteFile(path, []byte("default: k1\nkeys:\n  - {id: k1, secret: \"hex:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	kr, err := keyfile.Keyring(path)
	if err != nil || kr.Default != "k1" {
		t.Fatalf("keyring %+v, %v", kr, err)
	}
	if _, err := keyfile.Keyring(filepath.Join(dir, "absent.yaml")); err == nil {
		t.Fatal("a missing keys file was read")
	}
}
