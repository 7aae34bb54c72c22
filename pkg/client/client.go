// Package client lets a Go agent framework ask turnguard for a decision and
// wait for it: Decide publishes an ACS envelope into the hooks stream and
// returns the ACS response the processor publishes for it. When no decision
// arrives in time, Decide answers with the posture the caller chose (ACS
// on_decision_failure) and says so.
//
//	nc, _ := nats.Connect("nats://127.0.0.1:4222")
//	c, _ := client.New(nc, client.Options{Posture: client.Deny})
//	d, err := c.Decide(ctx, envelopeJSON)
//	if err == nil && d.Decision == "allow" { … run the tool … }
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/acs"
)

// Posture is what Decide answers when no decision arrives: ACS
// on_decision_failure.
type Posture string

// Postures.
const (
	// Proceed (ACS's default) answers allow: fail open.
	Proceed Posture = "proceed"
	// Deny answers deny: fail closed.
	Deny Posture = "deny"
)

// Options configure a Client.
type Options struct {
	// Tenant is the tenant token of the subjects (default "default"); NATS
	// permissions should bind it to the client's credentials.
	Tenant string
	// Timeout bounds one Decide unless its context ends sooner (default
	// 5s).
	Timeout time.Duration
	// Posture answers when the decision does not arrive (default Proceed,
	// as ACS's default; security-sensitive callers choose Deny).
	Posture Posture
	// DecisionsStream is where decisions of envelopes already in the
	// stream are looked up (default ACS_DECISIONS).
	DecisionsStream string
	// Linger keeps a session's subscription after its last call, for the
	// session's next step (default 30s; negative: unsubscribe at once).
	Linger time.Duration
}

// Decision is turnguard's answer to one envelope.
type Decision struct {
	// Decision is the ACS disposition — allow, deny, modify, ask, defer —
	// or, when FromPosture, the posture's; empty for an error response.
	Decision  string
	RequestID string
	Reasoning string
	// ReasonCodes are the decision's reason codes.
	ReasonCodes []string
	// Error is set when turnguard answered with a JSON-RPC error (an
	// envelope it refused: bad signature, unsupported version, …).
	Error *RPCError
	// Response is the ACS response envelope as turnguard published it;
	// Receipt its Ed25519 receipt (when the processor issues receipts).
	Response json.RawMessage
	Receipt  string
	// ReceiptKey names the key of Receipt (the processor's GET
	// /receipt-key).
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

// Client decides envelopes through turnguard. It is safe for concurrent
// use; concurrent calls for one session share one subscription.
type Client struct {
	nc  *nats.Conn
	js  jetstream.JetStream
	opt Options

	mu       sync.Mutex
	sessions map[string]*session
}

// session is one session's decision subscription and its waiting calls.
// The subscription outlives its last call by Options.Linger, because an
// agent's next step usually follows soon and subscribing costs a round
// trip.
type session struct {
	sub     *nats.Subscription
	refs    int
	waiters map[string]chan *nats.Msg
	linger  *time.Timer
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
		opt.Posture = Proceed
	case Proceed, Deny:
	default:
		return nil, fmt.Errorf("posture %q: want proceed or deny", opt.Posture)
	}
	if opt.DecisionsStream == "" {
		opt.DecisionsStream = "ACS_DECISIONS"
	}
	if opt.Linger == 0 {
		opt.Linger = 30 * time.Second
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	return &Client{nc: nc, js: js, opt: opt, sessions: map[string]*session{}}, nil
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
	wait, release, err := c.await(decisions, requestID)
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
	// carrying its stream sequence. Any other message on the subject with
	// the same request id — an earlier copy of the request, decided before,
	// or a decision published again after a crash — is not this call's.
	seq := strconv.FormatUint(ack.Sequence, 10)
	if ack.Duplicate {
		// The stream had this request id already (a retry) and ack.Sequence
		// is the stored copy's: its decision may have been published before
		// this call subscribed.
		if m, err := c.lookup(ctx, decisions, seq); err == nil && m != nil {
			return decision(m.Data(), m.Headers(), requestID, true)
		}
	}
	for {
		select {
		case m := <-wait:
			if m.Header.Get(acs.HdrStreamSeq) != seq {
				continue
			}
			return decision(m.Data, m.Header, requestID, ack.Duplicate)
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
func (c *Client) await(subject, requestID string) (<-chan *nats.Msg, func(), error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[subject]
	if s == nil {
		s = &session{waiters: map[string]chan *nats.Msg{}}
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
	// Room for a few messages naming this request id: the call picks its
	// own by stream sequence once the publish is acknowledged.
	ch := make(chan *nats.Msg, waiterBuffer)
	s.waiters[requestID] = ch
	s.refs++
	release := func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(s.waiters, requestID)
		if s.refs--; s.refs > 0 {
			return
		}
		if c.opt.Linger < 0 {
			c.drop(subject, s)
			return
		}
		s.linger = time.AfterFunc(c.opt.Linger, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if s.refs == 0 && c.sessions[subject] == s {
				c.drop(subject, s)
			}
		})
	}
	return ch, release, nil
}

// drop unsubscribes a session; c.mu is held.
func (c *Client) drop(subject string, s *session) {
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
		c.drop(subject, s)
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

func (c *Client) deliver(subject string, m *nats.Msg) {
	id := requestOf(m.Header)
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.sessions[subject]; s != nil {
		if ch, ok := s.waiters[id]; ok {
			select {
			case ch <- m:
			default:
			}
		}
	}
}

// waiterBuffer is how many messages naming one request id a waiting call
// holds before it knows its stream sequence; more are dropped (the stream
// keeps them), and the call then answers from its posture.
const waiterBuffer = 8

// lookup finds the decision of the envelope stored at stream sequence seq
// in the decisions stream.
func (c *Client) lookup(ctx context.Context, subject, seq string) (jetstream.Msg, error) {
	cons, err := c.js.OrderedConsumer(ctx, c.opt.DecisionsStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		return nil, err
	}
	for {
		m, err := cons.Next(jetstream.FetchMaxWait(500 * time.Millisecond))
		if err != nil {
			return nil, err
		}
		if m.Headers().Get(acs.HdrStreamSeq) == seq {
			return m, nil
		}
		if md, err := m.Metadata(); err == nil && md.NumPending == 0 {
			return nil, nil
		}
	}
}

func (c *Client) posture(requestID string, why error) *Decision {
	d := &Decision{RequestID: requestID, FromPosture: true, Failure: why, Decision: "allow"}
	if c.opt.Posture == Deny {
		d.Decision = "deny"
	}
	return d
}

func decision(raw []byte, h nats.Header, requestID string, replayed bool) (*Decision, error) {
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
	d := &Decision{RequestID: requestID, Response: raw, Receipt: h.Get(acs.HdrReceipt), ReceiptKey: h.Get(acs.HdrReceiptKey), Error: r.Error, Replayed: replayed}
	if r.Result != nil {
		d.Decision, d.Reasoning, d.ReasonCodes = r.Result.Decision, r.Result.Reasoning, r.Result.ReasonCodes
	}
	return d, nil
}
