package stream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/turnguard/turnguard/internal/acs"
	"github.com/turnguard/turnguard/internal/guardian"
	"github.com/turnguard/turnguard/internal/msghdr"
	"github.com/turnguard/turnguard/internal/statestore"
	"github.com/turnguard/turnguard/internal/turnstate"
)

// pending is a state touched by the batch being applied.
type pending[T any] struct {
	state *T
	rev   uint64
	dirty bool
	// out is what the batch publishes because of this state, and outbox
	// the same as saved with it.
	out    []*nats.Msg
	outbox *statestore.Outbox
	// refuse is set for a session whose stored state failed its integrity
	// check and could not be rebuilt (integrity.go).
	refuse *acs.Error
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
func (w *worker) apply(ctx context.Context, ins []inbound) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), attemptTimeout)
	defer cancel()
	sessions := map[string]*pending[turnstate.Session]{}
	agents := map[string]*pending[turnstate.Agent]{}
	var spawned []*turnstate.Session
	// direct holds publications tied to no stored session: dead letters
	// of unroutable subjects, refusals in sessions that do not exist.
	var direct []*nats.Msg
	// One rule set for the whole batch, even if a reload lands meanwhile.
	rs := w.rules.Current()
	byAgent := rs != nil && rs.AgentKeyed()
	w.forget()
	for i := range ins {
		in := &ins[i]
		if in.routeErr != nil {
			out := w.guardian.Unroutable(in.routeErr)
			direct = append(direct, w.deadLetter(in, out))
			w.noteDecision(in, &out)
			continue
		}
		key := in.route.SessionKey()
		p, ok := sessions[key]
		if !ok {
			c, err := w.session(ctx, in)
			if err != nil {
				return err
			}
			p = &pending[turnstate.Session]{rev: c.rev, dirty: c.rebuilt, refuse: c.refuse}
			if c.state != nil {
				p.state = c.state.Clone()
			}
			sessions[key] = p
		}
		if p.refuse != nil {
			// Its state cannot be trusted: refused, answered and
			// dead-lettered, nothing written.
			out := w.guardian.Refuse(in.route, in.msg, p.refuse)
			sealed, err := w.seal(in, &out)
			if err != nil {
				return err
			}
			direct = append(direct, w.deadLetter(in, out), w.decisionMsg(in, out, sealed))
			w.noteDecision(in, &out)
			continue
		}
		var pa *pending[turnstate.Agent]
		var facts guardian.Facts
		// Read only when needed (most envelopes need neither), and then
		// once for both look-ups.
		if byAgent || in.route.Hook == "subagentStop" {
			facts, _ = guardian.ReadFacts(in.msg.Data)
		}
		if byAgent {
			if id := facts.AgentID; id != "" {
				akey := turnstate.AgentKey(in.route.Tenant, id)
				if pa = agents[akey]; pa == nil {
					c, err := load(ctx, w.agents, akey, w.store.LoadAgent)
					if ie := (*statestore.IntegrityError)(nil); errors.As(err, &ie) {
						c, err = w.unverifiedAgent(ctx, ie, in.msg.Seq)
					}
					if err != nil {
						return err
					}
					pa = &pending[turnstate.Agent]{rev: c.rev, dirty: c.rebuilt, state: turnstate.NewAgent(in.route.Tenant, id)}
					if c.state != nil {
						pa.state = c.state.Clone()
					}
					agents[akey] = pa
				}
			}
		}
		var agent *turnstate.Agent
		if pa != nil {
			agent = pa.state
		}
		msg := in.msg
		if id := facts.SubagentSessionID; in.route.Hook == "subagentStop" && id != "" {
			sub, err := w.subagent(ctx, rs, in.route, id, sessions)
			if err != nil {
				return err
			}
			msg.Subagent = sub
		}
		out, err := w.decide(rs, p.state, agent, in, msg)
		if err != nil {
			return err
		}
		if out.Skipped {
			w.stats.Skipped.Add(1)
			continue
		}
		// Sealed before any effect is taken up: an outcome that cannot be
		// signed fails the batch, and nothing of it is published unsigned.
		sealed, err := w.seal(in, &out)
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
			spawned = append(spawned, out.Spawned)
		}
		w.noteDecision(in, &out)
		if out.Refusal != nil {
			p.out = append(p.out, w.deadLetter(in, out))
		}
		// Alerts go out before their decision, so that a session's
		// publications end with a decision: finding that decision stored
		// tells a later load that the whole outbox went out (flushOutbox).
		for i, a := range out.Alerts {
			p.out = append(p.out, w.alertMsg(a, sealed.Alerts[i], in.msg.Seq))
		}
		if out.Response != nil {
			p.out = append(p.out, w.decisionMsg(in, out, sealed))
		}
	}
	// Agents are shared across partitions, so their counts are made
	// durable before any decision that depends on them is published: a lost
	// race re-decides the batch with nothing out yet, and an envelope
	// decided again after a crash is not counted twice (Agent.Applied).
	conflict := false
	for key, pa := range agents {
		if !pa.dirty {
			continue
		}
		rev, err := w.store.SaveAgent(ctx, pa.state, pa.rev)
		if errors.Is(err, statestore.ErrConflict) {
			w.agents.drop(key)
			conflict = true
			continue
		}
		if err != nil {
			return err
		}
		w.agents.put(cached[turnstate.Agent]{key: key, state: pa.state, rev: rev})
	}
	if conflict {
		return errConflict
	}
	// A subagent's first state (its link to the spawning turn) is created
	// before the spawning session's write: once that write is stored the
	// spawn is applied and would not be made again after a crash. Creating
	// it is idempotent, and the same from any instance.
	for _, s := range spawned {
		created, err := w.store.CreateIfAbsent(ctx, s)
		if err != nil {
			return err
		}
		if created {
			w.cache.drop(s.Key())
		}
	}
	// Every touched session is written once, all writes in flight
	// together, each with what it is about to publish.
	var keys []string
	var saves []*nats.Msg
	written := time.Now().UTC()
	for key, p := range sessions {
		if !p.dirty && len(p.out) == 0 {
			continue
		}
		if p.state == nil {
			// Nothing stored to fence with: refusals in a session that
			// does not exist. If another instance created it meanwhile,
			// they were decided from a stale "none" and are decided again.
			s, _, _, err := w.store.Load(ctx, key)
			var ie *statestore.IntegrityError
			if err != nil && !errors.As(err, &ie) {
				return err
			}
			// A deleted value's marker is no session created meanwhile.
			if s != nil || ie != nil && ie.Reason != turnstate.ReasonDeleted {
				w.cache.drop(key)
				conflict = true
				continue
			}
			direct = append(direct, p.out...)
			continue
		}
		if len(p.out) > 0 {
			if len(ins) > 1 && outboxSize(p.out) > w.maxOutbox() {
				return fmt.Errorf("session %s in a batch of %d: %w", key, len(ins), errOutboxTooLarge)
			}
			p.outbox = &statestore.Outbox{Written: written, Msgs: publications(p.out)}
		}
		m, err := w.store.SaveMsg(p.state, p.outbox, p.rev)
		if err != nil {
			return err
		}
		if size, limit := len(m.Data)+msghdr.Size(m.Header), w.maxValue(); size > limit {
			return fmt.Errorf("session %s: %d bytes, limit %d: %w", key, size, limit, errStateTooLarge)
		}
		keys = append(keys, key)
		saves = append(saves, m)
	}
	acks, err := w.publish(ctx, saves)
	if err != nil {
		return err
	}
	outboxes := [][]*nats.Msg{direct}
	var saved []string
	for i, key := range keys {
		if acks[i].err != nil {
			if !statestore.IsConflict(acks[i].err) {
				return fmt.Errorf("save session %s: %w", key, acks[i].err)
			}
			// Its decisions were made from a stale state: they are
			// dropped unpublished and made again from the new one.
			w.log.Warn().Str("session", key).Msg("session state changed underneath; re-reading it")
			w.cache.drop(key)
			conflict = true
			continue
		}
		p := sessions[key]
		w.cache.put(cached[turnstate.Session]{key: key, state: p.state, rev: acks[i].seq, outbox: p.outbox})
		outboxes = append(outboxes, p.out)
		saved = append(saved, key)
	}
	if err := w.publishOutboxes(ctx, outboxes...); err != nil {
		return err
	}
	for _, key := range saved {
		w.cache.published(key)
	}
	if conflict {
		return errConflict
	}
	w.stats.Processed.Add(uint64(len(ins)))
	w.report(len(ins))
	return nil
}
