package acs

import (
	"encoding/json"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
)

// Canonical returns the RFC 8785 (JCS) form of v: what ACS hashes and
// signs. v is anything encoding/json marshals; decoded JSON keeps its
// numbers exact when decoded with UseNumber.
func Canonical(v any) ([]byte, error) {
	// Responses are encoded once per decision: they are written directly
	// where that gives the same bytes, which it nearly always does.
	if r, ok := v.(*Response); ok && r != nil {
		var buf [2048]byte
		if c, ok := appendCanonicalResponse(buf[:0], r); ok {
			return append([]byte(nil), c...), nil
		}
	}
	return canonicalReference(v)
}

// canonicalReference is the definition of Canonical: encoding/json's text,
// canonicalised by jsontext.
func canonicalReference(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canonical form: %w", err)
	}
	return CanonicalRaw(raw)
}

// CanonicalRaw returns the RFC 8785 form of JSON text.
func CanonicalRaw(raw []byte) ([]byte, error) {
	v := jsontext.Value(append([]byte(nil), raw...))
	if err := v.Canonicalize(); err != nil {
		return nil, fmt.Errorf("canonical form: %w", err)
	}
	return v, nil
}
