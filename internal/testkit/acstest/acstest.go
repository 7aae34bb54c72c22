// Package acstest is what tests need of ACS signatures: request envelopes
// signed as an agent framework signs them, with internal/core/acs's own
// Keyring and signing input, and the format of the signature known-answer
// vectors (internal/core/acs/testdata): the tests' one copy of each. Only
// tests import it.
//
// integration/acsclient_test.go signs without it on purpose: that
// conformance client is written from the spec, so that it checks the
// processor's signatures rather than agreeing with them by construction.
// It reads the vectors with ReadEnvelopeVectors all the same: a file's
// format is no signing code.
package acstest

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/turnguard/turnguard/internal/core/acs"
)

// SignJSON returns the request envelope data signed with the session key
// of keyID (ACS §10): params.signature set, or replaced, to the HMAC of the
// envelope's signing input, for the session params.metadata.session_id
// names.
func SignJSON(t testing.TB, kr *acs.Keyring, keyID string, data []byte) []byte {
	t.Helper()
	doc := decode(t, data)
	sign(t, kr, keyID, doc)
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Signed is SignJSON for an envelope built as a map: it returns a signed
// copy, numbers as json.Number, and leaves doc alone.
func Signed(t testing.TB, kr *acs.Keyring, keyID string, doc map[string]any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	cp := decode(t, raw)
	sign(t, kr, keyID, cp)
	return cp
}

// sign sets doc's params.signature; doc holds numbers as json.Number, as
// acs.SigningInput needs them to sign what was sent.
func sign(t testing.TB, kr *acs.Keyring, keyID string, doc map[string]any) {
	t.Helper()
	params, ok := doc["params"].(map[string]any)
	if !ok {
		t.Fatal("acstest: the envelope has no params object to sign")
	}
	meta, _ := params["metadata"].(map[string]any)
	sid, ok := meta["session_id"].(string)
	if !ok {
		t.Fatal("acstest: the envelope names no params.metadata.session_id")
	}
	input, err := acs.SigningInput(doc)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := kr.Sign(keyID, sid, input)
	if err != nil {
		t.Fatal(err)
	}
	params["signature"] = sig
}

// decode decodes an envelope, numbers as json.Number.
func decode(t testing.TB, data []byte) map[string]any {
	t.Helper()
	var doc map[string]any
	decodeNumbers(t, data, &doc)
	return doc
}

// decodeNumbers decodes JSON into v keeping numbers as written
// (json.Number), which their canonical form needs.
func decodeNumbers(t testing.TB, data []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		t.Fatal(err)
	}
}

// EnvelopeVectors is the format of envelope-vectors.json, the ACS Go
// reference's signature known answers: the input keying material, the
// session key HKDF derives from it, and a signed request and response with
// their signing inputs.
type EnvelopeVectors struct {
	IKMHex        string         `json:"ikm_hex"`
	KeyID         string         `json:"key_id"`
	SessionID     string         `json:"session_id"`
	SessionKeyHex string         `json:"session_key_hex"`
	Request       SignedEnvelope `json:"request"`
	Response      SignedEnvelope `json:"response"`
}

// SignedEnvelope is one envelope of the vectors: as signed, and the
// signing input its signature covers.
type SignedEnvelope struct {
	Signed       map[string]any `json:"signed"`
	SigningInput string         `json:"signing_input"`
}

// ReadEnvelopeVectors reads the vectors at path (relative to the calling
// test's package), numbers as json.Number so that they canonicalize as
// written.
func ReadEnvelopeVectors(t testing.TB, path string) EnvelopeVectors {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v EnvelopeVectors
	decodeNumbers(t, raw, &v)
	if v.IKMHex == "" || v.Request.Signed == nil || v.Response.Signed == nil {
		t.Fatalf("%s: not the envelope vectors (no ikm_hex, request or response)", path)
	}
	return v
}
