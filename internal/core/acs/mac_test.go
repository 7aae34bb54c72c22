package acs

import (
	"bytes"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
)

// The allocation-free HMAC and HKDF give the standard library's values,
// for keys and messages on both sides of every length that matters: the
// 64-byte block (a longer key is hashed) and the stack buffer (a longer
// message is copied to the heap).
func TestMACMatchesTheStandardLibrary(t *testing.T) {
	fill := func(n int, seed byte) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = seed + byte(i*7)
		}
		return b
	}
	for _, kn := range []int{0, 1, 32, 63, 64, 65, 100, 200} {
		for _, mn := range []int{0, 1, 55, 56, 64, 119, 120, 1000, macStackBytes - 65, macStackBytes - 64, macStackBytes - 63, macStackBytes, 3 * macStackBytes} {
			key, msg := fill(kn, 3), fill(mn, 11)
			m := hmac.New(sha256.New, key)
			m.Write(msg)
			got := hmacSHA256(key, msg)
			if want := m.Sum(nil); !bytes.Equal(got[:], want) {
				t.Fatalf("HMAC, key %d bytes, message %d bytes: %x, want %x", kn, mn, got, want)
			}
		}
	}
	for _, ikmn := range []int{32, 33, 64, 65, 100} {
		for _, sid := range []string{"", "s", "7f3c2a9e-4b1d-4e8a-9c6f-2d5e8a1b3c70", strings.Repeat("x", MaxIDBytes), strings.Repeat("y", 3*MaxIDBytes)} {
			ikm := fill(ikmn, 5)
			want, err := hkdf.Key(sha256.New, ikm, nil, sid, 32)
			if err != nil {
				t.Fatal(err)
			}
			if got := sessionKey(ikm, sid); !bytes.Equal(got[:], want) {
				t.Fatalf("session key, ikm %d bytes, session id %d bytes: %x, want %x", ikmn, len(sid), got, want)
			}
		}
	}
	var mac [sha256.Size]byte
	copy(mac[:], fill(sha256.Size, 1))
	if got, want := macValue(mac), base64.StdEncoding.EncodeToString(mac[:]); got != want {
		t.Fatalf("macValue %s, want %s", got, want)
	}
}

// Signing a response allocates its signature and nothing else.
func TestSignResponseAllocations(t *testing.T) {
	kr, err := NewKeyring(map[string][]byte{"k1": bytes.Repeat([]byte{1}, 32)}, "k1", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &Response{JSONRPC: "2.0", ID: []byte(`"a1c7e9f0-3b2d-4c5e-8f61-0d2e4a6b8c01"`), Result: &Result{Type: ResultTypeFinal, ACSVersion: Version,
		RequestID: "a1c7e9f0-3b2d-4c5e-8f61-0d2e4a6b8c01", Decision: Allow, Metadata: &ResultMetadata{Evaluator: "deterministic"}}}
	n := testing.AllocsPerRun(100, func() {
		if err := kr.SignResponse(r, "k1", "7f3c2a9e-4b1d-4e8a-9c6f-2d5e8a1b3c70"); err != nil {
			t.Fatal(err)
		}
	})
	if n != 2 { // the Signature and its value
		t.Fatalf("SignResponse: %v allocations, want 2", n)
	}
}
