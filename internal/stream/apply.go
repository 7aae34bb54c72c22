package stream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/core/receipt"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/internal/msghdr"
	"github.com/turnguard/turnguard/internal/statestore"
)

// pending is a state touched by the batch being applied.
type pending[T any] struct {
	// owner is the worker whose cache holds the state: that of the
	// envelope that first named it in the batch.
	owner *worker
	state *T
	rev   uint64
	dirty bool
	// touched is set once an envelope of the batch was decided in this
	// state; before that it holds the committed state prefetch read.
	touched bool
	// out is what the batch publishes because of this state, and outbox
	// the same as saved with it.
	out    []*nats.Msg
	outbox *statestore.Outbox
	// refuse is set for a session whose stored state failed its integrity
	// check and could not be rebuilt (integrity.go).
	refuse *acs.Error
}

// batch is what apply keeps while it applies one batch.
type batch struct {
	// ins may come from several partition workers (group.go), each
	// inbound naming its own; owners lists those workers once each.
	ins    []inbound
	owners []*worker
	// rules is one rule set for the whole batch, even if a reload lands
	// meanwhile; byAgent says whether any of its rules counts per agent.
	rules    *policy.Set
	byAgent  bool
	sessions map[string]*pending[turnstate.Session]
	agents   map[string]*pending[turnstate.Agent]
	// spawned are the first states of the subagent sessions the batch's
	// spawns announced, allowed or denied (guardian.Outcome.Spawned).
	spawned []*turnstate.Session
	// direct holds publications tied to no stored session: dead letters
	// of unroutable subjects, refusals in sessions that do not exist or
	// whose state cannot be trusted.
	direct []*nats.Msg
	// conflict is set when a write lost its revision check: what was
	// written stands, the rest of the batch is decided again.
	conflict bool
	// receipts gathers the receipts signed once for the whole batch (nil:
	// receipts are off, or each is signed on its own).
	receipts *receiptBatch
}

// sessionWrite is one touched session's state, with its outbox, encoded
// for its compare-and-set write.
type sessionWrite struct {
	key   string
	write *statestore.Sealed
}

// apply decides every message of the batch against the committed session
// states, saves each touched session once — with the decisions, alerts and
// dead letters it causes as its outbox — and then publishes them. The save
// comes first because its revision check is the fence: an instance that
// decided from a stale state (another one moved the session meanwhile)
// loses the check and has published nothing; it re-reads and decides
// again. Deciding is deterministic and every publication carries a
// deterministic Nats-Msg-Id, so publishing an outbox again (after a crash
// between save and publish) repeats nothing visible.
//
// The inbounds may belong to several workers (a group, group.go): w is
// then any of them, used for what they share (rules, guardian, store,
// connection), while each session's cache and each decision's notes are
// those of the worker owning it.
func (w *worker) apply(ctx context.Context, ins []inbound) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), attemptTimeout)
	defer cancel()
	owners := ownersOf(ins)
	for _, o := range owners {
		o.forget()
	}
	rs := w.rules.Current()
	b := &batch{ins: ins, owners: owners, rules: rs, byAgent: rs != nil && rs.AgentKeyed(),
		sessions: map[string]*pending[turnstate.Session]{}, agents: map[string]*pending[turnstate.Agent]{}}
	if signer := w.guardian.Receipts(); signer != nil && !w.singleReceipts {
		b.receipts = &receiptBatch{signer: signer, key: w.receiptKey}
	}
	if err := w.prefetch(ctx, b); err != nil {
		return err
	}
	for i := range ins {
		if err := w.decideOne(ctx, b, &ins[i]); err != nil {
			return err
		}
	}
	// Signed before anything is written: the outboxes keep the messages
	// as they will be published.
	if b.receipts != nil {
		if err := b.receipts.sign(); err != nil {
			return err
		}
	}
	if err := w.commitAgents(ctx, b); err != nil {
		return err
	}
	if err := w.createSpawned(ctx, b); err != nil {
		return err
	}
	writes, err := w.sessionWrites(ctx, b)
	if err != nil {
		return err
	}
	saved, err := w.writeSessions(ctx, b, writes)
	if err != nil {
		return err
	}
	outboxes := [][]*nats.Msg{b.direct}
	for _, key := range saved {
		outboxes = append(outboxes, b.sessions[key].out)
	}
	if err := w.publishOutboxes(ctx, outboxes...); err != nil {
		return err
	}
	for _, key := range saved {
		b.sessions[key].owner.cache.published(key)
	}
	if b.conflict {
		return errConflict
	}
	w.stats.Processed.Add(uint64(len(ins)))
	for _, o := range owners {
		o.report(countOwned(ins, o))
	}
	return nil
}

// ownersOf lists the workers owning ins, each once, in order of first
// appearance.
func ownersOf(ins []inbound) []*worker {
	var out []*worker
	for i := range ins {
		if o := ins[i].owner; !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}

// countOwned counts the inbounds of ins owned by o.
func countOwned(ins []inbound, o *worker) int {
	n := 0
	for i := range ins {
		if ins[i].owner == o {
			n++
		}
	}
	return n
}

// prefetchReaders bounds the reads prefetch has in flight at once.
const prefetchReaders = 16

// prefetch reads the committed state of every session the batch touches.
// What the cache does not hold is read from the server concurrently, each
// read a round trip of its own; then the sessions are taken up in the
// order the batch first names them (session publishes what a session's
// last write left unpublished, which must go out before anything of this
// batch).
func (w *worker) prefetch(ctx context.Context, b *batch) error {
	first := firstOfEach(b.ins)
	reads := readUncached(ctx, first)
	for _, in := range first {
		key := in.key
		c, err := in.owner.session(ctx, in, reads[key])
		if err != nil {
			return err
		}
		// The batch decides in the cached state itself, not in a copy
		// (the core changes the state it is given): it is taken out of
		// the cache, which gets it back once written (writeSessions). A
		// batch that fails leaves no half-changed state behind; the
		// session is read from the bucket again. A session known to have
		// no state stays cached as such: there is nothing to change.
		p := &pending[turnstate.Session]{owner: in.owner, state: c.state, rev: c.rev, dirty: c.rebuilt, refuse: c.refuse}
		if c.state != nil {
			in.owner.cache.drop(key)
		}
		b.sessions[key] = p
	}
	return nil
}

// firstOfEach is the first inbound of each session ins name, in order.
func firstOfEach(ins []inbound) []*inbound {
	var first []*inbound
	seen := map[string]bool{}
	for i := range ins {
		in := &ins[i]
		if in.routeErr != nil || seen[in.key] {
			continue
		}
		seen[in.key] = true
		first = append(first, in)
	}
	return first
}

// warm reads into w's cache the committed state of every session of ins
// it does not hold (publishing what their last writes left unpublished, as
// prefetch would): the reads of a batch, made by its worker before it
// offers the batch to a group, so that one partition's reads — a new
// session costs three round trips — hold no other partition's batch. The
// group's prefetch then finds them cached.
func (w *worker) warm(ctx context.Context, ins []inbound) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), attemptTimeout)
	defer cancel()
	first := firstOfEach(ins)
	reads := readUncached(ctx, first)
	for _, in := range first {
		if f, ok := reads[in.key]; ok {
			if _, err := w.session(ctx, in, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// readUncached fetches the sessions of ins their workers' caches do not
// hold, up to prefetchReaders at a time, by session key.
func readUncached(ctx context.Context, ins []*inbound) map[string]*fetched {
	var miss []*inbound
	for _, in := range ins {
		if _, ok := in.owner.cache.get(in.key); !ok {
			miss = append(miss, in)
		}
	}
	out := make(map[string]*fetched, len(miss))
	if len(miss) == 0 {
		return out
	}
	got := make([]*fetched, len(miss))
	var wg sync.WaitGroup
	sem := make(chan struct{}, prefetchReaders)
	for i, in := range miss {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			got[i] = in.owner.fetch(ctx, in)
		})
	}
	wg.Wait()
	for i, in := range miss {
		out[in.key] = got[i]
	}
	return out
}

// decideOne decides in against its session's pending state and takes up
// the outcome: the new states, the spawned session, and what the session
// publishes because of it.
func (w *worker) decideOne(ctx context.Context, b *batch, in *inbound) error {
	if in.routeErr != nil {
		out := w.guardian.Unroutable(in.routeErr)
		b.direct = append(b.direct, in.owner.deadLetter(in, out))
		in.owner.noteDecision(in, &out)
		return nil
	}
	p := b.sessions[in.key]
	p.touched = true
	if p.refuse != nil {
		// Its state cannot be trusted: refused, answered and
		// dead-lettered, nothing written.
		out := w.guardian.Refuse(in.route, in.msg, p.refuse)
		sealed, err := w.seal(b, in, &out)
		if err != nil {
			return err
		}
		m := w.decisionMsg(in, out, sealed)
		if err := b.signs(m, sealed.ResponseBinding, sealed.Response); err != nil {
			return err
		}
		b.direct = append(b.direct, in.owner.deadLetter(in, out), m)
		in.owner.noteDecision(in, &out)
		return nil
	}
	var facts guardian.Facts
	// Read only when needed (most envelopes need neither), and then once
	// for both look-ups.
	if b.byAgent || in.route.Hook == "subagentStop" {
		facts, _ = guardian.ReadFacts(in.msg.Data)
	}
	pa, err := w.agentOf(ctx, b, in, facts.AgentID)
	if err != nil {
		return err
	}
	var agent *turnstate.Agent
	if pa != nil {
		agent = pa.state
	}
	msg := in.msg
	if id := facts.SubagentSessionID; in.route.Hook == "subagentStop" && id != "" {
		if msg.Subagent, err = in.owner.subagent(ctx, b.rules, in, p.state, id, b.sessions); err != nil {
			return err
		}
	}
	out, err := in.owner.decide(b.rules, p.state, agent, in, msg)
	if err != nil {
		return err
	}
	if out.Skipped {
		w.stats.Skipped.Add(1)
		return nil
	}
	// Sealed before any effect is taken up: an outcome that cannot be
	// signed fails the batch, and nothing of it is published unsigned.
	sealed, err := w.seal(b, in, &out)
	if err != nil {
		return err
	}
	if out.State != nil {
		p.state, p.dirty = out.State, true
	}
	if out.Agent != nil && pa != nil {
		pa.state, pa.dirty = out.Agent, true
	}
	if out.Spawned != nil {
		b.spawned = append(b.spawned, out.Spawned)
	}
	in.owner.noteDecision(in, &out)
	if out.Refusal != nil {
		p.out = append(p.out, in.owner.deadLetter(in, out))
	}
	// Alerts go out before their decision, so that a session's
	// publications end with a decision: finding that decision stored tells
	// a later load that the whole outbox went out (flushOutbox).
	for i, a := range out.Alerts {
		m := w.alertMsg(a, sealed.Alerts[i], in.msg.Seq)
		if err := b.signs(m, sealed.Alerts[i].Binding, sealed.Alerts[i].Body); err != nil {
			return err
		}
		p.out = append(p.out, m)
	}
	if out.Response != nil {
		m := w.decisionMsg(in, out, sealed)
		if err := b.signs(m, sealed.ResponseBinding, sealed.Response); err != nil {
			return err
		}
		p.out = append(p.out, m)
	}
	return nil
}

// signs has the receipt of m (body under bd) signed with the batch's, when
// the batch signs its receipts together.
func (b *batch) signs(m *nats.Msg, bd receipt.Binding, body []byte) error {
	if b.receipts == nil {
		return nil
	}
	return b.receipts.add(m, bd, body)
}

// agentOf returns the pending state of the agent id, read at its first
// envelope in the batch; nil when the rules count nothing per agent or the
// envelope names no agent.
func (w *worker) agentOf(ctx context.Context, b *batch, in *inbound, id string) (*pending[turnstate.Agent], error) {
	if !b.byAgent || id == "" {
		return nil, nil
	}
	key := turnstate.AgentKey(in.route.Tenant, id)
	if pa := b.agents[key]; pa != nil {
		return pa, nil
	}
	c, err := load(ctx, in.owner.agents, key, w.store.LoadAgent)
	if ie := (*statestore.IntegrityError)(nil); errors.As(err, &ie) {
		c, err = in.owner.unverifiedAgent(ctx, ie, in.msg.Seq)
	}
	if err != nil {
		return nil, err
	}
	pa := &pending[turnstate.Agent]{owner: in.owner, rev: c.rev, dirty: c.rebuilt, state: turnstate.NewAgent(in.route.Tenant, id)}
	if c.state != nil {
		pa.state = c.state.Clone()
	}
	b.agents[key] = pa
	return pa, nil
}

// commitAgents writes the agents the batch changed. Agents are shared
// across partitions, so their counts are made durable before any decision
// that depends on them is published: a lost race re-decides the batch with
// nothing out yet, and an envelope decided again after a crash is not
// counted twice (Agent.Applied).
func (w *worker) commitAgents(ctx context.Context, b *batch) error {
	conflict := false
	for key, pa := range b.agents {
		if !pa.dirty {
			continue
		}
		rev, err := w.store.SaveAgent(ctx, pa.state, pa.rev)
		if errors.Is(err, statestore.ErrConflict) {
			pa.owner.agents.drop(key)
			conflict = true
			continue
		}
		if err != nil {
			return err
		}
		pa.owner.agents.put(cached[turnstate.Agent]{key: key, state: pa.state, rev: rev})
	}
	if conflict {
		return errConflict
	}
	return nil
}

// createSpawned creates the first state of each subagent session the
// batch's spawns announced, allowed or denied (its link to the spawning
// turn, the parent's live taints), before the spawning session's write:
// once that write is stored the spawn is applied and would not be made
// again after a crash. Creating it is idempotent, and the same from any
// instance. A subagent session that exists already is linked instead, or
// given the parent's live taints if it is linked (adopt).
func (w *worker) createSpawned(ctx context.Context, b *batch) error {
	for _, s := range b.spawned {
		written, err := w.store.CreateIfAbsent(ctx, s)
		if err == nil && !written {
			written, err = w.adopt(ctx, s)
		}
		if err != nil {
			return err
		}
		if written {
			// Whichever of the batch's workers may hold it.
			for _, o := range b.owners {
				o.cache.drop(s.Key())
			}
		}
	}
	return nil
}

// maxAdoptAttempts bounds adopt's compare-and-set retries against the
// subagent's own worker; past them the batch is decided again.
const maxAdoptAttempts = 8

// adopt links a subagent whose session began before the spawn was applied
// (turnstate.Session.Adopt): written over its stored revision, with the
// outbox it has, so that the subagent's worker, whose next write then
// conflicts, decides its pending envelopes again from the linked state. It
// reports whether it wrote. A state that does not verify is left to its
// worker, which rebuilds it from the stream (the spawn included).
func (w *worker) adopt(ctx context.Context, spawned *turnstate.Session) (bool, error) {
	key := spawned.Key()
	for range maxAdoptAttempts {
		s, out, rev, err := w.store.Load(ctx, key)
		if ie := (*statestore.IntegrityError)(nil); errors.As(err, &ie) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("adopt subagent %s: %w", key, err)
		}
		if s == nil || !s.Adopt(spawned) {
			return false, nil
		}
		if _, err = w.store.SaveKeeping(ctx, s, out, rev); errors.Is(err, statestore.ErrConflict) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("adopt subagent %s: %w", key, err)
		}
		w.stats.SubagentsAdopted.Add(1)
		w.log.Info().Str("session", key).Str("parent", spawned.Parent.SessionID).
			Msg("subagent session begun before its spawn was applied: linked to its parent, with the parent's live taints")
		return true, nil
	}
	return false, fmt.Errorf("adopt subagent %s: %w", key, errConflict)
}

// sessionWrites encodes the write of every session the batch changed or
// publishes for, each with what it is about to publish as its outbox.
// Refusals in a session that does not exist have no state to fence with:
// they go out directly, unless the session was created meanwhile.
func (w *worker) sessionWrites(ctx context.Context, b *batch) ([]sessionWrite, error) {
	var writes []sessionWrite
	written := time.Now().UTC()
	for key, p := range b.sessions {
		if !p.dirty && len(p.out) == 0 {
			continue
		}
		if p.state == nil {
			created, err := w.createdMeanwhile(ctx, key)
			if err != nil {
				return nil, err
			}
			if created {
				// Decided from a stale "none": decided again.
				p.owner.cache.drop(key)
				b.conflict = true
				continue
			}
			b.direct = append(b.direct, p.out...)
			continue
		}
		if len(p.out) > 0 {
			if len(b.ins) > 1 && OutboxSize(p.out) > w.maxOutbox() {
				return nil, fmt.Errorf("session %s in a batch of %d: %w", key, len(b.ins), errOutboxTooLarge)
			}
			p.outbox = &statestore.Outbox{Written: written, Msgs: publications(p.out)}
		}
		wr, err := w.store.SaveMsg(p.state, p.outbox, p.rev)
		if err != nil {
			return nil, err
		}
		if size, limit := len(wr.Msg.Data)+msghdr.Size(wr.Msg.Header), w.maxValue(); size > limit {
			wr.Release()
			return nil, fmt.Errorf("session %s: %d bytes, limit %d: %w", key, size, limit, errStateTooLarge)
		}
		writes = append(writes, sessionWrite{key: key, write: wr})
	}
	return writes, nil
}

// createdMeanwhile reports whether a session the batch found without a
// state has one stored now (another instance created it). A deleted
// value's marker is no session created meanwhile.
func (w *worker) createdMeanwhile(ctx context.Context, key string) (bool, error) {
	s, _, _, err := w.store.Load(ctx, key)
	var ie *statestore.IntegrityError
	if err != nil && !errors.As(err, &ie) {
		return false, err
	}
	return s != nil || ie != nil && ie.Reason != turnstate.ReasonDeleted, nil
}

// writeSessions makes the writes, all in flight together, each with its
// revision check, and returns the keys of the sessions stored. A session
// whose check failed was decided from a stale state: its decisions are
// dropped unpublished and made again from the new one.
func (w *worker) writeSessions(ctx context.Context, b *batch, writes []sessionWrite) ([]string, error) {
	msgs := make([]*nats.Msg, len(writes))
	for i, wr := range writes {
		msgs[i] = wr.write.Msg
	}
	acks, err := w.publish(ctx, msgs)
	if err != nil {
		// Some publish may be unresolved, and the client may still send
		// its value: the values are not given back.
		return nil, err
	}
	for _, wr := range writes {
		wr.write.Release()
	}
	var saved []string
	for i, wr := range writes {
		if acks[i].err != nil {
			if !statestore.IsConflict(acks[i].err) {
				return nil, fmt.Errorf("save session %s: %w", wr.key, acks[i].err)
			}
			p := b.sessions[wr.key]
			p.owner.log.Warn().Str("session", wr.key).Msg("session state changed underneath; re-reading it")
			p.owner.cache.drop(wr.key)
			b.conflict = true
			continue
		}
		p := b.sessions[wr.key]
		p.owner.cache.put(cached[turnstate.Session]{key: wr.key, state: p.state, rev: acks[i].seq, outbox: p.outbox})
		saved = append(saved, wr.key)
	}
	return saved, nil
}
