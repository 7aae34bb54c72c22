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
