package stream

import (
	"bytes"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/turnguard/turnguard/internal/callersig"
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// callerOf takes an HTTP caller's name only with the endpoint's valid
// attestation, and a NATS user's only with its valid signature of the
// envelope as published; any other use of the headers is a forgery, and
// an envelope without them is the tenant's NATS agents'.
func TestCallerOf(t *testing.T) {
	s, err := turnstate.NewSealer(bytes.Repeat([]byte{3}, turnstate.StateKeySize))
	if err != nil {
		t.Fatal(err)
	}
	const published = "acs.hooks.acme.s1.turnStart"
	stored := acs.PartitionedPrefix + ".2.acme.s1.turnStart" // as ACS_HOOKS stores it
	body := []byte(`{"x":1}`)
	att := s.AttestCaller(published, turnstate.HTTPCaller("alice"), body)
	hdr := func(kv ...string) nats.Header {
		h := nats.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			h.Add(kv[i], kv[i+1])
		}
		return h
	}
	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	userKey, _ := user.PublicKey()
	signed := nats.Header{}
	if err := (callersig.Signer{Key: userKey, Sign: user.Sign}).Set(signed, published, body); err != nil {
		t.Fatal(err)
	}
	signedElsewhere := nats.Header{}
	if err := (callersig.Signer{Key: userKey, Sign: user.Sign}).Set(signedElsewhere, "acs.hooks.acme.s2.turnStart", body); err != nil {
		t.Fatal(err)
	}
	attestedAndSigned := hdr(acs.HdrOnBehalfOf, "alice", acs.HdrOnBehalfOfMAC, att)
	for k, v := range signed {
		attestedAndSigned[k] = v
	}
	for _, tc := range []struct {
		name string
		h    nats.Header
		want string
	}{
		{"no attestation", hdr(), ""},
		{"attested", hdr(acs.HdrOnBehalfOf, "alice", acs.HdrOnBehalfOfMAC, att), turnstate.HTTPCaller("alice")},
		{"another name", hdr(acs.HdrOnBehalfOf, "bob", acs.HdrOnBehalfOfMAC, att), turnstate.CallerForged},
		{"a name without MAC", hdr(acs.HdrOnBehalfOf, "alice"), turnstate.CallerForged},
		{"a MAC without name", hdr(acs.HdrOnBehalfOfMAC, att), turnstate.CallerForged},
		{"two names", hdr(acs.HdrOnBehalfOf, "alice", acs.HdrOnBehalfOf, "alice", acs.HdrOnBehalfOfMAC, att), turnstate.CallerForged},
		{"signed by a NATS user", signed, turnstate.NATSCaller(userKey)},
		{"signed for another session", signedElsewhere, turnstate.CallerForged},
		{"attested and signed: the endpoint's attestation", attestedAndSigned, turnstate.HTTPCaller("alice")},
	} {
		if got := callerOf(s, stored, body, tc.h); got != tc.want {
			t.Errorf("%s: caller %q, want %q", tc.name, got, tc.want)
		}
	}
}
