package acs_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/testkit/acstest"
)

// envelopeVectors is the signature known answers of the ACS Go reference.
const envelopeVectors = "testdata/envelope-vectors.json"

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		t.Fatal(err)
	}
}

// The audit chain known answers of the ACS Go reference: the canonical
// request params and their hash, and three chained entries, one with a
// non-ASCII entry_id.
func TestChainVectors(t *testing.T) {
	var v struct {
		RequestHash struct {
			Params    json.RawMessage `json:"params"`
			Canonical string          `json:"canonical"`
			Hash      string          `json:"hash"`
		} `json:"request_hash"`
		Chain []struct {
			Entry            acs.ContextEntry `json:"entry"`
			PreviousHash     *string          `json:"previous_hash"`
			CanonicalContent string           `json:"canonical_content"`
			EntryHash        string           `json:"entry_hash"`
		} `json:"chain"`
	}
	readJSON(t, "testdata/chain-vectors.json", &v)
	c, err := acs.CanonicalRaw(v.RequestHash.Params)
	if err != nil || string(c) != v.RequestHash.Canonical {
		t.Fatalf("canonical params:\n%s\nwant\n%s (%v)", c, v.RequestHash.Canonical, err)
	}
	if h, err := acs.RequestHash(v.RequestHash.Params); err != nil || h != v.RequestHash.Hash {
		t.Fatalf("request hash %s, want %s (%v)", h, v.RequestHash.Hash, err)
	}
	prev := ""
	for i, step := range v.Chain {
		if (step.PreviousHash == nil) != (prev == "") || step.PreviousHash != nil && *step.PreviousHash != prev {
			t.Fatalf("entry %d: the vector's previous hash is not the one computed before", i+1)
		}
		c, err := acs.Canonical(step.Entry)
		if err != nil || string(c) != step.CanonicalContent {
			t.Fatalf("entry %d canonical content:\n%s\nwant\n%s", i+1, c, step.CanonicalContent)
		}
		h, err := acs.EntryHash(step.Entry, prev)
		if err != nil || h != step.EntryHash {
			t.Fatalf("entry %d hash %s, want %s (%v)", i+1, h, step.EntryHash, err)
		}
		prev = h
	}
}

// The signature known answers: the HKDF session key, the signing inputs of
// a request and a response, and their HMACs.
func TestSignatureVectors(t *testing.T) {
	v := acstest.ReadEnvelopeVectors(t, envelopeVectors)
	ikm, _ := hex.DecodeString(v.IKMHex)
	key, err := acs.DeriveSessionKey(ikm, v.SessionID)
	if err != nil || hex.EncodeToString(key) != v.SessionKeyHex {
		t.Fatalf("session key %x, want %s (%v)", key, v.SessionKeyHex, err)
	}
	kr, err := acs.NewKeyring(map[string][]byte{v.KeyID: ikm}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		signed map[string]any
		input  string
		sig    map[string]any
	}{
		{"request", v.Request.Signed, v.Request.SigningInput, v.Request.Signed["params"].(map[string]any)["signature"].(map[string]any)},
		{"response", v.Response.Signed, v.Response.SigningInput, v.Response.Signed["result"].(map[string]any)["signature"].(map[string]any)},
	} {
		input, err := acs.SigningInput(c.signed)
		if err != nil || string(input) != c.input {
			t.Fatalf("%s signing input:\n%s\nwant\n%s", c.name, input, c.input)
		}
		sig, err := kr.Sign(v.KeyID, v.SessionID, input)
		if err != nil || sig.Value != c.sig["value"] || sig.Algorithm != c.sig["algorithm"] || sig.KeyID != c.sig["key_id"] {
			t.Fatalf("%s signature %+v, want %v (%v)", c.name, sig, c.sig, err)
		}
		if err := kr.Verify(sig, v.SessionID, input); err != nil {
			t.Fatalf("%s: own signature does not verify: %v", c.name, err)
		}
		bad := *sig
		bad.Value = "AAAA" + sig.Value[4:]
		if err := kr.Verify(&bad, v.SessionID, input); err == nil {
			t.Fatalf("%s: a tampered signature verified", c.name)
		}
	}
	// SigningInput leaves the envelope it reads alone.
	if _, ok := v.Request.Signed["params"].(map[string]any)["signature"]; !ok {
		t.Fatal("SigningInput removed the signature from the caller's envelope")
	}
}

func TestSignResponseMatchesTheVector(t *testing.T) {
	v := acstest.ReadEnvelopeVectors(t, envelopeVectors)
	ikm, _ := hex.DecodeString(v.IKMHex)
	kr, _ := acs.NewKeyring(map[string][]byte{v.KeyID: ikm}, "", nil)
	raw, err := json.Marshal(v.Response.Signed)
	if err != nil {
		t.Fatal(err)
	}
	var r acs.Response
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&r); err != nil || r.Result == nil || r.Result.Signature == nil {
		t.Fatalf("the vector's response as an acs.Response: %+v (%v)", r, err)
	}
	want := r.Result.Signature.Value
	r.Result.Signature = nil
	if err := kr.SignResponse(&r, v.KeyID, v.SessionID); err != nil || r.Result.Signature.Value != want {
		t.Fatalf("SignResponse: %+v, want %s (%v)", r.Result.Signature, want, err)
	}
}

func TestKeyringBounds(t *testing.T) {
	if _, err := acs.NewKeyring(map[string][]byte{"short": make([]byte, 16)}, "", nil); err == nil {
		t.Fatal("a 16-byte key was accepted")
	}
	if _, err := acs.NewKeyring(map[string][]byte{"k": make([]byte, 32)}, "other", nil); err == nil {
		t.Fatal("a default that is not in the keyring was accepted")
	}
	kr, err := acs.ParseKeyring("keys.yaml", []byte("default: k2\nkeys:\n  - {id: k1, secret: \"hex:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\"}\n  - {id: k2, secret: \"base64:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\"}\n"))
	if err != nil || kr.Default != "k2" || !kr.Has("k1", "s") || kr.Has("k3", "s") {
		t.Fatalf("keyring %+v, %v", kr, err)
	}
	a, _ := kr.SessionKey("k1", "s")
	b, _ := kr.SessionKey("k2", "s")
	if !bytes.Equal(a, b) {
		t.Fatal("the same secret in hex and base64 derives different keys")
	}
}
