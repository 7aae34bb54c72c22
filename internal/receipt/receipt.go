// Package receipt signs every decision with the processor's Ed25519 key, so
// that a third party holding only the public key can verify offline that
// turnguard issued a decision (an AARM receipt). The HMAC signature ACS puts
// in result.signature needs the shared secret; a receipt does not.
package receipt

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/turnguard/turnguard/internal/acs"
)

// Signer signs decisions with one Ed25519 key.
type Signer struct {
	key ed25519.PrivateKey
	// KeyID names the public key: the first 16 hex digits of its SHA-256.
	KeyID string
}

// NewSigner returns a signer for a private key.
func NewSigner(key ed25519.PrivateKey) *Signer {
	return &Signer{key: key, KeyID: KeyID(key.Public().(ed25519.PublicKey))}
}

// KeyID names a public key.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// Sign returns the receipt of a response: the base64 Ed25519 signature of
// its canonical (RFC 8785) form. r is an *acs.Response or any other value
// encoding/json marshals to a response envelope (the HTTP endpoint's
// ServerHello). Ed25519 is deterministic, so a replay computes the same
// receipt.
func (s *Signer) Sign(r any) (string, error) {
	c, err := acs.Canonical(r)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(ed25519.Sign(s.key, c)), nil
}

// Public returns the public key.
func (s *Signer) Public() ed25519.PublicKey { return s.key.Public().(ed25519.PublicKey) }

// PublicPEM returns the public key as PEM (PKIX).
func (s *Signer) PublicPEM() []byte {
	der, _ := x509.MarshalPKIXPublicKey(s.Public())
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// Verify checks a receipt against the decision as received (its JSON) and
// a public key.
func Verify(pub ed25519.PublicKey, response []byte, receipt string) error {
	sig, err := base64.StdEncoding.DecodeString(receipt)
	if err != nil {
		return fmt.Errorf("receipt is not base64: %w", err)
	}
	c, err := acs.CanonicalRaw(response)
	if err != nil {
		return err
	}
	if !ed25519.Verify(pub, c, sig) {
		return errors.New("receipt does not match the decision")
	}
	return nil
}

// LoadOrCreate reads the PEM (PKCS#8) Ed25519 private key at path, or, when
// the file does not exist, generates one and writes it there (mode 0600).
// It reports whether it created the key.
func LoadOrCreate(path string) (*Signer, bool, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, false, err
		}
		der, err := x509.MarshalPKCS8PrivateKey(priv)
		if err != nil {
			return nil, false, err
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, false, fmt.Errorf("receipt key: %w", err)
		}
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
			return nil, false, fmt.Errorf("receipt key: %w", err)
		}
		return NewSigner(priv), true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("receipt key: %w", err)
	}
	block, _ := pem.Decode(raw)
	if block == nil {
		return nil, false, fmt.Errorf("receipt key %s: not PEM", path)
	}
	priv, err := parsePrivate(block)
	if err != nil {
		return nil, false, fmt.Errorf("receipt key %s: %w", path, err)
	}
	return NewSigner(priv), false, nil
}

func parsePrivate(block *pem.Block) (ed25519.PrivateKey, error) {
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("a %T, not an Ed25519 key", k)
	}
	return priv, nil
}

// ParsePublicPEM reads a public key as GET /receipt-key serves it.
func ParsePublicPEM(raw []byte) (ed25519.PublicKey, error) {
	block, _ := pem.Decode(raw)
	if block == nil {
		return nil, errors.New("not PEM")
	}
	return parsePublic(block)
}

func parsePublic(block *pem.Block) (ed25519.PublicKey, error) {
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("a %T, not an Ed25519 key", k)
	}
	return pub, nil
}

// LoadPublic reads the public key to verify receipts with from a PEM file
// holding either the public key (as GET /receipt-key serves it) or the
// processor's private key.
func LoadPublic(path string) (ed25519.PublicKey, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("receipt key: %w", err)
	}
	block, _ := pem.Decode(raw)
	if block == nil {
		return nil, fmt.Errorf("receipt key %s: not PEM", path)
	}
	if block.Type != "PRIVATE KEY" {
		pub, err := parsePublic(block)
		if err != nil {
			return nil, fmt.Errorf("receipt key %s: %w", path, err)
		}
		return pub, nil
	}
	priv, err := parsePrivate(block)
	if err != nil {
		return nil, fmt.Errorf("receipt key %s: %w", path, err)
	}
	return priv.Public().(ed25519.PublicKey), nil
}
