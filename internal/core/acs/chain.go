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
	var buf [512]byte
	content, ok := appendCanonicalEntry(buf[:0], &e)
	if !ok {
		var err error
		if content, err = Canonical(e); err != nil {
			return "", err
		}
	}
	prev, err := hex.DecodeString(previous)
	if err != nil || (previous != "" && len(prev) != sha256.Size) {
		return "", fmt.Errorf("previous hash %q is not 64 hex digits", previous)
	}
	h := sha256.New()
	h.Write(content)
	h.Write(prev)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// RequestHash is the lowercase hex SHA-256 of the canonical form of a
// request's params, as received (signature included, as the Go reference
// does).
func RequestHash(params json.RawMessage) (string, error) {
	c, err := CanonicalRaw(params)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}
