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
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/acs"
	"github.com/turnguard/turnguard/internal/receipt"
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

// Errors a Drop names, besides receipt.ErrMissing, receipt.ErrMalformed,
// receipt.ErrUnknownKey and receipt.ErrMismatch (a bad or forged receipt).
var (
	// ErrNoStreamSeq: the message names no valid Acs-Stream-Seq.
	ErrNoStreamSeq = errors.New("no valid Acs-Stream-Seq")
	// ErrOtherEnvelope: a genuine decision, but of another envelope than
	// the one the call stored (an earlier copy of the request, a decision
	// published again after a crash, or a replayed one).
	ErrOtherEnvelope = errors.New("answers another envelope")
	// ErrOtherRequest: the verified body answers another request id than
	// its Acs-Request-Id header claims.
	ErrOtherRequest = errors.New("answers another request")
)

// Drop is a message on a decision subject a waiting call did not take.
type Drop struct {
	Subject   string
	RequestID string
	// Seq is the Acs-Stream-Seq the message claimed (0: none readable).
	Seq uint64
	// Reason is one of the Err values above or of package receipt.
	Reason error
}

// Forged reports whether the message was not the processor's at all (no
// or bad receipt, unknown key, no sequence), as against a genuine decision
// of another envelope.
func (d Drop) Forged() bool { return !errors.Is(d.Reason, ErrOtherEnvelope) }

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
}

// session is one session's decision subscription and its waiting calls.
// The subscription outlives its last call by Options.Linger, because an
// agent's next step usually follows soon and subscribing costs a round
// trip.
type session struct {
	sessionID string
	sub       *nats.Subscription
	refs      int
	waiters   map[string]*waiter
	linger    *time.Timer
}

// waiter is one call waiting for its decision.
type waiter struct {
	ch chan answer
	// seq is the stream sequence of the call's envelope once its publish
	// is acknowledged (0 before): from then on, other answers are dropped
	// as they arrive instead of taking room in ch.
	seq atomic.Uint64
}

// answer is a message whose receipt verified, with the sequence it is
// bound to.
type answer struct {
	msg   *nats.Msg
	seq   uint64
	keyID string
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
	return &Client{nc: nc, js: js, opt: opt, trusted: trusted, sessions: map[string]*session{}}, nil
}

// LoadReceiptKey reads the processor's receipt public key from a PEM file:
// <data-dir>/receipt-key.pub as the processor writes it, what GET
// /receipt-key serves, or the processor's private key file itself.
func LoadReceiptKey(path string) (ed25519.PublicKey, error) { return receipt.LoadPublic(path) }

// ParseReceiptKey reads a receipt public key in PEM, as GET /receipt-key
// serves it.
func ParseReceiptKey(pemBytes []byte) (ed25519.PublicKey, error) {
	k, err := receipt.ParsePublicPEM(pemBytes)
	if err != nil {
		return nil, fmt.Errorf("receipt key: %w", err)
	}
	return k, nil
}

// VerifyDecision checks offline that response (a decision's JSON as
// published) was issued by the holder of pub as the answer to the
// envelope of session sessionID (tenant) stored at ACS_HOOKS sequence seq.
// It is what Decide checks, for auditors holding a decision, its
// Acs-Receipt and its Acs-Stream-Seq.
func VerifyDecision(pub ed25519.PublicKey, tenant, sessionID string, seq uint64, response []byte, rcpt string) error {
	return receipt.Verify(pub, receipt.Decision(tenant, sessionID, seq), response, rcpt)
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
func (c *Client) Decide(ctx context.Context, envelope []byte) (*Decision, error) {
	var env struct {
		Method string `json:"method"`
		Params struct {
			RequestID string `json:"request_id"`
			Metadata  struct {
				SessionID string `json:"session_id"`
			} `json:"metadata"`
		} `json:"params"`
	}
	if err := json.Unmarshal(envelope, &env); err != nil {
		return nil, fmt.Errorf("envelope: %w", err)
	}
	requestID, sessionID := env.Params.RequestID, env.Params.Metadata.SessionID
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
	msg.Header.Set(jetstream.MsgIDHeader, MsgID(sessionID, requestID))
	ack, err := c.js.PublishMsg(ctx, msg)
	if err != nil {
		return c.posture(requestID, fmt.Errorf("publish: %w", err)), nil
	}
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
			return d, nil
		case <-ctx.Done():
			err := ctx.Err()
			if errors.Is(err, context.DeadlineExceeded) {
				err = ErrTimeout
			}
			d := c.posture(requestID, err)
			d.Replayed = ack.Duplicate
			return d, nil
		}
	}
}

// await registers a waiter for requestID on the session's decision
// subject, subscribing when it is the session's first.
func (c *Client) await(subject, sessionID, requestID string) (*waiter, func(), error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[subject]
	if s == nil {
		s = &session{sessionID: sessionID, waiters: map[string]*waiter{}}
		sub, err := c.nc.Subscribe(subject, func(m *nats.Msg) { c.deliver(subject, m) })
		if err != nil {
			return nil, nil, fmt.Errorf("subscribe %s: %w", subject, err)
		}
		// The subscription must be known to the server before the envelope
		// is published, or the decision could pass by unseen.
		if err := c.nc.Flush(); err != nil {
			_ = sub.Unsubscribe()
			return nil, nil, fmt.Errorf("subscribe %s: %w", subject, err)
		}
		s.sub = sub
		c.sessions[subject] = s
	}
	if s.linger != nil {
		s.linger.Stop()
		s.linger = nil
	}
	// Room for a few verified answers naming this request id: the call
	// picks its own by stream sequence once the publish is acknowledged.
	// Forgeries never take room: deliver drops them first.
	w := &waiter{ch: make(chan answer, waiterBuffer)}
	s.waiters[requestID] = w
	s.refs++
	release := func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if s.waiters[requestID] == w {
			delete(s.waiters, requestID)
		}
		if s.refs--; s.refs > 0 {
			return
		}
		if c.opt.Linger < 0 {
			c.unsubscribe(subject, s)
			return
		}
		s.linger = time.AfterFunc(c.opt.Linger, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if s.refs == 0 && c.sessions[subject] == s {
				c.unsubscribe(subject, s)
			}
		})
	}
	return w, release, nil
}

// unsubscribe drops a session's subscription; c.mu is held.
func (c *Client) unsubscribe(subject string, s *session) {
	_ = s.sub.Unsubscribe()
	delete(c.sessions, subject)
}

// Close drops every session subscription.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for subject, s := range c.sessions {
		if s.linger != nil {
			s.linger.Stop()
		}
		c.unsubscribe(subject, s)
	}
}

// MsgID is the Nats-Msg-Id an envelope is published with: its request id,
// scoped to its session. ACS request ids are meant to be unique anyway; the
// session scope makes sure a request id reused in another session is never
// taken by the stream for a retry of this one and dropped.
func MsgID(sessionID, requestID string) string { return sessionID + ":" + requestID }

// OpenSubscriptions is the number of session subscriptions held, by calls
// in progress or lingering.
func (c *Client) OpenSubscriptions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions)
}

// requestOf is the request id a decision answers: its Acs-Request-Id, or
// for a refusal whose body named no readable request id, the request id in
// the Nats-Msg-Id the envelope was published with.
func requestOf(h nats.Header) string {
	if id := h.Get(acs.HdrRequestID); id != "" {
		return id
	}
	_, id, _ := strings.Cut(h.Get(acs.HdrOriginalMsgID), ":")
	return id
}

// deliver hands a message on a session's decision subject to the call
// waiting for the request it names — only once its receipt verifies, so
// that forgeries are dropped here and never crowd out the real answer.
func (c *Client) deliver(subject string, m *nats.Msg) {
	id := requestOf(m.Header)
	c.mu.Lock()
	var w *waiter
	var sessionID string
	if s := c.sessions[subject]; s != nil {
		w, sessionID = s.waiters[id], s.sessionID
	}
	c.mu.Unlock()
	if w == nil {
		// Nobody waits for it: not this client's business.
		return
	}
	a, err := c.check(sessionID, id, m.Header, m.Data)
	if err != nil {
		c.drop(Drop{Subject: subject, RequestID: id, Seq: a.seq, Reason: err})
		return
	}
	if seq := w.seq.Load(); seq != 0 && a.seq != seq {
		c.drop(Drop{Subject: subject, RequestID: id, Seq: a.seq, Reason: ErrOtherEnvelope})
		return
	}
	a.msg = m
	select {
	case w.ch <- a:
	default:
	}
}

// check verifies that a message on the session's decision subject is a
// decision turnguard issued for request requestID, and reads the stream
// sequence its receipt binds it to. The header's Acs-Stream-Seq is only
// what the receipt is checked against: a forged value fails the receipt.
func (c *Client) check(sessionID, requestID string, h nats.Header, data []byte) (answer, error) {
	seq, err := parseSeq(h.Get(acs.HdrStreamSeq))
	if err != nil {
		return answer{}, err
	}
	a := answer{seq: seq}
	if !c.opt.InsecureAcceptUnsignedDecisions {
		b := receipt.Decision(c.opt.Tenant, sessionID, seq)
		if a.keyID, err = c.trusted.Verify(h.Get(acs.HdrReceiptKey), b, data, h.Get(acs.HdrReceipt)); err != nil {
			return a, err
		}
	}
	// The receipt covers the body, not the Acs-Request-Id header the
	// message was routed by: a genuine decision of another request,
	// relabelled, must not answer this one.
	if id, ok := bodyRequestID(data); ok && id != requestID {
		return a, fmt.Errorf("%w: the body answers %.64q", ErrOtherRequest, id)
	}
	return a, nil
}

// parseSeq reads an Acs-Stream-Seq: a positive decimal, nothing else.
func parseSeq(v string) (uint64, error) {
	if v == "" || len(v) > 20 || v[0] == '0' {
		return 0, ErrNoStreamSeq
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, ErrNoStreamSeq
		}
	}
	seq, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, ErrNoStreamSeq
	}
	return seq, nil
}

// bodyRequestID is result.request_id of a decision; ok is false for a body
// without one (a JSON-RPC error) or that is not JSON.
func bodyRequestID(data []byte) (string, bool) {
	var r struct {
		Result *struct {
			RequestID *string `json:"request_id"`
		} `json:"result"`
	}
	if json.Unmarshal(data, &r) != nil || r.Result == nil || r.Result.RequestID == nil {
		return "", false
	}
	return *r.Result.RequestID, true
}

// drop counts a message not taken as an answer and tells OnDrop.
func (c *Client) drop(d Drop) {
	if d.Forged() {
		c.unverified.Add(1)
	} else {
		c.otherEnvelope.Add(1)
	}
	if c.opt.OnDrop != nil {
		c.opt.OnDrop(d)
	}
}

// waiterBuffer is how many verified answers naming one request id a
// waiting call holds before it knows its stream sequence; more are dropped
// (the stream keeps them), and the call then answers from its posture.
const waiterBuffer = 8

// lookup finds the verified decision of the envelope stored at stream
// sequence seq in the decisions stream. Anyone who can publish on the
// subject can also have put a message into the stream, so a stored
// message is checked like a live one.
func (c *Client) lookup(ctx context.Context, subject, sessionID, requestID string, seq uint64) (*answer, error) {
	cons, err := c.js.OrderedConsumer(ctx, c.opt.DecisionsStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		return nil, err
	}
	want := strconv.FormatUint(seq, 10)
	for {
		m, err := cons.Next(jetstream.FetchMaxWait(500 * time.Millisecond))
		if err != nil {
			return nil, err
		}
		if m.Headers().Get(acs.HdrStreamSeq) == want {
			a, err := c.check(sessionID, requestID, m.Headers(), m.Data())
			if err == nil {
				a.msg = &nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()}
				return &a, nil
			}
			c.drop(Drop{Subject: subject, RequestID: requestOf(m.Headers()), Seq: seq, Reason: err})
		}
		if md, err := m.Metadata(); err == nil && md.NumPending == 0 {
			return nil, nil
		}
	}
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
	d, err := decision(a.msg.Data, requestID, replayed)
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

func decision(raw []byte, requestID string, replayed bool) (*Decision, error) {
	var r struct {
		Result *struct {
			RequestID   string   `json:"request_id"`
			Decision    string   `json:"decision"`
			Reasoning   string   `json:"reasoning"`
			ReasonCodes []string `json:"reason_codes"`
		} `json:"result"`
		Error *RPCError `json:"error"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("decision for %s is not JSON: %w", requestID, err)
	}
	d := &Decision{RequestID: requestID, Response: raw, Error: r.Error, Replayed: replayed}
	if r.Result != nil {
		d.Disposition, d.Reasoning, d.ReasonCodes = r.Result.Decision, r.Result.Reasoning, r.Result.ReasonCodes
	}
	return d, nil
}
