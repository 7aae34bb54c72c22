package acs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// ContextEntry is one entry of a session's audit chain (ACS §8.1,
// context-entry.json). TurnID is the Go reference's extension inside the
// hashed entry: the envelope's metadata.turn_id.
type ContextEntry struct {
	EntryID           string             `json:"entry_id"`
	StepID            string             `json:"step_id"`
	StepType          string             `json:"step_type"`
	RequestHash       string             `json:"request_hash,omitempty"`
	Timestamp         string             `json:"timestamp,omitempty"`
	ProvenanceSummary *ProvenanceSummary `json:"provenance_summary,omitempty"`
	TurnID            string             `json:"turn_id,omitempty"`
}

// ProvenanceSummary condenses the provenance of an entry
// (provenance-summary.json).
type ProvenanceSummary struct {
	OriginsSeen        []string       `json:"origins_seen,omitempty"`
	EntryCount         *int           `json:"entry_count,omitempty"`
	EntryCountByOrigin map[string]int `json:"entry_count_by_origin,omitempty"`
}

// EntryHash chains an entry to its predecessor (ACS §8.2):
// lowercase hex of SHA-256(JCS(entry) || raw bytes of the previous hash),
// the previous hash being empty for a session's first entry.
func EntryHash(e ContextEntry, previous string) (string, error) {
	return entryHash(e, nil, previous)
}

// EntryHashOf is EntryHash of e with its RequestHash the hex of requestSum
// and its ProvenanceSummary Summarize(ps) (e's own are ignored), computed
// without making either: what a Guardian holds of an envelope.
func EntryHashOf(e ContextEntry, requestSum [sha256.Size]byte, ps []Provenance, previous string) (string, error) {
	return entryHash(e, &entryParts{requestSum: &requestSum, provenance: ps, useProvenance: true}, previous)
}

func entryHash(e ContextEntry, parts *entryParts, previous string) (string, error) {
	var buf [512]byte
	content, ok := appendCanonicalEntry(buf[:0], &e, parts)
	if !ok {
		if parts != nil {
			e.RequestHash = hexSum(*parts.requestSum)
			e.ProvenanceSummary = Summarize(parts.provenance)
		}
		var err error
		if content, err = Canonical(e); err != nil {
			return "", err
		}
	}
	content, ok = appendHexDecode(content, previous)
	if !ok || (previous != "" && len(previous) != 2*sha256.Size) {
		return "", fmt.Errorf("previous hash %q is not 64 hex digits", previous)
	}
	return hexSum(sha256.Sum256(content)), nil
}

// appendHexDecode appends the bytes of the hex digits s (either case) to
// b, as hex.DecodeString reads them, without converting s; ok=false where
// DecodeString fails.
func appendHexDecode(b []byte, s string) ([]byte, bool) {
	if len(s)%2 != 0 {
		return b, false
	}
	for i := 0; i < len(s); i += 2 {
		hi, ok1 := fromHexChar(s[i])
		lo, ok2 := fromHexChar(s[i+1])
		if !ok1 || !ok2 {
			return b, false
		}
		b = append(b, hi<<4|lo)
	}
	return b, true
}

func fromHexChar(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// hexSum is hex.EncodeToString of a SHA-256 sum in one allocation.
func hexSum(sum [sha256.Size]byte) string {
	var b [2 * sha256.Size]byte
	hex.Encode(b[:], sum[:])
	return string(b[:])
}

// RequestHash is the lowercase hex SHA-256 of the canonical form of a
// request's params, as received (signature included, as the Go reference
// does).
func RequestHash(params json.RawMessage) (string, error) {
	c, err := CanonicalRaw(params)
	if err != nil {
		return "", err
	}
	return hexSum(sha256.Sum256(c)), nil
}
