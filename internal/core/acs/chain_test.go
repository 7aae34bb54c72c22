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

// EntryHashOf writes the request hash and the provenance summary from the
// parts they are made of; the hash is EntryHash's of the entry with them
// made.
func FuzzEntryHashOf(f *testing.F) {
	f.Add("1", "step", "steps/toolCallRequest", "2026-01-01T00:00:00Z", "t1", "user_input,retrieved,user_input,agent_generated", []byte("params"), "")
	f.Add("2", "s", "m", "", "", "", []byte{}, strings.Repeat("ab", 32))
	f.Add("3", "s\"\\\n", "m", "t", "u", "é,a,b,c,d,e,f,g,h,i,j,,a", []byte{1}, strings.Repeat("AB", 32))
	f.Add("4", "s", "m", "t", "u", "\xff,x", []byte{2}, "")
	f.Fuzz(func(t *testing.T, id, step, typ, ts, turn, origins string, params []byte, previous string) {
		var ps []Provenance
		if origins != "" {
			for _, o := range strings.Split(origins, ",") {
				ps = append(ps, Provenance{Origin: o, ProvenanceID: "p"})
			}
		}
		sum := sha256.Sum256(params)
		e := ContextEntry{EntryID: id, StepID: step, StepType: typ, Timestamp: ts, TurnID: turn}
		got, gerr := EntryHashOf(e, sum, ps, previous)
		e.RequestHash, e.ProvenanceSummary = hex.EncodeToString(sum[:]), Summarize(ps)
		want, werr := EntryHash(e, previous)
		if got != want || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("%+v %v: EntryHashOf %q, %v; EntryHash %q, %v", e, ps, got, gerr, want, werr)
		}
	})
}
