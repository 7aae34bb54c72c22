package acstest

import (
	"encoding/hex"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/turnguard/turnguard/internal/core/acs"
)

// The helpers sign the vectors' request as the ACS Go reference signed it.
func TestSignsTheKnownAnswer(t *testing.T) {
	v := ReadEnvelopeVectors(t, "../../core/acs/testdata/envelope-vectors.json")
	ikm, err := hex.DecodeString(v.IKMHex)
	if err != nil {
		t.Fatal(err)
	}
	kr, err := acs.NewKeyring(map[string][]byte{v.KeyID: ikm}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := v.Request.Signed["params"].(map[string]any)["signature"]
	unsigned := decode(t, mustJSON(t, v.Request.Signed))
	delete(unsigned["params"].(map[string]any), "signature")

	got := signature(t, decode(t, SignJSON(t, kr, v.KeyID, mustJSON(t, unsigned))))
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("SignJSON: signature %v, want %v", got, want)
	}
	signed := Signed(t, kr, v.KeyID, unsigned)
	if got := signature(t, decode(t, mustJSON(t, signed))); !reflect.DeepEqual(got, want) {
		t.Fatalf("Signed: signature %v, want %v", got, want)
	}
	if _, ok := unsigned["params"].(map[string]any)["signature"]; ok {
		t.Fatal("Signed signed the caller's map instead of a copy")
	}
}

func signature(t *testing.T, doc map[string]any) any {
	t.Helper()
	sig, ok := doc["params"].(map[string]any)["signature"]
	if !ok {
		t.Fatal("no params.signature")
	}
	return sig
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
