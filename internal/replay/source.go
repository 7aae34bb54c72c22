// Package replay reads what turnguard recorded — the hooks, decisions and
// alerts streams — and runs it through the same pure core as the processor:
// to list sessions, to lay a session out as a timeline, to back-test other
// rules against history, and to verify hash chains, signatures and receipts
// offline. It never publishes: replay output goes to the terminal or files.
package replay

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/receipt"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// Source is turnguard's recorded streams.
type Source struct {
	js        jetstream.JetStream
	hooks     jetstream.Stream
	decisions jetstream.Stream
	alerts    jetstream.Stream
	// trustedKey, when set, is the receipt key recorded decisions and
	// alerts must verify with to be read as turnguard's.
	trustedKey ed25519.PublicKey
	// roots remembers the batch receipt signatures that verified, for
	// everything that checks receipts read through this source.
	roots *receipt.RootCache
}

// Open opens the streams through js.
func Open(ctx context.Context, js jetstream.JetStream) (*Source, error) {
	s := &Source{js: js, roots: receipt.NewRootCache()}
	for name, dst := range map[string]*jetstream.Stream{acs.HooksStream: &s.hooks, acs.DecisionsStream: &s.decisions, acs.AlertsStream: &s.alerts} {
		st, err := js.Stream(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("open stream %s: %w (is this turnguard's NATS?)", name, err)
		}
		*dst = st
	}
	return s, nil
}

// Range is a slice of ACS_HOOKS fixed when it was resolved, so a run is
// finite and repeatable however much traffic arrives meanwhile.
type Range struct {
	From, To uint64
	// ToTime, when set, ends the range at the last envelope stored at or
	// before it.
	ToTime time.Time
}

// Empty reports whether the range holds nothing.
func (r Range) Empty() bool { return r.From == 0 || r.From > r.To }

// Bounds select a range by stream time; zero values mean unbounded.
type Bounds struct {
	From, To time.Time
}

// Resolve turns bounds into a range of stream sequences, the end fixed at
// the stream's last sequence now.
func (s *Source) Resolve(ctx context.Context, b Bounds) (Range, error) {
	info, err := s.hooks.Info(ctx)
	if err != nil {
		return Range{}, err
	}
	r := Range{From: info.State.FirstSeq, To: info.State.LastSeq, ToTime: b.To}
	// Nothing stored at or after the start: say so without waiting for an
	// envelope that is not there.
	if info.State.Msgs == 0 || b.From.After(info.State.LastTime) {
		return Range{}, nil
	}
	if !b.From.IsZero() {
		seq, err := s.firstAtOrAfter(ctx, b.From)
		if err != nil {
			return Range{}, err
		}
		r.From = seq
	}
	return r, nil
}

// firstAtOrAfter finds the first stored envelope at or after t (0: none).
func (s *Source) firstAtOrAfter(ctx context.Context, t time.Time) (uint64, error) {
	c, err := s.js.OrderedConsumer(ctx, acs.HooksStream, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &t})
	if err != nil {
		return 0, err
	}
	m, err := c.Next(jetstream.FetchMaxWait(2 * time.Second))
	if errors.Is(err, jetstream.ErrNoMessages) || errors.Is(err, nats.ErrTimeout) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	md, err := m.Metadata()
	if err != nil {
		return 0, err
	}
	return md.Sequence.Stream, nil
}

// Envelope is one recorded inbound message.
type Envelope struct {
	Seq      uint64
	Time     time.Time
	Subject  string
	Data     []byte
	Header   nats.Header
	Route    acs.Route
	RouteErr error
}

// Each calls fn for the envelopes of r matching any of filters (none: all),
// in stream order. It stops at the end of the range, when fn fails, or
// when ctx ends (returning ctx's error).
func (s *Source) Each(ctx context.Context, r Range, filters []string, fn func(Envelope) error) error {
	if r.Empty() {
		return nil
	}
	cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: r.From, FilterSubjects: filters}
	return s.each(ctx, acs.HooksStream, cfg, func(m jetstream.Msg, md *jetstream.MsgMetadata) (bool, error) {
		if md.Sequence.Stream > r.To || !r.ToTime.IsZero() && md.Timestamp.After(r.ToTime) {
			return false, nil
		}
		e := Envelope{Seq: md.Sequence.Stream, Time: md.Timestamp, Subject: m.Subject(), Data: m.Data(), Header: m.Headers()}
		e.Route, e.RouteErr = acs.ParsePartitioned(e.Subject)
		return md.NumPending > 0 && md.Sequence.Stream < r.To, fn(e)
	})
}

// each drives an ordered consumer; fn says whether to go on. Callers stop
// at the last message they want (NumPending, their range's end), so a read
// that stalls before is an error, not the end: a verification or back-test
// cut short must not pass for one that saw everything.
func (s *Source) each(ctx context.Context, streamName string, cfg jetstream.OrderedConsumerConfig, fn func(jetstream.Msg, *jetstream.MsgMetadata) (bool, error)) error {
	c, err := s.js.OrderedConsumer(ctx, streamName, cfg)
	if err != nil {
		return err
	}
	// Nothing to read: say so now rather than after waiting for a message.
	// Whatever arrives later lies beyond the caller's fixed range.
	if info, err := c.Info(ctx); err != nil {
		return err
	} else if info.NumPending == 0 {
		return nil
	}
	it, err := c.Messages(jetstream.PullMaxMessages(1000))
	if err != nil {
		return err
	}
	defer it.Stop()
	for {
		m, err := it.Next(jetstream.NextMaxWait(10 * time.Second))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			return fmt.Errorf("the read of %s stalled: %w", streamName, err)
		}
		md, err := m.Metadata()
		if err != nil {
			return err
		}
		more, err := fn(m, md)
		if err != nil || !more {
			return err
		}
	}
}

// Recorded is what the processor published for a set of envelopes,
// keyed by the inbound stream sequence their headers name.
type Recorded struct {
	Decisions map[uint64]Decision
	Alerts    map[uint64][]Alert
	// Ignored counts messages on the decision and alert subjects that were
	// left out: with a trusted key, those whose receipt does not verify for
	// the sequence they name; without one, a second decision for a
	// sequence already answered. Anyone allowed to publish there can put a
	// message that looks like turnguard's; replay verify lists them.
	Ignored int
}

// Decision is a recorded decision.
type Decision struct {
	Data       []byte
	Receipt    string
	ReceiptKey string
	// Response is the decoded body, when it was read with the bodies
	// decoded (Parsed); ParseErr says why the body does not decode.
	Response acs.Response
	Parsed   bool
	ParseErr error
	// headerKind is the decision as the message headers state it.
	headerKind string
}

// Kind names a response the way diffs compare them: the decision, or
// "error <code>". It reads the decoded body when there is one, else the
// headers the processor set from it.
func (d Decision) Kind() string {
	if d.Parsed {
		return responseKind(&d.Response)
	}
	if d.ParseErr != nil {
		return "unreadable"
	}
	return d.headerKind
}

func responseKind(r *acs.Response) string {
	switch {
	case r == nil:
		return "none"
	case r.Error != nil:
		return "error " + strconv.Itoa(r.Error.Code)
	case r.Result != nil:
		return string(r.Result.Decision)
	}
	return "none"
}

// kindFromHeaders is the decision the processor's headers state, or ""
// when they state none.
func kindFromHeaders(h nats.Header) string {
	switch d := h.Get(acs.HdrDecision); d {
	case "":
		return ""
	case "error":
		return "error " + h.Get(acs.HdrErrorCode)
	default:
		return d
	}
}

// newDecision reads a recorded decision message.
func newDecision(h nats.Header, data []byte, bodies Bodies) Decision {
	d := Decision{Data: data, Receipt: h.Get(acs.HdrReceipt), ReceiptKey: h.Get(acs.HdrReceiptKey), headerKind: kindFromHeaders(h)}
	if bodies == DecodeBodies || d.headerKind == "" {
		if err := json.Unmarshal(d.Data, &d.Response); err != nil {
			d.ParseErr = fmt.Errorf("the recorded decision is not a JSON response: %w", err)
		} else {
			d.Parsed = true
		}
	}
	return d
}

// Alert is a recorded alert.
type Alert struct {
	RuleID  string
	Subject string
	Data    []byte
}

// Bodies says whether ReadRecorded decodes every decision's body (the
// timeline and verify need them) or only reads what the headers state (a
// back-test compares decisions only, and decoding is most of its reading
// cost).
type Bodies bool

// With and without decoded bodies.
const (
	DecodeBodies Bodies = true
	HeadersOnly  Bodies = false
)

// trusted reports whether a recorded message may be taken as turnguard's:
// always without a trusted key (SetTrustedKey), else when its receipt
// verifies for binding b.
func (s *Source) trusted(b receipt.Binding, m jetstream.Msg) bool {
	if s.trustedKey == nil {
		return true
	}
	return s.roots.Verify(s.trustedKey, b, m.Data(), m.Headers().Get(acs.HdrReceipt)) == nil
}

// SetTrustedKey makes ReadRecorded take only decisions and alerts whose
// receipts verify with pub (nil: take every one, the first per sequence).
func (s *Source) SetTrustedKey(pub ed25519.PublicKey) { s.trustedKey = pub }

// ReadRecorded reads the decisions and alerts published for envelopes of
// the given tenant (and session, when set), from the decision and alert
// streams' messages stored at or after since (zero: all).
func (s *Source) ReadRecorded(ctx context.Context, tenant, sessionID string, since time.Time, bodies Bodies) (Recorded, error) {
	rec := Recorded{Decisions: map[uint64]Decision{}, Alerts: map[uint64][]Alert{}}
	cfg := func(filter string) jetstream.OrderedConsumerConfig {
		c := jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}}
		if !since.IsZero() {
			c.DeliverPolicy, c.OptStartTime = jetstream.DeliverByStartTimePolicy, &since
		}
		return c
	}
	decisions := acs.DecisionsPrefix + "." + tenant + ".>"
	if sessionID != "" {
		decisions = acs.DecisionSubject(tenant, sessionID)
	}
	err := s.readAll(ctx, s.decisions, acs.DecisionsStream, cfg(decisions), func(m jetstream.Msg) error {
		seq, err := strconv.ParseUint(m.Headers().Get(acs.HdrStreamSeq), 10, 64)
		if err != nil {
			rec.Ignored++ // not a decision turnguard published
			return nil
		}
		_, answered := rec.Decisions[seq]
		if answered || !s.trusted(receipt.Binding{Kind: receipt.KindDecision, Subject: m.Subject(), Seq: seq}, m) {
			// The first verified answer stands: the processor publishes
			// one per envelope, and the stream drops its repeats.
			rec.Ignored++
			return nil
		}
		rec.Decisions[seq] = newDecision(m.Headers(), m.Data(), bodies)
		return nil
	})
	if err != nil {
		return rec, fmt.Errorf("read decisions: %w", err)
	}
	err = s.readAll(ctx, s.alerts, acs.AlertsStream, cfg(acs.AlertsPrefix+"."+tenant+".>"), func(m jetstream.Msg) error {
		seq, err := strconv.ParseUint(m.Headers().Get(acs.HdrStreamSeq), 10, 64)
		if err != nil || !s.trusted(receipt.Alert(m.Subject(), seq), m) {
			rec.Ignored++
			return nil
		}
		rec.Alerts[seq] = append(rec.Alerts[seq], Alert{RuleID: m.Headers().Get(acs.HdrRuleID), Subject: m.Subject(), Data: m.Data()})
		return nil
	})
	if err != nil {
		return rec, fmt.Errorf("read alerts: %w", err)
	}
	return rec, nil
}

// readAll reads every message of a stream matching cfg that is stored now.
func (s *Source) readAll(ctx context.Context, st jetstream.Stream, name string, cfg jetstream.OrderedConsumerConfig, fn func(jetstream.Msg) error) error {
	info, err := st.Info(ctx)
	if err != nil {
		return err
	}
	if info.State.Msgs == 0 {
		return nil
	}
	last := info.State.LastSeq
	return s.each(ctx, name, cfg, func(m jetstream.Msg, md *jetstream.MsgMetadata) (bool, error) {
		if md.Sequence.Stream > last {
			return false, nil
		}
		return md.NumPending > 0 && md.Sequence.Stream < last, fn(m)
	})
}

// SpawnLinks maps each subagent session of tenant ("*": of every tenant)
// announced by a subagentStart up to seq to the sessions that announced
// it, in stream order: the first is the one it is linked to (as in the
// state bucket), a later one gave it the taints live at its spawn
// (turnstate.Session.Adopt).
func (s *Source) SpawnLinks(ctx context.Context, tenant string, to uint64) (map[string][]string, error) {
	links := map[string][]string{}
	err := s.Each(ctx, Range{From: 1, To: to}, []string{acs.StoredFilter(tenant, "*", "subagentStart")}, func(e Envelope) error {
		if e.RouteErr != nil {
			return nil
		}
		id := guardian.SubagentSessionID(e.Data)
		if id == "" {
			return nil
		}
		// The subagent's session is of the announcing session's tenant;
		// tenant may be "*".
		child := acs.SessionKey(e.Route.Tenant, id)
		turnstate.AddSpawnLink(links, child, e.Route.SessionKey())
		return nil
	})
	return links, err
}

// sessionFilters are the subject filters of sessions (keys), sorted.
func sessionFilters(sessions map[string]bool) []string {
	var out []string
	for key := range sessions {
		tenant, id, _ := strings.Cut(key, ".")
		out = append(out, acs.StoredFilter(tenant, id, "*"))
	}
	slices.Sort(out)
	return out
}

// SessionTenants lists, sorted, the tenants with envelopes of session
// sessionID up to the end of r: a session id names a session within a
// tenant, so more than one means the caller must choose.
func (s *Source) SessionTenants(ctx context.Context, r Range, sessionID string) ([]string, error) {
	seen := map[string]bool{}
	err := s.Each(ctx, Range{From: 1, To: r.To, ToTime: r.ToTime}, []string{acs.StoredFilter("*", sessionID, "*")}, func(e Envelope) error {
		if e.RouteErr == nil {
			seen[e.Route.Tenant] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find the tenant of session %s: %w", sessionID, err)
	}
	tenants := make([]string, 0, len(seen))
	for t := range seen {
		tenants = append(tenants, t)
	}
	slices.Sort(tenants)
	return tenants, nil
}
