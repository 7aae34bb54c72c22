package stream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/internal/statestore"
)

// session returns the committed state of in's session, from the cache or
// the bucket. What its last write left unpublished goes out first: a
// publication of this batch must not overtake it. A stored value that does
// not verify is never used: the session is rebuilt (unverifiedSession).
//
// f, when not nil, is what prefetch already read of the session (it was
// not cached then); else what is needed is read here.
func (w *worker) session(ctx context.Context, in *inbound, f *fetched) (cached[turnstate.Session], error) {
	key := in.key
	c, ok := w.cache.get(key)
	// last is the session's newest stored decision, looked up once for the
	// rollback check and the outbox.
	var last newest
	looked := false
	if !ok {
		if f == nil {
			f = w.fetch(ctx, in)
		}
		s, out, rev, err := f.state, f.outbox, f.rev, f.err
		if ie := (*statestore.IntegrityError)(nil); errors.As(err, &ie) {
			return w.unverifiedSession(ctx, ie, in)
		}
		if err != nil {
			return c, err
		}
		if last, err = f.last, f.lastErr; err != nil {
			return c, err
		}
		looked = true
		if s != nil {
			if ie := rolledBack(key, rev, s, out, last); ie != nil {
				return w.unverifiedSession(ctx, ie, in)
			}
		} else if last.seq > 0 {
			// No value, no marker, yet decisions of the session are
			// stored: the bucket was purged whole, or the session
			// expired (--session-ttl) and came back. Either way its
			// history, not a blank state, is what it is.
			return w.missingSession(ctx, key, rev, in)
		} else if earlier, err := f.earlier, f.earlierErr; err != nil {
			return c, err
		} else if earlier > 0 {
			// No value, no marker and no decision, yet the stream holds
			// the session's envelopes: its state and decisions were
			// purged through the stream API, which leaves no marker. A
			// blank state would forget its taints; its history is what
			// it is.
			return w.unverifiedSession(ctx, &statestore.IntegrityError{Kind: turnstate.KindSession, Key: key, Revision: rev, Reason: ReasonPurged,
				Err: fmt.Errorf("no stored state nor decision, but %s holds the session's envelope of sequence %d", acs.HooksStream, earlier)}, in)
		}
		c = cached[turnstate.Session]{key: key, state: s, rev: rev, outbox: out}
		w.cache.put(c)
	}
	if c.outbox == nil {
		return c, nil
	}
	if !looked {
		var err error
		if last, err = w.lastDecision(ctx, in.route); err != nil {
			return c, err
		}
	}
	if err := w.flushOutbox(ctx, key, c.rev, c.outbox, last.seq); err != nil {
		return c, fmt.Errorf("publish the outbox of %s: %w", key, err)
	}
	w.cache.published(key)
	c.outbox = nil
	return c, nil
}

// fetched is what the bucket and ACS_DECISIONS hold of a session: its
// stored state and its newest stored decision, each with its own error.
type fetched struct {
	state   *turnstate.Session
	outbox  *statestore.Outbox
	rev     uint64
	err     error
	last    newest
	lastErr error
	// earlier is the sequence of the session's first envelope in
	// ACS_HOOKS when there is neither state nor decision and it is older
	// than the envelope being applied (earlierEnvelope).
	earlier    uint64
	earlierErr error
}

// fetch reads a session's newest stored decision, then its stored state.
// In that order the state read is at least as new as the decision: an
// instance that wrote the session in between cannot make the state look
// older than its newest decision, which would pass for a rollback.
//
// A session found with neither (nor a delete marker) is new, or was
// purged: one more look-up, of its first envelope in ACS_HOOKS, tells.
// Here, so that prefetch makes it concurrently with the other reads; and
// beside those two rather than after them, as whether a session is new is
// known only once they return: a new session's first envelope, which a
// caller waits on, costs one round trip less, and any other session not
// cached one look-up more (what ACS_HOOKS holds of a session before the
// envelope only grows, whatever the order of the reads).
func (w *worker) fetch(ctx context.Context, in *inbound) *fetched {
	f := &fetched{}
	type earlier struct {
		seq uint64
		err error
	}
	first := make(chan earlier, 1)
	go func() {
		seq, err := w.earlierEnvelope(ctx, in)
		first <- earlier{seq, err}
	}()
	f.last, f.lastErr = w.lastDecision(ctx, in.route)
	f.state, f.outbox, f.rev, f.err = w.store.Load(ctx, in.key)
	e := <-first
	if f.state == nil && f.err == nil && f.lastErr == nil && f.last.seq == 0 {
		f.earlier, f.earlierErr = e.seq, e.err
	}
	return f
}

// flushOutbox publishes an outbox found with a state, unless it already
// went out. Every state keeps the outbox of its last write, so this runs for
// every session loaded after a restart; the streams' duplicate windows would
// drop a second copy, but plain subscribers of the subjects would still see
// it, and a waiting caller could take an old decision for a new one. So the
// session's newest stored decision decides: a session's outbox ends with a
// decision, sent only once everything before it was stored
// (publishOutboxes), so the outbox's last decision being stored means the
// outbox went out. After a clean stop nothing is published again; after a
// crash or a failed publication, at most the outbox of the session's last
// batch, whose last decision had not been stored.
//
// Only publications to the session's own output subjects leave, even from
// a verified outbox (allowedOutbox). last is the stream sequence the
// session's newest stored decision answers (0: none).
func (w *worker) flushOutbox(ctx context.Context, key string, rev uint64, out *statestore.Outbox, last uint64) error {
	msgs := make([]*nats.Msg, len(out.Msgs))
	for i, p := range out.Msgs {
		msgs[i] = &nats.Msg{Subject: p.Subject, Header: p.Header, Data: p.Data}
	}
	msgs, err := w.allowedOutbox(ctx, key, rev, msgs)
	if err != nil {
		return err
	}
	if outboxPublished(msgs, last) {
		return nil
	}
	w.stats.Republished.Add(uint64(len(msgs)))
	return w.publishOutboxes(ctx, msgs)
}

// outboxPublished reports whether the last decision of an outbox is the
// newest stored in its session's decision subject, or older: whether it
// answers a stream sequence at or below last. (allowedOutbox leaves only
// the session's own decision subject.)
func outboxPublished(msgs []*nats.Msg, last uint64) bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if !strings.HasPrefix(m.Subject, acs.DecisionsPrefix+".") {
			continue
		}
		seq, err := strconv.ParseUint(m.Header.Get(acs.HdrStreamSeq), 10, 64)
		return err == nil && last >= seq
	}
	return false
}

// earlierEnvelope returns the sequence of the session's first envelope in
// ACS_HOOKS if it is older than in (0: none is). It is what a session with
// no state and no decision costs: one look-up, of the first message of the
// session's subjects, which for a new session is in itself.
func (w *worker) earlierEnvelope(ctx context.Context, in *inbound) (uint64, error) {
	first, err := w.firstEnvelope(ctx, in.route.Tenant, in.route.SessionID)
	if err != nil || first >= in.msg.Seq {
		return 0, err
	}
	return first, nil
}

// firstEnvelope is the ACS_HOOKS sequence of session id's first stored
// envelope (0: none is stored).
func (w *worker) firstEnvelope(ctx context.Context, tenant, id string) (uint64, error) {
	filter := acs.StoredFilter(tenant, id, "*")
	m, err := w.hooks.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(filter))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("look up the first envelope on %s: %w", filter, err)
	}
	return m.Sequence, nil
}

// lastDecision reads the newest stored decision of the session.
func (w *worker) lastDecision(ctx context.Context, route acs.Route) (newest, error) {
	subject := acs.DecisionSubject(route.Tenant, route.SessionID)
	last, err := w.decisions.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return newest{}, nil
	}
	if err != nil {
		return newest{}, fmt.Errorf("look up the last decision on %s: %w", subject, err)
	}
	var n newest
	n.seq, _ = strconv.ParseUint(last.Header.Get(acs.HdrStreamSeq), 10, 64)
	if v := last.Header.Get(acs.HdrStateAccounted); v != "" {
		n.accounted, err = strconv.ParseUint(v, 10, 64)
		n.stateless = err == nil
	}
	return n, nil
}

// publications is what an outbox keeps of messages.
func publications(msgs []*nats.Msg) []statestore.Publication {
	out := make([]statestore.Publication, len(msgs))
	for i, m := range msgs {
		out[i] = statestore.Publication{Subject: m.Subject, Header: m.Header, Data: m.Data}
	}
	return out
}

// load returns a committed state from the cache or the bucket.
func load[T any](ctx context.Context, cache *stateCache[T], key string, fromKV func(context.Context, string) (*T, uint64, error)) (cached[T], error) {
	if c, ok := cache.get(key); ok {
		return c, nil
	}
	s, rev, err := fromKV(ctx, key)
	if err != nil {
		return cached[T]{}, err
	}
	c := cached[T]{key: key, state: s, rev: rev}
	cache.put(c)
	return c, nil
}

// subagent returns the state of the subagent session a subagentStop
// names, for the rules to carry its taint to the parent: the batch's own
// pending state when the batch decided in it already, else the stored one
// (nil when there is none). A stored state that does not verify cannot
// vouch that the subagent read nothing untrusted: it reads as one that
// carries every taint label (unknownChild).
//
// The subagent's session may belong to another partition, whose worker
// applies its envelopes on its own schedule: a framework that publishes
// the child's last result without waiting for its decision, then the
// stop, can have the stop decided before the child's partition applied
// that result. So the stored state is used only once it is known to hold
// every envelope of the child stored before the stop (freshChild); until
// then the stop waits, within the worker's wait budget, and past it the
// child reads as unknown — never as the older state.
func (w *worker) subagent(ctx context.Context, rs *policy.Set, in *inbound, parent *turnstate.Session, id string, batch map[string]*pending[turnstate.Session]) (*turnstate.Session, error) {
	key := acs.SessionKey(in.route.Tenant, id)
	if p, ok := batch[key]; ok && p.touched && p.state != nil {
		return p.state, nil
	}
	s, _, _, err := w.store.Load(ctx, key)
	if ie := (*statestore.IntegrityError)(nil); errors.As(err, &ie) {
		return unknownChild(rs, in.route, id), nil
	}
	if err == nil && s == nil && parent != nil && slices.Contains(parent.Subagents, id) {
		return w.missingChild(ctx, rs, in, id)
	}
	if err != nil || parent == nil || !parent.Spawned(s) {
		// Not a child of this session: the rules take nothing from it.
		return s, err
	}
	return w.freshChild(ctx, rs, in, id, s)
}

// missingChild decides what a subagent the parent spawned, but whose state
// is gone without a marker, hands back at its stop. The allowed spawn
// created its state, so with envelopes of it in ACS_HOOKS the state was
// purged through the stream API (or expired): what it read cannot be told,
// and it counts as carrying every taint. Without envelopes it did nothing.
func (w *worker) missingChild(ctx context.Context, rs *policy.Set, in *inbound, id string) (*turnstate.Session, error) {
	if !subjectToken(id) {
		return nil, nil // no subject names it: it has no envelopes
	}
	first, err := w.firstEnvelope(ctx, in.route.Tenant, id)
	switch {
	case err != nil:
		return nil, fmt.Errorf("subagent %s: %w", id, err)
	case first == 0:
		return nil, nil
	}
	w.stats.SubagentsUnknown.Add(1)
	w.log.Error().Str("session", in.key).Str("subagent", acs.SessionKey(in.route.Tenant, id)).
		Msg("subagentStop: the subagent's state is gone though its envelopes are stored (purged or expired); the subagent counts as carrying every taint")
	return unknownChild(rs, in.route, id), nil
}

// freshChild returns the child's state s once it holds every envelope of
// the child that ACS_HOOKS stored before the stop in: when the child's
// newest stored envelope is at or below s.LastSeq, or lies in the stop's
// own partition (applied in stream order before the stop), or once the
// child's partition's consumer has acknowledged it — its effects are then
// stored, and s is read again. A worker acknowledges only what it stored.
// The newest envelope may come after the stop (the child published on):
// waiting for it asks for more than needed, never for less.
func (w *worker) freshChild(ctx context.Context, rs *policy.Set, in *inbound, id string, s *turnstate.Session) (*turnstate.Session, error) {
	if !subjectToken(id) {
		// No subject names this session: it has no envelopes.
		return s, nil
	}
	last, err := w.hooks.GetLastMsgForSubject(ctx, acs.StoredFilter(in.route.Tenant, id, "*"))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("look up the last envelope of subagent %s: %w", id, err)
	}
	target := last.Sequence
	key := acs.SessionKey(in.route.Tenant, id)
	r, err := acs.ParsePartitioned(last.Subject)
	if err != nil {
		// Stored under a subject no partition owns: nothing can say
		// whether it was applied.
		w.stats.SubagentsUnknown.Add(1)
		w.log.Warn().Err(err).Str("session", in.key).Str("subagent", key).Msg("subagentStop: the subagent's newest envelope names no partition; the subagent counts as carrying every taint")
		return unknownChild(rs, in.route, id), nil
	}
	if r.Partition == in.route.Partition || s.LastSeq >= target {
		return s, nil
	}
	start := time.Now()
	allowed := w.childWait.grant(start)
	defer func() { w.childWait.spend(time.Since(start)) }()
	pause := time.Millisecond
	for {
		if floor, ok := w.ackFloor(ctx, r.Partition); ok && floor >= target {
			s, _, _, err := w.store.Load(ctx, key)
			if ie := (*statestore.IntegrityError)(nil); errors.As(err, &ie) {
				return unknownChild(rs, in.route, id), nil
			}
			return s, err
		}
		if time.Since(start)+pause > allowed {
			w.stats.SubagentsUnknown.Add(1)
			w.log.Warn().Str("session", in.key).Str("subagent", key).Uint64("stop_seq", in.msg.Seq).
				Uint64("child_seq", target).Int("child_partition", r.Partition).Dur("waited", time.Since(start)).
				Msg("subagentStop: the subagent's partition has not applied its envelopes; the subagent counts as carrying every taint")
			return unknownChild(rs, in.route, id), nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, 20*time.Millisecond)
	}
}

// ackFloor is the stream sequence up to which partition p's consumer has
// acknowledged every message; false when it cannot be read (the consumer
// is gone or the server did not answer: not known, so not yet).
func (w *worker) ackFloor(ctx context.Context, p int) (uint64, bool) {
	c, err := w.hooks.Consumer(ctx, acs.PartitionConsumer(p))
	if err != nil {
		return 0, false
	}
	return c.CachedInfo().AckFloor.Stream, true
}

// unknownChild stands for a subagent whose state cannot be known: one
// spawned by this session that carries every taint label of the rules.
func unknownChild(rs *policy.Set, route acs.Route, id string) *turnstate.Session {
	s := turnstate.New(route.Tenant, id)
	s.Parent = &turnstate.ParentLink{SessionID: route.SessionID}
	s.Taints = map[string]*turnstate.Taint{}
	if rs != nil {
		for _, t := range rs.Taints {
			s.Taints[t.ID] = &turnstate.Taint{}
		}
	}
	return s
}

// subjectToken reports whether s can be one token of a subject (no
// separator, wildcard or space), so that a filter built from it matches
// only itself.
func subjectToken(s string) bool {
	return s != "" && !strings.ContainsAny(s, ".*> \t\r\n")
}

// waitBudget bounds how long a worker waits for other partitions: at most
// max for one wait, and over time a tenth of its running time. Stops
// naming children in a partition someone floods must not stall this
// partition's bystanders: past the budget they fail closed at once.
type waitBudget struct {
	max, avail time.Duration
	at         time.Time
}

// grant is how long a wait starting now may last.
func (b *waitBudget) grant(now time.Time) time.Duration {
	if b.at.IsZero() {
		b.avail = b.max
	} else {
		b.avail = min(b.max, b.avail+now.Sub(b.at)/10)
	}
	b.at = now
	return b.avail
}

// spend takes a wait of d off the budget.
func (b *waitBudget) spend(d time.Duration) { b.avail = max(b.avail-d, 0) }
