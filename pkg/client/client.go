// Package client lets a Go agent framework ask turnguard for a decision and
// wait for it: Decide publishes an ACS envelope into the hooks stream and
// returns the ACS response the processor publishes for it. When no decision
// arrives in time, Decide answers with the posture the caller chose (ACS
// on_decision_failure, Deny unless the caller chooses Proceed) and says so.
//
// Anyone allowed to publish on the decision subject could answer in the
// processor's name, so a message is taken as the answer only when its
// Ed25519 receipt verifies with one of the processor's keys
// (Options.TrustedKeys) for the envelope this call stored — its stream
// sequence from the publish acknowledgement. Everything else on the
// subject is dropped and counted (Stats).
//
//	nc, _ := nats.Connect("nats://127.0.0.1:4222")
//	key, _ := client.LoadReceiptKey("data/receipt-key.pub")
//	c, _ := client.New(nc, client.Options{TrustedKeys: []ed25519.PublicKey{key}})
//	d, err := c.Decide(ctx, envelopeJSON)
//	if err == nil && d.Disposition == "allow" { … run the tool … }
package client

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/callersig"
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/receipt"
)

// Posture is what Decide answers when no decision arrives: ACS
// on_decision_failure.
type Posture string

// Postures.
const (
	// Deny answers deny: fail closed. The default.
	Deny Posture = "deny"
	// Proceed (ACS's default, not this client's) answers allow: fail
	// open. A caller must choose it explicitly.
	Proceed Posture = "proceed"
)

// Options configure a Client.
type Options struct {
	// Tenant is the tenant token of the subjects (default "default"); NATS
	// permissions should bind it to the client's credentials.
	Tenant string
	// Timeout bounds one Decide unless its context ends sooner (default
	// 5s).
	Timeout time.Duration
	// Posture answers when no verified decision arrives in time (default
	// Deny: fail closed; Proceed must be chosen explicitly).
	Posture Posture
	// TrustedKeys are the processor's receipt public keys (more than one
	// while a key is rotated; every instance deciding the partitions must
	// sign with one of them): <data-dir>/receipt-key.pub, GET
	// /receipt-key, see LoadReceiptKey and ParseReceiptKey. A decision is
	// accepted only when its receipt verifies with one of them for the
	// envelope this client stored. New refuses a client without any,
	// unless InsecureAcceptUnsignedDecisions is set.
	TrustedKeys []ed25519.PublicKey
	// InsecureAcceptUnsignedDecisions accepts decisions without checking
	// their receipts, for processors run with --receipt-key none. Then any
	// client allowed to publish on acs.decisions.<tenant>.<session> can
	// answer in turnguard's name, and only NATS permissions stand between
	// an attacker and an allow. Only the stream sequence is still checked.
	InsecureAcceptUnsignedDecisions bool
	// OnDrop, when set, is told about every message on a waited-for
	// decision subject that was not taken as an answer (for logging; it
	// runs on the subscription's goroutine and must not block).
	OnDrop func(Drop)
	// DecisionsStream is where decisions of envelopes already in the
	// stream are looked up (default ACS_DECISIONS).
	DecisionsStream string
	// Linger keeps a session's subscription after its last call, for the
	// session's next step (default 30s; negative: unsubscribe at once).
	Linger time.Duration
	// Unsigned publishes envelopes without signing them with the
	// connection's credential. By default a client connected with a NATS
	// user's credentials (a .creds file, or an nkey) signs every envelope
	// with that user's key (acs.HdrCallerKey, acs.HdrCallerSig), and a
	// session it starts belongs to that user: envelopes of any other
	// credential, the tenant's other agents' included, are refused in it
	// (caller_not_bound). Unsigned, a session is any of the tenant's
	// agents'.
	Unsigned bool
}

// Decision is turnguard's answer to one envelope.
type Decision struct {
	// Disposition is the ACS decision — allow, deny, modify, ask, defer —
	// or, when FromPosture, the posture's; empty for an error response.
	Disposition string
	RequestID   string
	Reasoning   string
	// ReasonCodes are the decision's reason codes.
	ReasonCodes []string
	// Error is set when turnguard answered with a JSON-RPC error (an
	// envelope it refused: bad signature, unsupported version, …).
	Error *RPCError
	// Response is the ACS response envelope as turnguard published it.
	Response json.RawMessage
	// Seq is the ACS_HOOKS stream sequence of the envelope the decision
	// answers (0 with FromPosture).
	Seq uint64
	// Verified is set when the decision's receipt verified with a trusted
	// key; Receipt and ReceiptKey are then the receipt and its key's id
	// (empty otherwise: they are never passed on unverified).
	Verified   bool
	Receipt    string
	ReceiptKey string
	// FromPosture is set when no decision arrived in time: Decision is the
	// posture's and Failure says why.
	FromPosture bool
	Failure     error
	// Replayed is set when the stream already held this request (same
	// session and request id, within its duplicate window): the decision
	// is the one given to the first copy.
	Replayed bool
	// Stored is when the hooks stream acknowledged the envelope (zero
	// when the publish failed or was never made). What the call waited
	// after it is turnguard's: deciding, storing the session and the
	// decision, and the decision's way back.
	Stored time.Time
}

// RPCError is a JSON-RPC error response.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// ErrTimeout is the Failure of a decision that did not arrive in time.
var ErrTimeout = errors.New("no decision within the timeout")

// ErrNoTrustedKeys is New's error for options with neither TrustedKeys nor
// InsecureAcceptUnsignedDecisions: such a client could not tell the
// processor's decisions from forged ones.
var ErrNoTrustedKeys = errors.New("no trusted receipt key: set Options.TrustedKeys (the processor's receipt-key.pub) or, for --receipt-key none, Options.InsecureAcceptUnsignedDecisions")

// Stats counts what a client accepted and dropped.
type Stats struct {
	// Accepted is the number of decisions taken as answers.
	Accepted uint64
	// DroppedUnverified counts messages naming a waiting request that are
	// not the processor's answer to it: no, bad or untrusted receipt, no
	// stream sequence, or a signed body answering another request —
	// forgeries, or a processor signing with a key the client does not
	// trust.
	DroppedUnverified uint64
	// DroppedOtherEnvelope counts verified decisions answering another
	// envelope than the waiting call's.
	DroppedOtherEnvelope uint64
}

// Client decides envelopes through turnguard. It is safe for concurrent
// use; concurrent calls for one session share one subscription.
type Client struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	opt     Options
	trusted *receipt.Trusted

	accepted, unverified, otherEnvelope atomic.Uint64

	mu       sync.Mutex
	sessions map[string]*session

	// signer signs envelopes as the connection's NATS user; nil when the
	// connection has none or Options.Unsigned.
	signer *callersig.Signer
}

// New returns a client publishing and subscribing through nc.
func New(nc *nats.Conn, opt Options) (*Client, error) {
	if opt.Tenant == "" {
		opt.Tenant = "default"
	}
	if err := acs.CheckTenant(opt.Tenant); err != nil {
		return nil, err
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 5 * time.Second
	}
	switch opt.Posture {
	case "":
		opt.Posture = Deny
	case Proceed, Deny:
	default:
		return nil, fmt.Errorf("posture %q: want proceed or deny", opt.Posture)
	}
	if opt.DecisionsStream == "" {
		opt.DecisionsStream = acs.DecisionsStream
	}
	if opt.Linger == 0 {
		opt.Linger = 30 * time.Second
	}
	if len(opt.TrustedKeys) == 0 && !opt.InsecureAcceptUnsignedDecisions {
		return nil, ErrNoTrustedKeys
	}
	trusted, err := receipt.NewTrusted(opt.TrustedKeys...)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	c := &Client{nc: nc, js: js, opt: opt, trusted: trusted, sessions: map[string]*session{}}
	if !opt.Unsigned {
		if c.signer, err = connectionSigner(nc); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// connectionSigner is the signer of the NATS user nc is connected as (its
// user JWT's subject, or its nkey, and the signature callback the
// connection answers the server's nonce with); nil without one.
func connectionSigner(nc *nats.Conn) (*callersig.Signer, error) {
	o := nc.Opts
	if o.SignatureCB == nil {
		return nil, nil
	}
	key := o.Nkey
	if o.UserJWT != nil {
		token, err := o.UserJWT()
		if err != nil {
			return nil, fmt.Errorf("the connection's user JWT: %w", err)
		}
		uc, err := jwt.DecodeUserClaims(token)
		if err != nil {
			return nil, fmt.Errorf("the connection's user JWT: %w", err)
		}
		key = uc.Subject
	}
	if key == "" {
		return nil, nil
	}
	s := &callersig.Signer{Key: key, Sign: o.SignatureCB}
	if err := s.Check(); err != nil {
		return nil, err
	}
	return s, nil
}

// CallerKey is the public key of the NATS user the client signs its
// envelopes as, and so the owner of the sessions it starts; empty when it
// publishes unsigned.
func (c *Client) CallerKey() string {
	if c.signer == nil {
		return ""
	}
	return c.signer.Key
}

// Stats returns the client's counters.
func (c *Client) Stats() Stats {
	return Stats{Accepted: c.accepted.Load(), DroppedUnverified: c.unverified.Load(), DroppedOtherEnvelope: c.otherEnvelope.Load()}
}

// Options returns the client's options, defaults filled in.
func (c *Client) Options() Options { return c.opt }

// Decide publishes one ACS request envelope (JSON) and waits for its
// decision. A malformed envelope (no method, request id or session id) is
// an error; everything else returns a Decision, from the posture when the
// decision does not arrive in time.
func (c *Client) Decide(ctx context.Context, envelope []byte, opts ...DecideOption) (*Decision, error) {
	h, err := acs.ReadHead(envelope)
	if err != nil {
		return nil, fmt.Errorf("envelope: %w", err)
	}
	return c.DecideEnvelope(ctx, Envelope{Data: envelope, Method: h.Method, RequestID: h.RequestID, SessionID: h.SessionID}, opts...)
}

// Envelope is a request envelope with what Decide reads of it to route it
// and to recognise its decision.
type Envelope struct {
	Data                         []byte
	Method, RequestID, SessionID string
}

// DecideEnvelope is Decide for a caller that has read the envelope already
// (the HTTP gateway has, to check it): its bytes are not parsed again. The
// fields must be the envelope's own — the processor decides what Data
// says, and a decision answers the request id and session Data names.
func (c *Client) DecideEnvelope(ctx context.Context, env Envelope, opts ...DecideOption) (*Decision, error) {
	envelope, requestID, sessionID := env.Data, env.RequestID, env.SessionID
	if env.Method == "" || requestID == "" || sessionID == "" {
		return nil, errors.New("envelope: method, params.request_id and params.metadata.session_id are required")
	}
	ctx, cancel := context.WithTimeout(ctx, c.opt.Timeout)
	defer cancel()
	decisions := acs.DecisionSubject(c.opt.Tenant, sessionID)
	w, release, err := c.await(decisions, sessionID, requestID)
	if err != nil {
		return c.posture(requestID, err), nil
	}
	defer release()
	msg := nats.NewMsg(acs.InboundSubject(c.opt.Tenant, sessionID, acs.HookToken(env.Method)))
	msg.Data = envelope
	for _, o := range opts {
		o(msg.Header)
	}
	if c.signer != nil {
		if err := c.signer.Set(msg.Header, msg.Subject, envelope); err != nil {
			return c.posture(requestID, err), nil
		}
	}
	msg.Header.Set(jetstream.MsgIDHeader, MsgID(sessionID, requestID, envelope))
	ack, err := c.js.PublishMsg(ctx, msg)
	if err != nil {
		return c.posture(requestID, fmt.Errorf("publish: %w", err)), nil
	}
	stored := time.Now()
	// The answer is the decision of the message this call stored: the one
	// whose receipt is bound to its stream sequence. Any other message on
	// the subject with the same request id — an earlier copy of the
	// request, decided before, a decision published again after a crash,
	// or anything a third party publishes there — is not this call's.
	w.seq.Store(ack.Sequence)
	if ack.Duplicate {
		// The stream had this request id already (a retry) and ack.Sequence
		// is the stored copy's: its decision may have been published before
		// this call subscribed.
		if a, err := c.lookup(ctx, decisions, sessionID, requestID, ack.Sequence); err == nil && a != nil {
			if d, err := c.accept(*a, requestID, true); err == nil {
				d.Stored = stored
				return d, nil
			}
		}
	}
	for {
		select {
		case a := <-w.ch:
			if a.seq != ack.Sequence {
				c.drop(Drop{Subject: decisions, RequestID: requestID, Seq: a.seq, Reason: ErrOtherEnvelope})
				continue
			}
			d, err := c.accept(a, requestID, ack.Duplicate)
			if err != nil {
				// Only an unverified body can fail to read (the processor
				// publishes JSON responses).
				c.drop(Drop{Subject: decisions, RequestID: requestID, Seq: a.seq, Reason: fmt.Errorf("%w: %w", receipt.ErrMalformed, err)})
				continue
			}
			d.Stored = stored
			return d, nil
		case <-ctx.Done():
			err := ctx.Err()
			if errors.Is(err, context.DeadlineExceeded) {
				err = ErrTimeout
			}
			d := c.posture(requestID, err)
			d.Replayed, d.Stored = ack.Duplicate, stored
			return d, nil
		}
	}
}

// DecideOption adjusts the message one call of Decide publishes.
type DecideOption func(nats.Header)

// WithHeader sets a header on the published envelope (Nats-Msg-Id, which
// Decide sets itself, excepted). turnguard's HTTP endpoint attests the
// caller it publishes for this way.
func WithHeader(key, value string) DecideOption {
	return func(h nats.Header) { h.Set(key, value) }
}

// MsgID is the Nats-Msg-Id an envelope is published with: its request id,
// scoped to its session, and the SHA-256 of its bytes. ACS request ids are
// meant to be unique anyway; the session scope makes sure a request id
// reused in another session is never taken by the stream for a retry of
// this one and dropped. The digest binds the answer to the envelope: the
// stream takes only the very same bytes for a retry, whose acknowledgement
// names the stored copy's sequence — so another envelope reusing a request
// id (a Bash after an allowed Read) is stored and decided on its own
// instead of being handed the first one's decision.
func MsgID(sessionID, requestID string, envelope []byte) string {
	sum := sha256.Sum256(envelope)
	return sessionID + ":" + requestID + ":" + hex.EncodeToString(sum[:])
}

func (c *Client) posture(requestID string, why error) *Decision {
	d := &Decision{RequestID: requestID, FromPosture: true, Failure: why, Disposition: "allow"}
	if c.opt.Posture == Deny {
		d.Disposition = "deny"
	}
	return d
}

// accept makes the Decision of a verified answer.
func (c *Client) accept(a answer, requestID string, replayed bool) (*Decision, error) {
	d, err := decision(a, requestID, replayed)
	if err != nil {
		return nil, err
	}
	c.accepted.Add(1)
	d.Seq = a.seq
	if a.keyID != "" {
		d.Verified, d.Receipt, d.ReceiptKey = true, a.msg.Header.Get(acs.HdrReceipt), a.keyID
	}
	return d, nil
}

func decision(a answer, requestID string, replayed bool) (*Decision, error) {
	if a.bodyErr != nil {
		return nil, fmt.Errorf("decision for %s is not JSON: %w", requestID, a.bodyErr)
	}
	d := &Decision{RequestID: requestID, Response: a.msg.Data, Error: a.body.Error, Replayed: replayed}
	if r := a.body.Result; r != nil {
		d.Disposition, d.Reasoning, d.ReasonCodes = r.Decision, r.Reasoning, r.ReasonCodes
	}
	return d, nil
}
