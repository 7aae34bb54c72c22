package turnstate

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// Who published an envelope, as far as the processor can tell unforgeably
// (Session.Caller). NATS does not tell a JetStream consumer which user
// published a message, so an envelope published straight on NATS is the
// NATS user's whose key signed it (internal/callersig: pkg/client signs
// with its connection's credential), or, unsigned, the tenant's agents'
// (the subject's tenant is bound by the credential). The HTTP endpoint
// runs inside the processor and publishes for its callers; it attests each
// envelope with a MAC under the state key (AttestCaller), which no agent
// holds, so an envelope is an HTTP caller's only when its attestation
// verifies.
const (
	// CallerNATS is any holder of the tenant's agent credential: an
	// unsigned envelope's publisher.
	CallerNATS = "nats"
	// callerNATSUserPrefix starts the identity of a NATS user that signs
	// its envelopes.
	callerNATSUserPrefix = "nats:"
	// CallerForged marks an envelope carrying an attestation that does
	// not verify: refused, whatever its session.
	CallerForged = "forged"
	// callerHTTPPrefix starts the identity of an HTTP caller.
	callerHTTPPrefix = "http:"
)

// HTTPCaller is the identity of the HTTP caller name (the open endpoint's
// anonymous caller has the empty name).
func HTTPCaller(name string) string { return callerHTTPPrefix + name }

// NATSCaller is the identity of the NATS user with public key key, whose
// signature on an envelope verified.
func NATSCaller(key string) string { return callerNATSUserPrefix + key }

// KindCaller is the kind bound into caller attestations, so that no other
// sealed value can pass for one.
const KindCaller = "caller"

// AttestCaller returns the attestation (hex HMAC-SHA256) that the envelope
// body published on subject was sent by caller: the subject (tenant,
// session, hook), the caller and the SHA-256 of the body are bound into it.
func (s *Sealer) AttestCaller(subject, caller string, body []byte) string {
	var sum [sha256.Size]byte
	return hex.EncodeToString(s.mac(KindCaller, subject, callerRecord(caller, body), sum[:0]))
}

// VerifyCaller reports whether attestation is AttestCaller's for subject,
// caller and body.
func (s *Sealer) VerifyCaller(subject, caller string, body []byte, attestation string) bool {
	var have [sha256.Size]byte
	if len(attestation) != macHexLen {
		return false
	}
	if _, err := hex.Decode(have[:], []byte(attestation)); err != nil {
		return false
	}
	var sum [sha256.Size]byte
	return hmac.Equal(s.mac(KindCaller, subject, callerRecord(caller, body), sum[:0]), have[:])
}

// callerRecord is what an attestation covers besides the subject: the
// caller, a zero byte and the body's digest (fixed length, so the caller
// is unambiguous whatever bytes it holds).
func callerRecord(caller string, body []byte) []byte {
	d := sha256.Sum256(body)
	rec := make([]byte, 0, len(caller)+1+len(d))
	rec = append(rec, caller...)
	rec = append(rec, 0)
	return append(rec, d[:]...)
}
