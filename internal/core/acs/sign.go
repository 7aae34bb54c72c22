package acs

import (
	"bytes"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// AlgHMACSHA256 is the ACS baseline signature algorithm, the one turnguard
// verifies and signs with.
const AlgHMACSHA256 = "HMAC-SHA256"

// MinKeyBytes is the least input keying material a key may have (the Go
// reference's bound).
const MinKeyBytes = 32

// Keyring holds the deployment's HMAC keys by key_id. Each session signs
// with its own key, derived by HKDF-SHA256 (no salt, info = session_id,
// 32 bytes) as the ACS Go reference does.
type Keyring struct {
	keys map[string][]byte
	// sessionSecret, when set, serves every request whose key_id is its own
	// session id: the convention of the ACS TypeScript host and of the ACS
	// wire probes, one deployment secret and the session as the key name.
	sessionSecret []byte
	// Default is the key_id responses are signed with when the request
	// named no key the keyring has.
	Default string
}

// NewKeyring returns a keyring of the given keys; def names the default.
// sessionSecret (nil: none) serves key_id = session id.
func NewKeyring(keys map[string][]byte, def string, sessionSecret []byte) (*Keyring, error) {
	if len(keys) == 0 && sessionSecret == nil {
		return nil, errors.New("a keyring needs at least one key")
	}
	for id, k := range keys {
		if len(k) < MinKeyBytes {
			return nil, fmt.Errorf("key %q has %d bytes; at least %d are required", id, len(k), MinKeyBytes)
		}
	}
	if sessionSecret != nil && len(sessionSecret) < MinKeyBytes {
		return nil, fmt.Errorf("session_key has %d bytes; at least %d are required", len(sessionSecret), MinKeyBytes)
	}
	if def == "" && len(keys) > 0 {
		ids := make([]string, 0, len(keys))
		for id := range keys {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		def = ids[0]
	}
	if _, ok := keys[def]; def != "" && !ok {
		return nil, fmt.Errorf("default key %q is not in the keyring", def)
	}
	return &Keyring{keys: keys, Default: def, sessionSecret: sessionSecret}, nil
}

// keysFile is the keys file format:
//
//	default: k1
//	keys:
//	  - {id: k1, secret: "hex:000102…"}     # or "base64:…", or "text:…"
//	session_key: {secret: "hex:…"}          # key_id = the session id
type keysFile struct {
	Default string `yaml:"default"`
	Keys    []struct {
		ID     string `yaml:"id"`
		Secret string `yaml:"secret"`
	} `yaml:"keys"`
	SessionKey *struct {
		Secret string `yaml:"secret"`
	} `yaml:"session_key"`
}

// ParseKeyring reads a keys file's contents; path names the file in
// errors.
func ParseKeyring(path string, raw []byte) (*Keyring, error) {
	var f keysFile
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("keys file %s: %w", path, err)
	}
	keys := map[string][]byte{}
	for _, k := range f.Keys {
		if k.ID == "" {
			return nil, fmt.Errorf("keys file %s: a key without id", path)
		}
		if _, dup := keys[k.ID]; dup {
			return nil, fmt.Errorf("keys file %s: key %q twice", path, k.ID)
		}
		secret, err := decodeSecret(k.Secret)
		if err != nil {
			return nil, fmt.Errorf("keys file %s: key %q: %w", path, k.ID, err)
		}
		keys[k.ID] = secret
	}
	var sessionSecret []byte
	if f.SessionKey != nil {
		var err error
		if sessionSecret, err = decodeSecret(f.SessionKey.Secret); err != nil {
			return nil, fmt.Errorf("keys file %s: session_key: %w", path, err)
		}
	}
	kr, err := NewKeyring(keys, f.Default, sessionSecret)
	if err != nil {
		return nil, fmt.Errorf("keys file %s: %w", path, err)
	}
	return kr, nil
}

// decodeSecret reads a secret: "hex:…", "base64:…", or "text:…" for the
// UTF-8 bytes of a string as given — how the ACS Python adapters take
// ACS_HMAC_SECRET.
func decodeSecret(s string) ([]byte, error) {
	switch {
	case strings.HasPrefix(s, "hex:"):
		return hex.DecodeString(strings.TrimPrefix(s, "hex:"))
	case strings.HasPrefix(s, "base64:"):
		return base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "base64:"))
	case strings.HasPrefix(s, "text:"):
		return []byte(strings.TrimPrefix(s, "text:")), nil
	}
	return nil, errors.New(`a secret is "hex:…", "base64:…" or "text:…"`)
}

// ikm returns the input keying material a key_id names in a session.
// Named keys come first; a key_id equal to the session id is served by the
// session secret.
func (k *Keyring) ikm(keyID, sessionID string) ([]byte, bool) {
	if ikm, ok := k.keys[keyID]; ok {
		return ikm, true
	}
	if k.sessionSecret != nil && sessionID != "" && keyID == sessionID {
		return k.sessionSecret, true
	}
	return nil, false
}

// Has reports whether the keyring has a key_id for a session.
func (k *Keyring) Has(keyID, sessionID string) bool {
	_, ok := k.ikm(keyID, sessionID)
	return ok
}

// ResponseKey is the key_id a response in a session is signed with: the one
// the request named when the keyring has it (ACS: answer with the key the
// request used), else the default, else — with only a session secret — the
// session id. "" when none applies (no session id to derive a key from).
func (k *Keyring) ResponseKey(requested, sessionID string) string {
	switch {
	case k.Has(requested, sessionID):
		return requested
	case k.Default != "":
		return k.Default
	case k.sessionSecret != nil && sessionID != "":
		return sessionID
	}
	return ""
}

// SessionKey derives the session's signing key for a key_id.
func (k *Keyring) SessionKey(keyID, sessionID string) ([]byte, error) {
	key, err := k.sessionKey(keyID, sessionID)
	if err != nil {
		return nil, err
	}
	return key[:], nil
}

// sessionKey is SessionKey without the allocation of its result.
func (k *Keyring) sessionKey(keyID, sessionID string) ([sha256.Size]byte, error) {
	ikm, ok := k.ikm(keyID, sessionID)
	if !ok {
		return [sha256.Size]byte{}, fmt.Errorf("unknown key_id %q", keyID)
	}
	return sessionKey(ikm, sessionID), nil
}

// DeriveSessionKey derives a session key from input keying material:
// HKDF-SHA256, no salt, info = the session id, 32 bytes. The keyring
// computes the same key without allocating (sessionKey); this is the
// standard library's, the reference it is tested against.
func DeriveSessionKey(ikm []byte, sessionID string) ([]byte, error) {
	return hkdf.Key(sha256.New, ikm, nil, sessionID, 32)
}

// Sign signs a signing input with the session key of keyID.
func (k *Keyring) Sign(keyID, sessionID string, input []byte) (*Signature, error) {
	key, err := k.sessionKey(keyID, sessionID)
	if err != nil {
		return nil, err
	}
	return &Signature{Algorithm: AlgHMACSHA256, KeyID: keyID, Value: macValue(hmacSHA256(key[:], input))}, nil
}

// Verify checks a signature over a signing input.
func (k *Keyring) Verify(sig *Signature, sessionID string, input []byte) error {
	if sig.Algorithm != AlgHMACSHA256 {
		return fmt.Errorf("signature algorithm %s is not supported (want %s)", sig.Algorithm, AlgHMACSHA256)
	}
	key, err := k.sessionKey(sig.KeyID, sessionID)
	if err != nil {
		return err
	}
	got, err := base64.StdEncoding.DecodeString(sig.Value)
	if err != nil {
		return fmt.Errorf("signature value is not base64: %w", err)
	}
	mac := hmacSHA256(key[:], input)
	if !hmac.Equal(got, mac[:]) {
		return errors.New("signature does not match the envelope")
	}
	return nil
}

// VerifyRequest checks a request's signature (ACS §10): with keys, a
// signature present must verify with the session key of its key_id, and
// with require one must be present; without keys nothing can be checked
// and nothing is. doc is the decoded request (numbers as json.Number), sig
// its params.signature (nil: unsigned). The refusal is -32004.
func VerifyRequest(kr *Keyring, require bool, doc map[string]any, sig *Signature, sessionID string) *Error {
	switch {
	case sig == nil && require && kr != nil:
		return &Error{Code: CodeSignatureInvalid, Reason: ReasonSignature, Message: "this Guardian requires signed requests; params.signature is missing"}
	case sig == nil || kr == nil:
		return nil
	case !kr.Has(sig.KeyID, sessionID):
		return &Error{Code: CodeSignatureInvalid, Reason: ReasonSignature, Message: fmt.Sprintf("unknown key_id %q", sig.KeyID)}
	}
	input, err := SigningInput(doc)
	if err == nil {
		err = kr.Verify(sig, sessionID, input)
	}
	if err != nil {
		return &Error{Code: CodeSignatureInvalid, Reason: ReasonSignature, Message: err.Error()}
	}
	return nil
}

// SigningInput is the canonical form of an envelope without its signature
// (ACS §10): params.signature of a request, result.signature or
// error.signature of a response. doc is the decoded envelope; it is not
// modified.
func SigningInput(doc map[string]any) ([]byte, error) {
	out := make(map[string]any, len(doc))
	for k, v := range doc {
		out[k] = v
	}
	for _, member := range []string{"params", "result", "error"} {
		inner, ok := out[member].(map[string]any)
		if !ok {
			continue
		}
		if _, signed := inner["signature"]; signed {
			cp := make(map[string]any, len(inner))
			for k, v := range inner {
				if k != "signature" {
					cp[k] = v
				}
			}
			out[member] = cp
		}
	}
	return Canonical(out)
}

// SignResponse signs a response envelope in place: result.signature or
// error.signature. What ACS signs is the response without its signature,
// in its RFC 8785 form: that is one canonical encoding of r with the
// signature left out, no decoding needed.
func (k *Keyring) SignResponse(r *Response, keyID, sessionID string) error {
	var slot **Signature
	switch {
	case r.Result != nil:
		slot = &r.Result.Signature
	case r.Error != nil:
		slot = &r.Error.Signature
	default:
		var none *Signature
		slot = &none
	}
	*slot = nil
	// Canonical(r), on the stack: the signing input is only hashed.
	var buf [2048]byte
	input, ok := appendCanonicalResponse(buf[:0], r)
	if !ok {
		var err error
		if input, err = canonicalReference(r); err != nil {
			return err
		}
	}
	sig, err := k.Sign(keyID, sessionID, input)
	if err != nil {
		return err
	}
	*slot = sig
	return nil
}

// EncodeResponse returns r's RFC 8785 form — the bytes turnguard publishes
// and signs its receipt over — signed first (SignResponse) when keyID is
// not empty. k may be nil when keyID is empty.
func (k *Keyring) EncodeResponse(r *Response, keyID, sessionID string) ([]byte, error) {
	if keyID != "" {
		if err := k.SignResponse(r, keyID, sessionID); err != nil {
			return nil, err
		}
	}
	return Canonical(r)
}
