// Package callersig binds an envelope published straight on NATS to the
// NATS user that published it. JetStream does not store who published a
// message (the server's Nats-Request-Info is stripped), so the publisher
// signs the envelope with its credential's own key (acs.HdrCallerKey,
// acs.HdrCallerSig) and the processor, and replay, verify the signature
// with the public key alone: no secret is needed to check it, and none but
// the credential's holder can make one.
package callersig

import (
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// ErrNotUserKey is Sign's error for a key that is not a NATS user's.
var ErrNotUserKey = errors.New("caller key: not a NATS user public key (U…)")

// Signer signs as one NATS user: its public key and a function signing
// with its seed (nats.Options.SignatureCB for a connection's credential).
type Signer struct {
	Key  string
	Sign func([]byte) ([]byte, error)
}

// Set signs body, to be published on inboundSubject, and sets the caller
// headers on h.
func (s Signer) Set(h nats.Header, inboundSubject string, body []byte) error {
	sig, err := s.Sign(acs.CallerSigningInput(inboundSubject, body))
	if err != nil {
		return fmt.Errorf("sign the envelope as NATS user %s: %w", s.Key, err)
	}
	h.Set(acs.HdrCallerKey, s.Key)
	h.Set(acs.HdrCallerSig, base64.RawURLEncoding.EncodeToString(sig))
	return nil
}

// Check validates a signer's key: a user public key.
func (s Signer) Check() error {
	if !nkeys.IsValidPublicUserKey(s.Key) {
		return fmt.Errorf("%w: %q", ErrNotUserKey, s.Key)
	}
	if s.Sign == nil {
		return errors.New("caller key: no signing function")
	}
	return nil
}

// Caller is who signed the envelope body published on inboundSubject, as
// its headers h claim: "" and false when it carries no caller headers,
// turnstate.NATSCaller(key) when the signature verifies, and
// turnstate.CallerForged when it does not (a malformed or repeated
// header, a key that is not a user's, a signature of another envelope).
func Caller(h nats.Header, inboundSubject string, body []byte) (string, bool) {
	keys, hasKey := h[acs.HdrCallerKey]
	sigs, hasSig := h[acs.HdrCallerSig]
	if !hasKey && !hasSig {
		return "", false
	}
	if len(keys) != 1 || len(sigs) != 1 || !nkeys.IsValidPublicUserKey(keys[0]) {
		return turnstate.CallerForged, true
	}
	sig, err := base64.RawURLEncoding.DecodeString(sigs[0])
	if err != nil {
		return turnstate.CallerForged, true
	}
	kp, err := nkeys.FromPublicKey(keys[0])
	if err != nil {
		return turnstate.CallerForged, true
	}
	if kp.Verify(acs.CallerSigningInput(inboundSubject, body), sig) != nil {
		return turnstate.CallerForged, true
	}
	return turnstate.NATSCaller(keys[0]), true
}
