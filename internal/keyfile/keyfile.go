// Package keyfile keeps turnguard's keys on disk: the state key that seals
// stored sessions, the receipt signing key and its public half, and the
// keys file of ACS caller signatures. Making a key needs randomness and
// keeping one needs the file system, and the decision core may use neither
// (internal/deps_test.go), so the core takes keys as bytes and this package,
// at the edge, reads, creates and writes them.
package keyfile

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/receipt"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// StateKey reads the state key at path or, when the file does not exist,
// creates it with turnstate.StateKeySize random bytes (mode 0600). It
// reports whether it created the key. The file is created complete or not
// at all (written aside, then linked into place), so processors starting
// together on one shared file agree on the key: the one that loses the
// race reads the winner's.
func StateKey(path string) ([]byte, bool, error) {
	key, created, err := readOrCreate(path, ".state-key-*", func() ([]byte, error) {
		fresh := make([]byte, turnstate.StateKeySize)
		_, err := rand.Read(fresh)
		return fresh, err
	})
	if err != nil {
		return nil, false, fmt.Errorf("state key: %w", err)
	}
	if len(key) < turnstate.StateKeySize {
		return nil, false, fmt.Errorf("state key %s: %d bytes, need at least %d (create one with: head -c %d /dev/urandom > %s)",
			path, len(key), turnstate.StateKeySize, turnstate.StateKeySize, path)
	}
	return key, created, nil
}

// readOrCreate reads the file at path or, when it does not exist, creates
// it with what fresh makes (createExclusive) and reads whichever file is
// then in place: ours or a concurrent creator's. It reports whether it
// created the file.
func readOrCreate(path, pattern string, fresh func() ([]byte, error)) ([]byte, bool, error) {
	data, err := os.ReadFile(path)
	if !errors.Is(err, os.ErrNotExist) {
		return data, false, err
	}
	made, err := fresh()
	if err != nil {
		return nil, false, err
	}
	created, err := createExclusive(path, pattern, made)
	if err != nil {
		return nil, false, err
	}
	data, err = os.ReadFile(path)
	return data, created, err
}

// createExclusive writes data at path (mode 0600) unless a file appears
// there first; it reports whether its data is what is in place.
func createExclusive(path, pattern string, data []byte) (bool, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, err
	}
	tmp, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return false, err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Close(); err != nil {
		return false, err
	}
	// Link, unlike rename, fails when path exists: a concurrent creator's
	// key is kept, never replaced.
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// ReceiptSigner reads the PEM (PKCS#8) Ed25519 private key at path, or,
// when the file does not exist, generates one and writes it there (mode
// 0600), as the state key is: complete or not at all, a concurrent
// creator's key kept. It reports whether it created the key.
func ReceiptSigner(path string) (*receipt.Signer, bool, error) {
	raw, created, err := readOrCreate(path, ".receipt-key-*.pem", func() ([]byte, error) {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, err
		}
		return receipt.PrivatePEM(priv)
	})
	if err != nil {
		return nil, false, fmt.Errorf("receipt key: %w", err)
	}
	priv, err := receipt.ParsePrivatePEM(raw)
	if err != nil {
		return nil, false, fmt.Errorf("receipt key %s: %w", path, err)
	}
	return receipt.NewSigner(priv), created, nil
}

// ReceiptPublicPath is where the public key of the private key file at
// path is written: the same name with the extension .pub
// (<data-dir>/receipt-key.pem → <data-dir>/receipt-key.pub).
func ReceiptPublicPath(privatePath string) string {
	p := strings.TrimSuffix(privatePath, filepath.Ext(privatePath)) + ".pub"
	if p == privatePath {
		p += ".pub"
	}
	return p
}

// WriteReceiptPublic writes the signer's public key (PEM) to path, mode
// 0644, by way of a temporary file renamed into place, so that a client
// reading it never sees half a key.
func WriteReceiptPublic(path string, s *receipt.Signer) error {
	want := s.PublicPEM()
	if have, err := os.ReadFile(path); err == nil && string(have) == string(want) {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".receipt-key-*.pub")
	if err != nil {
		return fmt.Errorf("receipt public key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(want); err != nil {
		tmp.Close()
		return fmt.Errorf("receipt public key: %w", err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("receipt public key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("receipt public key: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("receipt public key: %w", err)
	}
	return nil
}

// ReceiptPublic reads the public key to verify receipts with from a PEM
// file holding either the public key (as GET /receipt-key serves it) or
// the processor's private key.
func ReceiptPublic(path string) (ed25519.PublicKey, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("receipt key: %w", err)
	}
	pub, err := receipt.ParseKeyPEM(raw)
	if err != nil {
		return nil, fmt.Errorf("receipt key %s: %w", path, err)
	}
	return pub, nil
}

// Keyring reads a keys file of ACS caller signatures (acs.ParseKeyring
// gives its format).
func Keyring(path string) (*acs.Keyring, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("keys file: %w", err)
	}
	return acs.ParseKeyring(path, raw)
}
