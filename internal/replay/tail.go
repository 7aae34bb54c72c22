package replay

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/acs"
)

// Verdicts of a tailed message. Only a message whose receipt verified is
// called verified: without a key nothing tells a forgery from
// turnguard's own message.
const (
	TailVerified    = "verified"
	TailNotVerified = "NOT VERIFIED"
	TailNotChecked  = "not checked"
)

// Kinds of tailed message.
const (
	TailDecision = "decision"
	TailAlert    = "alert"
)

// TailEvent is one decision or alert as `replay tail` shows it. The JSON
// field names are stable: `replay tail --json` writes one object per line.
type TailEvent struct {
	Kind      string    `json:"kind"`
	Time      time.Time `json:"time"`
	Stream    string    `json:"stream"`
	StreamSeq uint64    `json:"stream_seq"`
	Subject   string    `json:"subject"`
	Tenant    string    `json:"tenant,omitempty"`
	SessionID string    `json:"session_id,omitempty"`
	// Seq is the ACS_HOOKS sequence the message claims to answer
	// (Acs-Stream-Seq; 0: none).
	Seq       uint64 `json:"seq,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	TurnID    string `json:"turn_id,omitempty"`
	// TurnIndex is known for alerts only (their evidence says it).
	TurnIndex int    `json:"turn_index,omitempty"`
	Hook      string `json:"hook,omitempty"`
	Tool      string `json:"tool,omitempty"`
	// Decision is allow, deny, modify, ask, or "error <code>" (decisions
	// only); for alerts the decision the rule's hit ended in.
	Decision    string   `json:"decision,omitempty"`
	Rules       []string `json:"rules,omitempty"`
	ReasonCodes []string `json:"reason_codes,omitempty"`
	// Reason is the decision's reasoning or error message, or the alert's
	// message.
	Reason   string `json:"reason,omitempty"`
	Severity string `json:"severity,omitempty"`
	Title    string `json:"title,omitempty"`
	// Verdict is verified, NOT VERIFIED or not checked; Receipt and
	// Signature the individual checks (ok, FAILED, not checked, -), and
	// Problem why it is not verified.
	Verdict   string `json:"verdict"`
	Receipt   string `json:"receipt"`
	Signature string `json:"signature"`
	Problem   string `json:"problem,omitempty"`
}

// TailOptions select and check what Tail follows.
type TailOptions struct {
	// Tenant "" or "*" follows every tenant, turnguard's own _system
	// alerts included, as verify --all does.
	Tenant    string
	SessionID string
	// Decision keeps decisions of this kind: allow, deny, modify, ask,
	// error or "error <code>". Alerts are kept regardless.
	Decision string
	Rule     string
	// Decisions and Alerts say which streams to follow.
	Decisions, Alerts bool
	// From starts at the messages stored at or after it; zero starts at
	// new messages.
	From time.Time
	// ReceiptKey checks receipts, Keys HMAC signatures of decisions; nil
	// leaves them not checked.
	ReceiptKey ed25519.PublicKey
	Keys       *acs.Keyring
}

// tailMemory bounds the answers Tail remembers to call a second answer to
// one envelope what it is: enough for hours of a busy tenant, small
// enough that a flood of forgeries cannot grow it.
const tailMemory = 1 << 16

// Tail follows ACS_DECISIONS and ACS_ALERTS live and calls fn with each
// message that passes the filters, checked, until ctx ends (nil) or fn
// fails. Every message is shown, forged or not: a filter selects by what
// the message says, and the verdict says whether to believe it.
func (s *Source) Tail(ctx context.Context, opts TailOptions, fn func(TailEvent) error) error {
	tenant := opts.Tenant
	if tenant == "" {
		tenant = "*"
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	msgs := make(chan tailItem)
	errc := make(chan error, 2)
	if opts.Decisions {
		if err := s.follow(ctx, acs.DecisionsStream, []string{decisionsFilter(tenant, opts.SessionID)}, opts.From, msgs, errc); err != nil {
			return err
		}
	}
	if opts.Alerts {
		if err := s.follow(ctx, acs.AlertsStream, []string{acs.AlertsPrefix + "." + tenant + ".>"}, opts.From, msgs, errc); err != nil {
			return err
		}
	}
	t := &tailer{src: s, opts: opts, answered: newBoundedSet(tailMemory), tools: newBoundedMap(1024), roots: s.roots}
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			return err
		case it := <-msgs:
			e, err := t.event(ctx, it)
			if err != nil {
				return err
			}
			if !opts.keep(e) {
				continue
			}
			if err := fn(e); err != nil {
				return err
			}
		}
	}
}

// tailItem is a message Tail followed, with the stream it came from.
type tailItem struct {
	stream string
	m      jetstream.Msg
}

// decisionsFilter is the ACS_DECISIONS subject filter of a tenant ("*":
// any) and a session id ("": any). A session id names one subject per
// tenant; alerts name no session in their subject and are filtered by
// their finding instead (TailOptions.keep).
func decisionsFilter(tenant, sessionID string) string {
	session := "*"
	if sessionID != "" {
		session = sessionID
	}
	filter := acs.DecisionsPrefix + "." + tenant + "." + session
	if tenant == "*" && session == "*" {
		// Everything on the stream, whatever its shape: a forgery on
		// acs.decisions.x is no less one.
		filter = acs.DecisionsPrefix + ".>"
	}
	return filter
}

// follow starts an ordered consumer on stream name, from the messages
// stored at or after from (zero: new messages only), and feeds what it
// delivers into msgs until ctx ends; a failure of the consumer once
// started goes to errc. Kept apart from Tail so that Tail reads as what it
// follows and what it does with each message.
func (s *Source) follow(ctx context.Context, name string, filter []string, from time.Time, msgs chan<- tailItem, errc chan<- error) error {
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: filter, DeliverPolicy: jetstream.DeliverNewPolicy}
	if !from.IsZero() {
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &from
	}
	c, err := s.js.OrderedConsumer(ctx, name, cfg)
	if err != nil {
		return fmt.Errorf("follow %s: %w", name, err)
	}
	it, err := c.Messages()
	if err != nil {
		return fmt.Errorf("follow %s: %w", name, err)
	}
	go func() {
		<-ctx.Done()
		it.Stop()
	}()
	go func() {
		for {
			m, err := it.Next()
			if err != nil {
				if ctx.Err() == nil {
					errc <- fmt.Errorf("follow %s: %w", name, err)
				}
				return
			}
			select {
			case msgs <- tailItem{name, m}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return nil
}

// event checks one followed message as the event Tail shows, with the
// stream position and time it was stored at.
func (t *tailer) event(ctx context.Context, it tailItem) (TailEvent, error) {
	md, err := it.m.Metadata()
	if err != nil {
		return TailEvent{}, err
	}
	var e TailEvent
	if it.stream == acs.DecisionsStream {
		e = t.decision(ctx, it.m.Subject(), it.m.Headers(), it.m.Data())
	} else {
		e = t.alert(it.m.Subject(), it.m.Headers(), it.m.Data())
	}
	e.Stream, e.StreamSeq, e.Time = it.stream, md.Sequence.Stream, md.Timestamp
	return e, nil
}

// keep applies the filters that the subject filter could not.
func (o TailOptions) keep(e TailEvent) bool {
	if o.SessionID != "" && e.SessionID != o.SessionID {
		return false
	}
	if o.Rule != "" && !containsString(e.Rules, o.Rule) {
		return false
	}
	if o.Decision != "" && e.Kind == TailDecision {
		kind, _, _ := strings.Cut(e.Decision, " ")
		if e.Decision != o.Decision && kind != o.Decision {
			return false
		}
	}
	return true
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// ErrTailDone ends a Tail whose caller has seen enough (--count).
var ErrTailDone = errors.New("tail: done")
