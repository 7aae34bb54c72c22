package client

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/turnguard/turnguard/internal/core/acs"
)

// session is one session's decision subscription and its waiting calls.
// The subscription outlives its last call by Options.Linger, because an
// agent's next step usually follows soon, and subscribing and
// unsubscribing each cost the server an interest change.
type session struct {
	sessionID string
	sub       *nats.Subscription
	refs      int
	// waiters are the calls waiting, by request id: more than one when
	// calls of different envelopes reuse a request id, each picking its
	// own answer by stream sequence.
	waiters map[string][]*waiter
	linger  *time.Timer
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
	// body is the message's decision as read when it was checked.
	body    body
	bodyErr error
}

// await registers a waiter for requestID on the session's decision
// subject, subscribing when it is the session's first.
func (c *Client) await(subject, sessionID, requestID string) (*waiter, func(), error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[subject]
	if s == nil {
		s = &session{sessionID: sessionID, waiters: map[string][]*waiter{}}
		sub, err := c.nc.Subscribe(subject, func(m *nats.Msg) { c.deliver(subject, m) })
		if err != nil {
			return nil, nil, fmt.Errorf("subscribe %s: %w", subject, err)
		}
		// The subscription must be known to the server before the envelope
		// is published, or the decision could pass by unseen. The envelope
		// is published on the same connection after the SUB, and a server
		// reads a connection's protocol in order, so it has the interest
		// before it reads the envelope. A Flush would confirm no more than
		// that (in a cluster too: only this server's part), and it waits
		// up to nats.go's 10 s — past the call's timeout, holding c.mu and
		// with it every other call and delivery of the client.
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
	s.waiters[requestID] = append(s.waiters[requestID], w)
	s.refs++
	release := func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		ws := slices.DeleteFunc(s.waiters[requestID], func(o *waiter) bool { return o == w })
		if len(ws) == 0 {
			delete(s.waiters, requestID)
		} else {
			s.waiters[requestID] = ws
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
	// <session_id>:<request_id>:<digest> (MsgID), or without the digest
	// from other publishers.
	_, id, _ := strings.Cut(h.Get(acs.HdrOriginalMsgID), ":")
	id, _, _ = strings.Cut(id, ":")
	return id
}

// deliver hands a message on a session's decision subject to the call
// waiting for the request it names — only once its receipt verifies, so
// that forgeries are dropped here and never crowd out the real answer.
func (c *Client) deliver(subject string, m *nats.Msg) {
	id := requestOf(m.Header)
	c.mu.Lock()
	var ws []*waiter
	var sessionID string
	if s := c.sessions[subject]; s != nil {
		ws, sessionID = slices.Clone(s.waiters[id]), s.sessionID
	}
	c.mu.Unlock()
	if len(ws) == 0 {
		// Nobody waits for it: not this client's business.
		return
	}
	a, err := c.check(sessionID, id, m.Header, m.Data)
	if err != nil {
		c.drop(Drop{Subject: subject, RequestID: id, Seq: a.seq, Reason: err})
		return
	}
	a.msg = m
	taken := false
	for _, w := range ws {
		if seq := w.seq.Load(); seq != 0 && a.seq != seq {
			continue
		}
		taken = true
		select {
		case w.ch <- a:
		default:
		}
	}
	if !taken {
		c.drop(Drop{Subject: subject, RequestID: id, Seq: a.seq, Reason: ErrOtherEnvelope})
	}
}

// waiterBuffer is how many verified answers naming one request id a
// waiting call holds before it knows its stream sequence; more are dropped
// (the stream keeps them), and the call then answers from its posture.
const waiterBuffer = 8
