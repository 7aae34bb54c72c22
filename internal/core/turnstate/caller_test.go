package turnstate_test

import (
	"bytes"
	"testing"

	"github.com/turnguard/turnguard/internal/core/turnstate"
)

func callerSealer(t testing.TB) *turnstate.Sealer {
	s, err := turnstate.NewSealer(bytes.Repeat([]byte{7}, turnstate.StateKeySize))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// An attestation verifies only for the subject, caller and body it was
// made for, and only under its key.
func TestCallerAttestation(t *testing.T) {
	s := callerSealer(t)
	const subject = "acs.hooks.acme.s1.toolCallRequest"
	body := []byte(`{"method":"steps/toolCallRequest"}`)
	alice := turnstate.HTTPCaller("alice")
	att := s.AttestCaller(subject, alice, body)
	other, err := turnstate.NewSealer(bytes.Repeat([]byte{8}, turnstate.StateKeySize))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, subject, caller string
		body                  []byte
		att                   string
		sealer                *turnstate.Sealer
		want                  bool
	}{
		{"as made", subject, alice, body, att, s, true},
		{"another caller", subject, turnstate.HTTPCaller("bob"), body, att, s, false},
		{"the NATS agents", subject, turnstate.CallerNATS, body, att, s, false},
		{"another session", "acs.hooks.acme.s2.toolCallRequest", alice, body, att, s, false},
		{"another tenant", "acs.hooks.other.s1.toolCallRequest", alice, body, att, s, false},
		{"another body", subject, alice, []byte(`{"method":"steps/userMessage"}`), att, s, false},
		{"another key", subject, alice, body, att, other, false},
		{"upper-case hex", subject, alice, body, string(bytes.ToUpper([]byte(att))), s, true},
		{"truncated", subject, alice, body, att[:63], s, false},
		{"not hex", subject, alice, body, "zz" + att[2:], s, false},
		{"empty", subject, alice, body, "", s, false},
	} {
		if got := tc.sealer.VerifyCaller(tc.subject, tc.caller, tc.body, tc.att); got != tc.want {
			t.Errorf("%s: verified %v, want %v", tc.name, got, tc.want)
		}
	}
}

// FuzzVerifyCaller: whatever an agent puts in the attestation header, the
// check does not panic, and nothing but the attestation itself verifies.
func FuzzVerifyCaller(f *testing.F) {
	s := callerSealer(f)
	const subject = "acs.hooks.acme.s1.turnStart"
	body := []byte(`{}`)
	att := s.AttestCaller(subject, turnstate.HTTPCaller("alice"), body)
	f.Add("alice", att)
	f.Add("", "")
	f.Add("alice\x00", att)
	f.Fuzz(func(t *testing.T, name, attestation string) {
		ok := s.VerifyCaller(subject, turnstate.HTTPCaller(name), body, attestation)
		if ok && (name != "alice" || !bytes.EqualFold([]byte(attestation), []byte(att))) {
			t.Fatalf("caller %q with attestation %q verified", name, attestation)
		}
	})
}
