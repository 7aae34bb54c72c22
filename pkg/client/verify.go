package client

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/receipt"
	"github.com/turnguard/turnguard/internal/keyfile"
)

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

// LoadReceiptKey reads the processor's receipt public key from a PEM file:
// <data-dir>/receipt-key.pub as the processor writes it, what GET
// /receipt-key serves, or the processor's private key file itself.
func LoadReceiptKey(path string) (ed25519.PublicKey, error) { return keyfile.ReceiptPublic(path) }

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
	// Read once: the same reading makes the Decision (accept).
	a.body, a.bodyErr = readBody(data)
	if r := a.body.Result; a.bodyErr == nil && r != nil && r.RequestID != nil && *r.RequestID != requestID {
		return a, fmt.Errorf("%w: the body answers %.64q", ErrOtherRequest, *r.RequestID)
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

// body is what a client reads of a decision's JSON.
type body struct {
	Result *struct {
		// RequestID is nil when the result has none.
		RequestID   *string  `json:"request_id"`
		Decision    string   `json:"decision"`
		Reasoning   string   `json:"reasoning"`
		ReasonCodes []string `json:"reason_codes"`
	} `json:"result"`
	Error *RPCError `json:"error"`
}

// readBody reads a decision's JSON; an error for a body that is not JSON
// (or not of the response's shape).
func readBody(data []byte) (body, error) {
	var b body
	err := json.Unmarshal(data, &b)
	return b, err
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
