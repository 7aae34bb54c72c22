// Package receipt signs every decision and alert with the processor's
// Ed25519 key, so that a third party holding only the public key can verify
// offline that turnguard issued it (an AARM receipt) and which stored
// envelope it answers. The HMAC signature ACS puts in result.signature
// needs the shared secret; a receipt does not.
//
// A receipt signs Message(binding, body): a domain line with the format's
// version, the kind (decision, alert, endpoint), the subject it was
// published on, the ACS_HOOKS sequence of the envelope it answers, and the
// body's RFC 8785 form. Anyone on the bus can publish on a decision
// subject; only a message whose receipt verifies with a trusted key for
// the envelope the verifier published is an answer.
package receipt

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/turnguard/turnguard/internal/core/acs"
)

// Signer signs decisions and alerts with one Ed25519 key.
type Signer struct {
	key ed25519.PrivateKey
	// blind keys the nonces of batch receipts' leaves (leafNonce).
	blind []byte
	// KeyID names the public key: the first 16 hex digits of its SHA-256.
	KeyID string
	// observe is told how long each Sign took by the clock now (nil: not
	// timed).
	observe func(time.Duration)
	now     func() time.Time
}

// WithObserver returns a signer with the same key whose every Sign reports
// how long it took by the clock now to observe (for metrics); s is left as
// it is. The clock is the caller's: the core reads none.
func (s *Signer) WithObserver(now func() time.Time, observe func(time.Duration)) *Signer {
	c := *s
	c.now, c.observe = now, observe
	return &c
}

// NewSigner returns a signer for a private key.
func NewSigner(key ed25519.PrivateKey) *Signer {
	blind := sha256.Sum256(append([]byte("turnguard-receipt-blind/1\n"), key.Seed()...))
	return &Signer{key: key, blind: blind[:], KeyID: KeyID(key.Public().(ed25519.PublicKey))}
}

// KeyID names a public key.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// Domain opens every message a receipt signs. It names the format and its
// version, so that a signature made for anything else with the same key —
// or for a later version of this format — can never pass for a receipt.
const Domain = "turnguard-receipt/1"

// Kind says what a receipt vouches for. It is part of the signed message:
// a receipt of one kind never verifies as another.
type Kind string

// Kinds of receipts.
const (
	// KindDecision is a decision the processor published on
	// acs.decisions.<tenant>.<session_id> for the envelope stored at Seq
	// in ACS_HOOKS.
	KindDecision Kind = "decision"
	// KindAlert is an alert published on Subject for the envelope at Seq
	// (0 for turnguard's own operational alerts, which answer none).
	KindAlert Kind = "alert"
	// KindEndpoint is a response the HTTP endpoint made itself (the
	// ServerHello, its refusals): it answers no stored envelope, so Seq is
	// 0, and its kind keeps it from ever passing for a decision.
	KindEndpoint Kind = "endpoint"
)

// Binding is the identity a receipt binds its body to: what the body is,
// where it was published and which stored envelope it answers. Without it
// a receipt would prove only that turnguard once wrote the body, and a
// genuine decision could be replayed as the answer to another envelope.
type Binding struct {
	Kind Kind
	// Subject is the subject the message is published on (for KindEndpoint
	// the session's decision subject, or "" when the request named no
	// usable session).
	Subject string
	// Seq is the ACS_HOOKS stream sequence of the envelope answered.
	Seq uint64
}

// Decision is the binding of the decision on the envelope of a session
// stored at seq.
func Decision(tenant, sessionID string, seq uint64) Binding {
	return Binding{Kind: KindDecision, Subject: acs.DecisionSubject(tenant, sessionID), Seq: seq}
}

// Alert is the binding of an alert published on subject about the
// envelope stored at seq (0: an operational alert).
func Alert(subject string, seq uint64) Binding {
	return Binding{Kind: KindAlert, Subject: subject, Seq: seq}
}

// Endpoint is the binding of a response the HTTP endpoint makes itself in
// a session; an unusable session id binds to no subject.
func Endpoint(tenant, sessionID string) Binding {
	b := Binding{Kind: KindEndpoint}
	if acs.CheckTenant(tenant) == nil && acs.CheckSession(sessionID) == nil {
		b.Subject = acs.DecisionSubject(tenant, sessionID)
	}
	return b
}

// Errors of verification, for callers that count what they drop.
var (
	// ErrMissing: the message carries no receipt.
	ErrMissing = errors.New("no receipt")
	// ErrMalformed: the receipt, its binding or the body cannot be read.
	ErrMalformed = errors.New("malformed receipt")
	// ErrUnknownKey: no trusted key made the receipt.
	ErrUnknownKey = errors.New("receipt made with an untrusted key")
	// ErrMismatch: the receipt does not match the body and binding.
	ErrMismatch = errors.New("receipt does not match")
)

func (b Binding) check() error {
	switch b.Kind {
	case KindDecision, KindAlert:
		if b.Subject == "" {
			return fmt.Errorf("%w: a %s receipt needs a subject", ErrMalformed, b.Kind)
		}
	case KindEndpoint:
	default:
		return fmt.Errorf("%w: kind %q", ErrMalformed, b.Kind)
	}
	// The subject is one line of the signed message: no byte that could
	// end it or make two bindings print alike. NATS subjects have none.
	for i := 0; i < len(b.Subject); i++ {
		if c := b.Subject[i]; c <= ' ' || c == 0x7f {
			return fmt.Errorf("%w: subject %q", ErrMalformed, b.Subject)
		}
	}
	return nil
}

// Message returns the exact bytes a receipt signs: four lines and the
// body's RFC 8785 form,
//
//	turnguard-receipt/1 LF kind LF subject LF seq LF canonical-body
//
// kind is decision, alert or endpoint, seq is decimal without leading
// zeros. canonical is the body's RFC 8785 form (see acs.CanonicalRaw).
func Message(b Binding, canonical []byte) ([]byte, error) {
	return appendMessage(nil, b, canonical)
}

// appendMessage appends Message(b, canonical) to m.
func appendMessage(m []byte, b Binding, canonical []byte) ([]byte, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	m = slices.Grow(m, len(Domain)+len(b.Kind)+len(b.Subject)+24+len(canonical))
	m = append(m, Domain...)
	m = append(m, '\n')
	m = append(m, b.Kind...)
	m = append(m, '\n')
	m = append(m, b.Subject...)
	m = append(m, '\n')
	m = strconv.AppendUint(m, b.Seq, 10)
	m = append(m, '\n')
	return append(m, canonical...), nil
}

// Sign returns the receipt of body under binding b: the base64 (standard,
// padded) Ed25519 signature of Message(b, RFC 8785 form of body). body is
// an *acs.Response, an alert.Finding or anything else encoding/json
// marshals. Ed25519 is deterministic, so a replay computes the same
// receipt.
func (s *Signer) Sign(b Binding, body any) (string, error) {
	defer s.timed()()
	c, err := acs.Canonical(body)
	if err != nil {
		return "", err
	}
	return s.signCanonical(b, c)
}

// SignCanonical is Sign of a body already in its RFC 8785 form (as
// acs.Canonical returns it): nothing is encoded again.
func (s *Signer) SignCanonical(b Binding, canonical []byte) (string, error) {
	defer s.timed()()
	return s.signCanonical(b, canonical)
}

// timed starts timing a signature for the observer (when set); the
// returned func, deferred, reports it.
func (s *Signer) timed() func() {
	if s.observe == nil {
		return func() {}
	}
	start := s.now()
	return func() { s.observe(s.now().Sub(start)) }
}

// signCanonical signs the message of b and a body's canonical form.
func (s *Signer) signCanonical(b Binding, canonical []byte) (string, error) {
	// The message is only signed: it is built on the stack when it fits.
	var buf [4096]byte
	m, err := appendMessage(buf[:0], b, canonical)
	if err != nil {
		return "", err
	}
	var sig [encodedSigLen]byte
	base64.StdEncoding.Encode(sig[:], ed25519.Sign(s.key, m))
	return string(sig[:]), nil
}

// encodedSigLen is base64.StdEncoding.EncodedLen(ed25519.SignatureSize).
const encodedSigLen = (ed25519.SignatureSize + 2) / 3 * 4

// Public returns the public key.
func (s *Signer) Public() ed25519.PublicKey { return s.key.Public().(ed25519.PublicKey) }

// PublicPEM returns the public key as PEM (PKIX).
func (s *Signer) PublicPEM() []byte { return PublicPEM(s.Public()) }

// PublicPEM encodes a public key as PEM (PKIX), as GET /receipt-key serves
// it and <data-dir>/receipt-key.pub holds it.
func PublicPEM(pub ed25519.PublicKey) []byte {
	der, _ := x509.MarshalPKIXPublicKey(pub)
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// encodedLen is the length of a receipt: 64 signature bytes in padded
// base64. Anything else is refused before decoding, so that an untrusted
// header cannot make a verifier allocate.
var encodedLen = base64.StdEncoding.EncodedLen(ed25519.SignatureSize)

func decode(receipt string) ([]byte, error) {
	if receipt == "" {
		return nil, ErrMissing
	}
	if len(receipt) != encodedLen {
		return nil, fmt.Errorf("%w: %d characters, want %d", ErrMalformed, len(receipt), encodedLen)
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(receipt)
	if err != nil {
		return nil, fmt.Errorf("%w: not base64: %w", ErrMalformed, err)
	}
	return sig, nil
}

// Verify checks a receipt against a body as received (its JSON text, in
// any serialization), the binding the verifier expects — the subject the
// message came on and the sequence of the envelope it must answer, never
// values taken from the message unchecked — and a public key.
//
// receipt is a single receipt or a batch receipt (SignBatch): either way
// it proves the same about the body.
func Verify(pub ed25519.PublicKey, b Binding, body []byte, receipt string) error {
	return (*RootCache)(nil).Verify(pub, b, body, receipt)
}

// Verify is receipt.Verify, a batch receipt's signature checked once per
// batch (c may be nil: every time).
func (c *RootCache) Verify(pub ed25519.PublicKey, b Binding, body []byte, receipt string) error {
	p, err := parse(receipt)
	if err != nil {
		return err
	}
	m, err := message(b, body)
	if err != nil {
		return err
	}
	signed, ok := p.signed(m)
	if !ok || len(pub) != ed25519.PublicKeySize || !c.verify(pub, signed, p.sig, p.batch) {
		return fmt.Errorf("%w the %s on %s for seq %d", ErrMismatch, b.Kind, b.Subject, b.Seq)
	}
	return nil
}

func message(b Binding, body []byte) ([]byte, error) {
	c, err := acs.CanonicalRaw(body)
	if err != nil {
		return nil, fmt.Errorf("%w: body: %w", ErrMalformed, err)
	}
	return Message(b, c)
}

// Trusted is a set of public keys receipts are accepted from: a verifier
// that knows the processor's keys (more than one while a key is rotated).
// It is safe for concurrent use.
type Trusted struct {
	keys  map[string]ed25519.PublicKey
	roots *RootCache
}

// NewTrusted returns the set of keys; keys of the wrong size are an error.
func NewTrusted(keys ...ed25519.PublicKey) (*Trusted, error) {
	t := &Trusted{keys: make(map[string]ed25519.PublicKey, len(keys)), roots: NewRootCache()}
	for i, k := range keys {
		if len(k) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("trusted key %d: %d bytes, not an Ed25519 public key", i, len(k))
		}
		t.keys[KeyID(k)] = slices.Clone(k)
	}
	return t, nil
}

// Len is the number of keys.
func (t *Trusted) Len() int { return len(t.keys) }

// Verify checks a receipt with the trusted key keyID names (the
// Acs-Receipt-Key header); with no keyID, with every trusted key. It
// returns the id of the key that verified. The header only picks the key:
// an unknown id is ErrUnknownKey, never a reason to trust one.
func (t *Trusted) Verify(keyID string, b Binding, body []byte, receipt string) (string, error) {
	p, err := parse(receipt)
	if err != nil {
		return "", err
	}
	if keyID != "" {
		if _, ok := t.keys[keyID]; !ok {
			return "", fmt.Errorf("%w: %.32q", ErrUnknownKey, keyID)
		}
	}
	m, err := message(b, body)
	if err != nil {
		return "", err
	}
	signed, ok := p.signed(m)
	if !ok {
		return "", fmt.Errorf("%w the %s on %s for seq %d: the inclusion path leads to no root", ErrMismatch, b.Kind, b.Subject, b.Seq)
	}
	if keyID != "" {
		if t.roots.verify(t.keys[keyID], signed, p.sig, p.batch) {
			return keyID, nil
		}
		return "", fmt.Errorf("%w the %s on %s for seq %d", ErrMismatch, b.Kind, b.Subject, b.Seq)
	}
	for id, k := range t.keys {
		if t.roots.verify(k, signed, p.sig, p.batch) {
			return id, nil
		}
	}
	return "", fmt.Errorf("%w: no trusted key made it for the %s on %s for seq %d", ErrUnknownKey, b.Kind, b.Subject, b.Seq)
}

// PrivatePEM encodes a private key as PEM (PKCS#8), as the processor's
// receipt key file holds it.
func PrivatePEM(priv ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParsePrivatePEM reads a private key as PrivatePEM writes it.
func ParsePrivatePEM(raw []byte) (ed25519.PrivateKey, error) {
	block, _ := pem.Decode(raw)
	if block == nil {
		return nil, errors.New("not PEM")
	}
	return parsePrivate(block)
}

func parsePrivate(block *pem.Block) (ed25519.PrivateKey, error) {
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("a %T, not an Ed25519 key", k)
	}
	return priv, nil
}

// ParsePublicPEM reads a public key as GET /receipt-key serves it.
func ParsePublicPEM(raw []byte) (ed25519.PublicKey, error) {
	block, _ := pem.Decode(raw)
	if block == nil {
		return nil, errors.New("not PEM")
	}
	return parsePublic(block)
}

func parsePublic(block *pem.Block) (ed25519.PublicKey, error) {
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("a %T, not an Ed25519 key", k)
	}
	return pub, nil
}

// ParseKeyPEM reads the public key to verify receipts with from PEM
// holding either the public key (as GET /receipt-key serves it) or the
// processor's private key.
func ParseKeyPEM(raw []byte) (ed25519.PublicKey, error) {
	block, _ := pem.Decode(raw)
	if block == nil {
		return nil, errors.New("not PEM")
	}
	if block.Type != "PRIVATE KEY" {
		return parsePublic(block)
	}
	priv, err := parsePrivate(block)
	if err != nil {
		return nil, err
	}
	return priv.Public().(ed25519.PublicKey), nil
}
