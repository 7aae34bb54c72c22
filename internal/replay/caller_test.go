package replay

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/turnguard/turnguard/internal/callersig"
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// Replay binds sessions as the processor did: the HTTP caller an
// envelope names (replay holds no state key to check the attestation),
// and a NATS user only when its signature verifies for the envelope as
// stored — so a forged signature, refused live, is refused in replay too.
func TestClaimedCaller(t *testing.T) {
	const stored = acs.PartitionedPrefix + ".1.acme.s1.toolCallRequest"
	body := []byte(`{"method":"steps/toolCallRequest"}`)
	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	key, _ := user.PublicKey()
	signed := nats.Header{}
	if err := (callersig.Signer{Key: key, Sign: user.Sign}).Set(signed, acs.InboundOf(stored), body); err != nil {
		t.Fatal(err)
	}
	other, _ := nkeys.CreateUser()
	forged := nats.Header{}
	if err := (callersig.Signer{Key: key, Sign: other.Sign}).Set(forged, acs.InboundOf(stored), body); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		h    nats.Header
		want string
	}{
		{"unsigned", nats.Header{}, ""},
		{"an HTTP caller", nats.Header{acs.HdrOnBehalfOf: {"alice"}}, turnstate.HTTPCaller("alice")},
		{"signed", signed, turnstate.NATSCaller(key)},
		{"signed with another key", forged, turnstate.CallerForged},
	} {
		if got := claimedCaller(stored, body, tc.h); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
