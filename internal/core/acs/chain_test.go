package acs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
)

// EntryHash reads the previous hash as hex.DecodeString did: either case,
// and any other text (odd, not hex, not 32 bytes) refused.
func TestEntryHashPrevious(t *testing.T) {
	reference := func(e ContextEntry, previous string) (string, error) {
		content, err := Canonical(e)
		if err != nil {
			return "", err
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
	e := ContextEntry{EntryID: "2", StepID: "s", StepType: "steps/turnStart", RequestHash: strings.Repeat("ab", 32), TurnID: "t"}
	h := strings.Repeat("0f", 32)
	for _, prev := range []string{"", h, strings.ToUpper(h), h[:63], h + "0", h + "0f", "zz" + h[2:], h[:62] + "g0", "0"} {
		got, gerr := EntryHash(e, prev)
		want, werr := reference(e, prev)
		if got != want || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("EntryHash(%q) = %q, %v; want %q, %v", prev, got, gerr, want, werr)
		}
	}
}
