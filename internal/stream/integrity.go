package stream

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/internal/opsalert"
	"github.com/turnguard/turnguard/internal/statestore"
)

// Operational alert ids of the state bucket's integrity checks.
const (
	// AlertStateIntegrity: a stored session or agent state did not verify.
	AlertStateIntegrity = "state_integrity_failed"
	// AlertOutboxRefused: a verified outbox held a publication to a subject
	// that is not one of turnguard's outputs.
	AlertOutboxRefused = "outbox_subject_refused"
	// AlertMemberRejected is a record in acs.MembersBucket that no processor
	// holding the state key wrote: a fake member, which is left out of
	// the member set.
	AlertMemberRejected = "member_record_rejected"
)

// ReasonPurged is the integrity failure of a session with no stored state,
// no delete marker and no stored decision whose envelopes ACS_HOOKS still
// holds: its state and decisions were purged through the stream API.
const ReasonPurged = "purged"

// ReasonStateUnverifiable is the refusal reason of steps of a session whose
// stored state did not verify and whose history is no longer in ACS_HOOKS.
const ReasonStateUnverifiable = "state_unverifiable"

// What was done about a value that did not verify (the alert's "action").
const (
	actionRebuilt = "rebuilt_from_stream"
	actionReset   = "reset"
	actionRefused = "steps_refused"
	// actionStartedAfresh: a deleted session without history to rebuild
	// it from starts with no state.
	actionStartedAfresh = "started_afresh"
)

// errHistoryGone marks a rebuild that cannot be trusted: ACS_HOOKS lost
// messages (limits, deletes) and what is left of the session does not start
// with its sessionStart.
var errHistoryGone = errors.New("the session's history is no longer complete in " + acs.HooksStream)

// unverifiedSession handles a session whose stored value did not verify:
// nothing of the value is used, its outbox least of all. The session is
// rebuilt from ACS_HOOKS — its envelopes before in, decided again by the
// same core — and the batch continues from that state, which is written with
// the compare-and-set fence against the value's revision. When the history
// is gone it returns a state that refuses the session's steps instead.
func (w *worker) unverifiedSession(ctx context.Context, ie *statestore.IntegrityError, in *inbound) (cached[turnstate.Session], error) {
	w.stats.IntegrityFailures.Add(1)
	w.log.Error().Str("tenant", in.route.Tenant).Str("session", in.route.SessionID).Uint64("revision", ie.Revision).
		Str("reason", ie.Reason).Msg("stored session state does not verify; its contents and outbox are ignored")
	c := cached[turnstate.Session]{key: ie.Key, rev: ie.Revision}
	s, err := w.rebuild(ctx, in.route, in.msg.Seq)
	switch {
	case errors.Is(err, errHistoryGone) && ie.Reason == turnstate.ReasonDeleted:
		// Deleting the key is also how an operator clears a session that
		// could not be rebuilt (below): with no history to rebuild from,
		// the session starts afresh, said loudly.
		w.log.Error().Str("session", ie.Key).Err(err).Msg("the deleted session cannot be rebuilt; it starts afresh")
		w.cache.put(c)
		return c, w.integrityAlert(ctx, ie, actionStartedAfresh, in.msg.Seq)
	case errors.Is(err, errHistoryGone):
		// Failing closed: without a trustworthy state nothing of the
		// session is decided. Nothing is cached, so every batch checks
		// again; deleting the key (an operator's call) starts it afresh.
		w.stats.Unverifiable.Add(1)
		w.log.Error().Str("session", ie.Key).Err(err).Msg("the session cannot be rebuilt; its steps are refused")
		c.refuse = &acs.Error{Code: acs.CodeInternalError, Reason: ReasonStateUnverifiable,
			Message: "the session's stored state failed its integrity check and its history is no longer available to rebuild it; the step was not decided"}
		return c, w.integrityAlert(ctx, ie, actionRefused, in.msg.Seq)
	case err != nil:
		return c, fmt.Errorf("rebuild session %s: %w", ie.Key, err)
	}
	if err := w.integrityAlert(ctx, ie, actionRebuilt, in.msg.Seq); err != nil {
		return c, err
	}
	w.stats.Rebuilt.Add(1)
	w.log.Warn().Str("session", ie.Key).Uint64("last_seq", s.LastSeq).Uint64("envelopes", s.Envelopes).Msg("session rebuilt from the stream")
	c.state, c.rebuilt = s, true
	w.cache.put(c)
	return c, nil
}

// missingSession handles a session with no stored value and no marker but
// with stored decisions: the whole bucket was purged, or the session's
// value expired and it came back. It is rebuilt from the stream, as a
// tampered one is, but not alerted (expiry is routine); with its history
// gone it starts afresh.
func (w *worker) missingSession(ctx context.Context, key string, rev uint64, in *inbound) (cached[turnstate.Session], error) {
	c := cached[turnstate.Session]{key: key, rev: rev}
	s, err := w.rebuild(ctx, in.route, in.msg.Seq)
	switch {
	case errors.Is(err, errHistoryGone):
		w.log.Warn().Str("session", key).Msg("session state missing and its history incomplete; it starts afresh")
	case err != nil:
		return c, fmt.Errorf("rebuild session %s: %w", key, err)
	default:
		w.stats.Rebuilt.Add(1)
		w.log.Warn().Str("session", key).Uint64("last_seq", s.LastSeq).Msg("session state missing though its decisions are stored (bucket purged, or expired); rebuilt from the stream")
		c.state, c.rebuilt = s, true
	}
	w.cache.put(c)
	return c, nil
}

// unverifiedAgent handles an agent state that did not verify: it is reset
// to an agent with nothing counted, written over the value's revision.
// Rebuilding it would mean re-reading every session of the agent in every
// partition; a reset loses at most one window of counts, and is alerted.
func (w *worker) unverifiedAgent(ctx context.Context, ie *statestore.IntegrityError, seq uint64) (cached[turnstate.Agent], error) {
	w.stats.IntegrityFailures.Add(1)
	w.log.Error().Str("agent_key", ie.Key).Uint64("revision", ie.Revision).Str("reason", ie.Reason).
		Msg("stored agent state does not verify; it is reset")
	return cached[turnstate.Agent]{key: ie.Key, rev: ie.Revision, rebuilt: true}, w.integrityAlert(ctx, ie, actionReset, seq)
}

// rebuild decides the session's recorded envelopes before upper again, with
// the sessions that spawned it (a subagent's state starts from its parent's
// subagentStart), through the same core and the current rules, as replay
// does. A session with no envelopes before upper is returned new.
func (w *worker) rebuild(ctx context.Context, route acs.Route, upper uint64) (*turnstate.Session, error) {
	info, err := w.hooks.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("stream %s info: %w", acs.HooksStream, err)
	}
	// Complete unless the stream dropped or deleted messages.
	lost := info.State.FirstSeq > 1 || info.State.NumDeleted > 0
	key := route.SessionKey()
	links, err := w.spawnLinks(ctx, route.Tenant, upper)
	if err != nil {
		return nil, err
	}
	var filters []string
	// The chain: the session and every session that spawned it or one of
	// its spawners — a subagent spawned again (resumed) takes the live
	// taints of each spawn, not only of the first.
	chain := map[string]bool{key: true}
	for todo := []string{key}; len(todo) > 0; todo = todo[1:] {
		k := todo[0]
		tenant, id, _ := strings.Cut(k, ".")
		filters = append(filters, acs.StoredFilter(tenant, id, "*"))
		for _, parent := range links[k] {
			if !chain[parent] {
				chain[parent] = true
				todo = append(todo, parent)
			}
		}
	}
	// A subagent's taint reaches its parent at subagentStop (the rules'
	// subagent variable), and a subagent takes the taints of every
	// session that spawns it: the rest of the session's connected spawn
	// graph is decided too (as replay decides it), not only what the
	// chain spawned — a subagent the session spawned and another session
	// resumed brings that one's taint back. Those sessions are not checked
	// for completeness below: only the chain's own states are rebuilt.
	for _, k := range slices.Sorted(maps.Keys(turnstate.SpawnConnected(chain, links))) {
		if !chain[k] {
			tenant, id, _ := strings.Cut(k, ".")
			filters = append(filters, acs.StoredFilter(tenant, id, "*"))
		}
	}
	mem := guardian.NewMemory()
	rs := w.rules.Current()
	first := map[string]string{}
	err = w.history(ctx, filters, upper, func(subject string, data []byte, h nats.Header, seq uint64, ts time.Time) {
		r, err := acs.ParsePartitioned(subject)
		if err != nil {
			return
		}
		if _, ok := first[r.SessionKey()]; !ok {
			first[r.SessionKey()] = r.Hook
		}
		mem.Decide(w.guardian, rs, r, guardian.Message{Subject: subject, Data: data, Seq: seq, Time: ts, Caller: w.callerOf(subject, data, h), MsgID: h.Get(acs.HdrMsgID)})
	})
	if err != nil {
		return nil, err
	}
	if lost {
		for k := range chain {
			if first[k] != "sessionStart" {
				return nil, fmt.Errorf("%s (first sequence %d, %d deleted; %s starts with %q): %w",
					acs.HooksStream, info.State.FirstSeq, info.State.NumDeleted, k, first[k], errHistoryGone)
			}
		}
	}
	if s := mem.Sessions[key]; s != nil {
		return s, nil
	}
	return turnstate.New(route.Tenant, route.SessionID), nil
}

// spawnLinks maps each subagent session of tenant announced before upper
// to the sessions that announced it, in stream order: the first is the one
// it is linked to (as in the state bucket), a later one gave it the taints
// live at its spawn (turnstate.Session.Adopt).
func (w *worker) spawnLinks(ctx context.Context, tenant string, upper uint64) (map[string][]string, error) {
	links := map[string][]string{}
	err := w.history(ctx, []string{acs.StoredFilter(tenant, "*", "subagentStart")}, upper, func(subject string, data []byte, _ nats.Header, _ uint64, _ time.Time) {
		r, err := acs.ParsePartitioned(subject)
		if err != nil {
			return
		}
		id := guardian.SubagentSessionID(data)
		if id == "" {
			return
		}
		child := acs.SessionKey(tenant, id)
		turnstate.AddSpawnLink(links, child, r.SessionKey())
	})
	return links, err
}

// history calls fn for each message of ACS_HOOKS matching filters stored
// before upper, in stream order.
func (w *worker) history(ctx context.Context, filters []string, upper uint64, fn func(subject string, data []byte, h nats.Header, seq uint64, ts time.Time)) error {
	c, err := w.js.OrderedConsumer(ctx, acs.HooksStream, jetstream.OrderedConsumerConfig{FilterSubjects: filters, DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return fmt.Errorf("read %s history: %w", acs.HooksStream, err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		return fmt.Errorf("read %s history: %w", acs.HooksStream, err)
	}
	if info.NumPending == 0 {
		return nil
	}
	it, err := c.Messages(jetstream.PullMaxMessages(256))
	if err != nil {
		return fmt.Errorf("read %s history: %w", acs.HooksStream, err)
	}
	defer it.Stop()
	for {
		m, err := it.Next(jetstream.NextMaxWait(5 * time.Second))
		if err != nil {
			return fmt.Errorf("read %s history: %w", acs.HooksStream, err)
		}
		md, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("read %s history: %w", acs.HooksStream, err)
		}
		if md.Sequence.Stream >= upper {
			return nil
		}
		fn(m.Subject(), m.Data(), m.Headers(), md.Sequence.Stream, md.Timestamp)
		if md.NumPending == 0 {
			return nil
		}
	}
}

// integrityAlert publishes the critical operational alert of a value that
// did not verify. It names the key, tenant, session and revision, never the
// value's contents, which may be an attacker's. Its Nats-Msg-Id makes the
// alert of one revision one message however often it is found.
func (w *worker) integrityAlert(ctx context.Context, ie *statestore.IntegrityError, action string, seq uint64) error {
	tenant, id, _ := strings.Cut(ie.Key, ".")
	details := map[string]any{"kind": ie.Kind, "key": ie.Key, "tenant": tenant, "revision": ie.Revision,
		"reason": ie.Reason, "action": action, "bucket": acs.StateBucket, "stream_seq": seq}
	if ie.Kind == turnstate.KindSession {
		details["session_id"] = id
	}
	msg := fmt.Sprintf("the stored %s state %s at revision %d failed its integrity check (%s): it was not written by a processor holding the state key for this key; action: %s",
		ie.Kind, ie.Key, ie.Revision, ie.Reason, action)
	if ie.Reason == ReasonPurged {
		msg = fmt.Sprintf("the %s state %s and its decisions are gone while %s holds its envelopes: they were purged (%v); action: %s",
			ie.Kind, ie.Key, acs.HooksStream, ie.Err, action)
	}
	return w.operationalAlert(ctx, AlertStateIntegrity, "State integrity check failed", msg,
		AlertStateIntegrity+":"+ie.Key+":"+strconv.FormatUint(ie.Revision, 10), details)
}

func (w *worker) operationalAlert(ctx context.Context, id, title, msg, msgID string, details map[string]any) error {
	return opsalert.Publish(ctx, w.js, w.guardian.Receipts(), opsalert.Alert{ID: id, Severity: "critical", Title: title, Message: msg, MsgID: msgID, Details: details})
}

// allowedOutbox keeps the publications of a verified outbox that go where a
// processor writing key's state publishes: the session's decision subject,
// an alert or a dead letter of its tenant (alert.SystemTenant for
// turnguard's own). Everything else is dropped, counted and alerted: a valid
// MAC on it means a processor bug or a leaked state key, and either way
// turnguard must not relay it.
func (w *worker) allowedOutbox(ctx context.Context, key string, rev uint64, msgs []*nats.Msg) ([]*nats.Msg, error) {
	tenant, id, _ := strings.Cut(key, ".")
	kept := msgs[:0:0]
	var refused []string
	for _, m := range msgs {
		if ownOutput(m.Subject, tenant, id) {
			kept = append(kept, m)
			continue
		}
		refused = append(refused, m.Subject)
	}
	if len(refused) == 0 {
		return msgs, nil
	}
	w.stats.OutboxRefused.Add(uint64(len(refused)))
	w.log.Error().Str("session", key).Uint64("revision", rev).Strs("subjects", refused).
		Msg("outbox publications to subjects that are not turnguard's outputs were not published")
	msg := fmt.Sprintf("the outbox of session %s at revision %d held %d publication(s) to subjects that are not turnguard's outputs; they were not published",
		key, rev, len(refused))
	err := w.operationalAlert(ctx, AlertOutboxRefused, "Outbox publication refused", msg,
		AlertOutboxRefused+":"+key+":"+strconv.FormatUint(rev, 10),
		map[string]any{"key": key, "tenant": tenant, "session_id": id, "revision": rev, "subjects": refused, "bucket": acs.StateBucket})
	return kept, err
}

// ownOutput reports whether subject is one a processor publishes for a
// session of tenant with id: under turnguard's output prefixes, and within
// the session's tenant (its own decision subject for decisions).
func ownOutput(subject, tenant, id string) bool {
	if !acs.IsOutputSubject(subject) {
		return false
	}
	switch {
	case strings.HasPrefix(subject, acs.DecisionsPrefix+"."):
		return subject == acs.DecisionSubject(tenant, id)
	case strings.HasPrefix(subject, acs.AlertsPrefix+"."):
		return strings.HasPrefix(subject, acs.AlertsPrefix+"."+tenant+".")
	default:
		return subject == acs.DLQSubject(tenant)
	}
}

// rolledBack reports a verified session value that is older than what was
// already published for the session: a valid earlier value put back under
// its key (the MAC proves who wrote a value, not when). Every decision is
// published only after the write whose outbox holds it is stored, so the
// current value accounts for every stored decision — its own envelopes up
// to LastSeq, or its outbox (refusals leave LastSeq alone). last is the
// sequence the session's newest stored decision answers.
func rolledBack(key string, rev uint64, s *turnstate.Session, out *statestore.Outbox, last newest) *statestore.IntegrityError {
	accounted := accountedFor(s, out)
	if last.mustAccount() <= accounted {
		return nil
	}
	return &statestore.IntegrityError{Kind: turnstate.KindSession, Key: key, Revision: rev, Reason: turnstate.ReasonRolledBack,
		Err: fmt.Errorf("the value accounts for envelopes up to sequence %d, but the session's decision of sequence %d is stored", accounted, last.seq)}
}

// accountedFor is the stream sequence a stored session value accounts for:
// its own envelopes up to LastSeq, and the decisions of its outbox
// (refusals leave LastSeq alone).
func accountedFor(s *turnstate.Session, out *statestore.Outbox) uint64 {
	accounted := s.LastSeq
	if out != nil {
		own := acs.DecisionSubject(s.Tenant, s.SessionID)
		for _, p := range out.Msgs {
			if p.Subject == own {
				if seq, err := strconv.ParseUint(p.Header.Get(acs.HdrStreamSeq), 10, 64); err == nil {
					accounted = max(accounted, seq)
				}
			}
		}
	}
	return accounted
}

// newest is what the session's newest stored decision says (lastDecision).
type newest struct {
	// seq is the stream sequence it answers (0: none stored).
	seq uint64
	// stateless is set for a refusal published without a state write (an
	// isolated envelope); accounted is then what the state accounted for
	// when it was refused.
	stateless bool
	accounted uint64
}

// mustAccount is the stream sequence the session's stored value must
// account for: the newest decision's, unless that decision changed no
// state, when it is what the state accounted for then.
func (n newest) mustAccount() uint64 {
	if n.stateless {
		return n.accounted
	}
	return n.seq
}
