package acs

import (
	"crypto/sha256"
	"encoding/base64"
)

// The HMAC and HKDF below are crypto/hmac's and crypto/hkdf's values
// (TestMACMatchesTheStandardLibrary holds them equal, the ACS vectors pin
// them), computed with sha256.Sum256 over buffers on the stack. A session
// key is derived anew for every signature, and the standard library's HMAC
// allocates its state, two digests and two pads per key: deriving one key
// and signing one response cost 26 allocations, a sixth of a sealed
// decision's.

// macStackBytes is how much of a MAC's message is hashed from the stack;
// a longer one (a response of more than about 4 KB) is copied to the heap
// once.
const macStackBytes = 4096

// hmacSHA256 is HMAC-SHA256 (RFC 2104) of msg under key:
// SHA-256((K ^ opad) || SHA-256((K ^ ipad) || msg)), K the key padded with
// zeros to SHA-256's 64-byte block, or hashed first when it is longer.
func hmacSHA256(key, msg []byte) [sha256.Size]byte {
	var k [sha256.BlockSize]byte
	if len(key) > sha256.BlockSize {
		sum := sha256.Sum256(key)
		copy(k[:], sum[:])
	} else {
		copy(k[:], key)
	}
	var stack [macStackBytes]byte
	inner := stack[:sha256.BlockSize]
	for i, c := range k {
		inner[i] = c ^ 0x36
	}
	innerSum := sha256.Sum256(append(inner, msg...))
	var outer [sha256.BlockSize + sha256.Size]byte
	for i, c := range k {
		outer[i] = c ^ 0x5c
	}
	copy(outer[sha256.BlockSize:], innerSum[:])
	return sha256.Sum256(outer[:])
}

// sessionKey is DeriveSessionKey: HKDF-SHA256 (RFC 5869) without salt —
// a salt of 32 zero bytes — and info = the session id, 32 bytes long, so
// one block of the expansion: PRK = HMAC(zeros, ikm), then
// HMAC(PRK, session id || 0x01).
func sessionKey(ikm []byte, sessionID string) [sha256.Size]byte {
	var salt [sha256.Size]byte
	prk := hmacSHA256(salt[:], ikm)
	var stack [MaxIDBytes + 1]byte
	info := append(append(stack[:0], sessionID...), 1)
	return hmacSHA256(prk[:], info)
}

// macValue is the signature value of a MAC: standard base64, padded.
func macValue(mac [sha256.Size]byte) string {
	var b [44]byte // base64.StdEncoding.EncodedLen(sha256.Size)
	base64.StdEncoding.Encode(b[:], mac[:])
	return string(b[:])
}
