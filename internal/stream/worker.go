package stream

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/acs"
	"github.com/turnguard/turnguard/internal/guardian"
	"github.com/turnguard/turnguard/internal/msghdr"
	"github.com/turnguard/turnguard/internal/rules"
	"github.com/turnguard/turnguard/internal/statestore"
	"github.com/turnguard/turnguard/internal/turnstate"
)

// attemptTimeout bounds one attempt at making a batch's effects durable.
const attemptTimeout = 10 * time.Second

// errConflict marks an attempt that lost a KV revision race; the batch is
// decided again against the re-read state.
var errConflict = errors.New("session state changed underneath the batch")

// errRestart ends a worker's run so that its supervisor starts it again at
// once: its consumer was recreated (repair.go).
var errRestart = errors.New("restart requested")

// errOutboxTooLarge marks a batch whose publications for one session
// would not fit in one state write; it is split and applied in halves.
var errOutboxTooLarge = errors.New("a session's outbox would exceed the server's max_payload")

// maxOutbox is the most bytes of publications one state write carries:
// half the server's max_payload, leaving room for the state itself.
func (w *worker) maxOutbox() int {
	if limit := w.js.Conn().MaxPayload(); limit > 0 {
		return int(limit / 2)
	}
	return 512 << 10
}

// outboxSize estimates the encoded size of msgs in a state write: bodies
// grow by a third in base64.
func outboxSize(msgs []*nats.Msg) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Subject) + msghdr.Size(m.Header) + (len(m.Data)+2)/3*4 + 64
	}
	return n
}

// inbound is one message of the hooks stream on its way through a worker.
type inbound struct {
	msg      guardian.Message
	route    acs.Route
	routeErr error
	header   nats.Header
	// js is the delivery to acknowledge; nil for messages read straight
	// from the stream during recovery (their delivery is acked when the
	// server redelivers them and they are found already applied).
	js jetstream.Msg
}

// worker owns one consumer of ACS_HOOKS and processes its messages in
// stream order, one batch at a time: decide every message, save every
// touched session with compare-and-set together with what it publishes,
// publish that, and only then acknowledge the batch.
type worker struct {
	consumer string
	filter   string
	// routed is false for the worker of malformed subjects, whose messages
	// can only be dead-lettered.
	routed bool

	cons      jetstream.Consumer
	hooks     jetstream.Stream
	decisions jetstream.Stream
	js        jetstream.JetStream
	store     *statestore.Store
	guardian  *guardian.Guardian
	rules     *rules.Source
	cache     *stateCache[turnstate.Session]
	agents    *stateCache[turnstate.Agent]
	stats     *Stats
	log       zerolog.Logger

	batchSize int
	// maxValueBytes bounds a session's stored value (Config.MaxValueBytes).
	maxValueBytes int
	ackWait       time.Duration
	// pinnedTTL bounds the pull requests' expiry: the pinned client must
	// ask again within it or lose the partition.
	pinnedTTL time.Duration
	// pin is the id the server pinned this worker's consumer to, learnt
	// from the deliveries; empty until the first one.
	pin atomic.Pointer[string]
	// kick asks the worker to recover from the ack floor (a dead
	// instance's pin was released); restart to consume afresh (its
	// consumer was recreated).
	kick, restart chan struct{}
	// wake cuts short the pause before a batch's next attempt: what it
	// failed on was just recreated.
	wake chan struct{}
	// seen is the highest ACS_HOOKS sequence any worker of the process
	// has read, which a recreated ACS_HOOKS must number above.
	seen *atomic.Uint64
	// receiptKey names the key receipts are signed with.
	receiptKey string
	// health is the failure streak of the worker's batches and restarts;
	// consumerHealth that of its consumer (gone from the server). Both
	// count for readiness.
	health, consumerHealth health
	// suspect is set by a consume error: the ownership loop then checks
	// whether the consumer still exists.
	suspect atomic.Bool
	// lastConsumerSeq is the consumer sequence of the last delivery seen;
	// deliveries are numbered without gaps, so a gap means deliveries were
	// lost in transit (or went to another instance) and must be read back
	// from the stream first.
	lastConsumerSeq uint64
	// applied is the stream sequence up to which every message of the
	// partition is known applied since the worker started: a redelivery
	// above it may have left older, unapplied ones behind.
	applied uint64
	// sawFresh is set by the first first-time delivery since the start or
	// since a delivery gap; messages below it may still be pending at an
	// earlier holder.
	sawFresh bool
	// onPinned is told when the server pins this worker.
	onPinned func()
	// obs is told what each batch made durable (nil: nothing is noted);
	// notes is what the batch attempt in hand will tell it.
	obs   Observer
	notes []noted
}

// pinID is the pin the server gave this worker, or "".
func (w *worker) pinID() string {
	if p := w.pin.Load(); p != nil {
		return *p
	}
	return ""
}

// notePin learns the pin the server gave this worker from a delivery.
func (w *worker) notePin(m jetstream.Msg) {
	if pin := m.Headers().Get(hdrPinID); pin != "" && pin != w.pinID() {
		w.pin.Store(&pin)
		if w.onPinned != nil {
			w.onPinned()
		}
	}
}

// recoverSoon has the worker recover from the ack floor before its next
// batch.
func (w *worker) recoverSoon() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// wakeSoon has a worker pausing before its batch's next attempt try at
// once.
func (w *worker) wakeSoon() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// pause waits d, or less if woken; it reports false when ctx ended.
func (w *worker) pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-w.wake:
	case <-t.C:
	}
	return true
}

// restartSoon has the worker stop consuming and start again.
func (w *worker) restartSoon() {
	select {
	case w.restart <- struct{}{}:
	default:
	}
}

// supervise runs the worker until ctx ends, restarting it after failures.
// A start recovers from the ack floor at once when eager (nobody else can
// be working on the partition), else with its first delivery; restarts
// always do. A closed connection will not come back: it stops the whole
// processor.
func (w *worker) supervise(ctx context.Context, fatal context.CancelCauseFunc, eager bool) {
	backoff := 100 * time.Millisecond
	for {
		err := w.run(ctx, eager)
		eager = true
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, nats.ErrConnectionClosed) {
			fatal(fmt.Errorf("%s: %w", w.consumer, err))
			return
		}
		if errors.Is(err, errRestart) {
			w.log.Info().Msg("partition worker restarting on its recreated consumer")
			continue
		}
		w.health.failing(err)
		w.log.Error().Err(err).Dur("retry_in", backoff).Msg("partition worker failed; restarting")
		if !sleep(ctx, backoff) {
			return
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

func (w *worker) run(ctx context.Context, eager bool) error {
	w.lastConsumerSeq, w.applied, w.sawFresh = 0, 0, false
	w.pin.Store(nil)
	if eager {
		if err := w.recover(ctx, 0); err != nil {
			return fmt.Errorf("recover %s: %w", w.consumer, err)
		}
	}
	deliveries := make(chan jetstream.Msg, w.batchSize)
	opts := []jetstream.PullConsumeOpt{jetstream.PullMaxMessages(w.batchSize), jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		if !errors.Is(err, jetstream.ErrPinIDMismatch) {
			if persistentConsumeError(err) {
				w.consumerHealth.failing(fmt.Errorf("consume %s: %w", w.consumer, err))
			}
			// Whatever it was (a deleted consumer can also show as "no
			// responders" or missed heartbeats), the next ownership
			// tick asks the server whether the consumer exists.
			w.suspect.Store(true)
			w.log.Warn().Err(err).Msg("consume")
			return
		}
		// Another instance was pinned: stop believing this one is.
		w.pin.Store(nil)
		w.log.Info().Msg("the partition was pinned to another instance")
	})}
	if w.routed {
		// Ask again well within PinnedTTL, or an idle owner loses the pin.
		opts = append(opts, jetstream.PullPriorityGroup(acs.PartitionGroup), jetstream.PullExpiry(max(w.pinnedTTL/3, time.Second)))
	}
	// Deliveries held when the worker stops are handed back with a Nak, in
	// stream order, so the partition's next holder gets them at once
	// instead of after the ack wait. The callback runs serially: whatever
	// it sets aside after stopping closed came after all it queued.
	stopping := make(chan struct{})
	var lateMu sync.Mutex
	var late []jetstream.Msg
	setAside := func(m jetstream.Msg) {
		lateMu.Lock()
		late = append(late, m)
		lateMu.Unlock()
	}
	cc, err := w.cons.Consume(func(m jetstream.Msg) {
		// The pin is noted as the delivery arrives, not when its batch is
		// handled: a busy worker must not look unpinned to its own
		// instance, which would take its pin for a dead one's.
		w.notePin(m)
		select {
		case <-stopping:
			setAside(m)
			return
		default:
		}
		select {
		case deliveries <- m:
		case <-stopping:
			setAside(m)
		}
	}, opts...)
	if err != nil {
		return fmt.Errorf("consume %s: %w", w.consumer, err)
	}
	w.health.healthy()
	defer func() {
		close(stopping)
		cc.Drain()
		select {
		case <-cc.Closed():
		case <-time.After(5 * time.Second):
			cc.Stop()
		}
		for {
			select {
			case m := <-deliveries:
				_ = m.Nak()
				continue
			default:
			}
			break
		}
		lateMu.Lock()
		defer lateMu.Unlock()
		for _, m := range late {
			_ = m.Nak()
		}
	}()
	for {
		var batch []jetstream.Msg
		select {
		case <-ctx.Done():
			return nil
		case <-w.kick:
			if err := w.recover(ctx, 0); err != nil {
				return fmt.Errorf("recover %s: %w", w.consumer, err)
			}
			continue
		case <-w.restart:
			return errRestart
		case m := <-deliveries:
			batch = append(batch, m)
		}
	fill:
		for len(batch) < w.batchSize {
			select {
			case m := <-deliveries:
				batch = append(batch, m)
			default:
				break fill
			}
		}
		if err := w.handle(ctx, batch); err != nil {
			return err
		}
	}
}

// handle processes one batch of deliveries, first reading back from the
// stream anything a gap in the delivery numbering says was lost.
func (w *worker) handle(ctx context.Context, batch []jetstream.Msg) error {
	ins := make([]inbound, 0, len(batch))
	// high is the sequence up to which the partition is applied once the
	// batch in hand is.
	high := w.applied
	for _, m := range batch {
		md, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("delivery without JetStream metadata on %s: %w", m.Subject(), err)
		}
		fresh := md.NumDelivered == 1
		gap := w.lastConsumerSeq != 0 && md.Sequence.Consumer != w.lastConsumerSeq+1
		if gap {
			// Someone else held the partition meanwhile (or the
			// deliveries were lost). What it still holds unacknowledged
			// lies below the next fresh delivery, not only below this
			// one, which may be a message handed back: the next fresh
			// delivery recovers below itself again, as a first one does.
			w.sawFresh = false
		}
		var why string
		switch {
		case gap:
			why = "delivery gap"
		case fresh && !w.sawFresh:
			// The first new message given to this worker: anything below
			// it may have been delivered to an earlier holder.
			why = "first delivery"
		case !fresh && md.Sequence.Stream > high:
			// A redelivery overtaking: what was pending below it comes
			// first, or a later envelope would make it look applied.
			next, err := w.firstFrom(ctx, high+1)
			if err != nil {
				return err
			}
			if next < md.Sequence.Stream {
				why = "redelivery"
			}
		}
		w.sawFresh = w.sawFresh || fresh
		if why != "" {
			if why == "delivery gap" {
				w.log.Warn().Uint64("expected", w.lastConsumerSeq+1).Uint64("got", md.Sequence.Consumer).Msg("delivery gap; reading the missing messages from the stream")
			}
			if err := w.process(ctx, ins); err != nil {
				return err
			}
			ins = ins[:0]
			if err := w.recoverBelow(ctx, md.Sequence.Stream); err != nil {
				return fmt.Errorf("recover before seq %d (%s): %w", md.Sequence.Stream, why, err)
			}
			high = w.applied
		}
		w.lastConsumerSeq = md.Sequence.Consumer
		ins = append(ins, w.inbound(m.Subject(), m.Data(), m.Headers(), md.Sequence.Stream, md.Timestamp, m))
		high = max(high, md.Sequence.Stream)
	}
	return w.process(ctx, ins)
}

// recoverBelow recovers up to the message before seq. (recover's upper 0
// means "the last delivered", which below seq 1 would wrongly be.)
func (w *worker) recoverBelow(ctx context.Context, seq uint64) error {
	if seq <= 1 {
		return nil
	}
	return w.recover(ctx, seq-1)
}

// recover processes, in stream order, every message of this worker's filter
// from the consumer's ack floor up to upper (0: the last delivered one).
// These are the messages whose effects may or may not have happened: those
// already applied are skipped, the rest are decided now, before anything
// newer. Their deliveries are acknowledged when the server redelivers them.
func (w *worker) recover(ctx context.Context, upper uint64) error {
	info, err := w.cons.Info(ctx)
	if err != nil {
		return err
	}
	if upper == 0 {
		upper = info.Delivered.Stream
	}
	from := max(info.AckFloor.Stream, w.applied) + 1
	if from > upper {
		w.applied = max(w.applied, upper)
		return nil
	}
	// Routine after every restart (a clean stop hands its held deliveries
	// back): Stats.Recovered counts them for the operator.
	w.log.Debug().Uint64("from_seq", from).Uint64("to_seq", upper).Msg("recovering unacknowledged messages from the stream")
	var ins []inbound
	for seq := from; seq <= upper; {
		raw, err := w.hooks.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(w.filter))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return fmt.Errorf("read %s from seq %d: %w", w.filter, seq, err)
		}
		if raw.Sequence > upper {
			break
		}
		ins = append(ins, w.inbound(raw.Subject, raw.Data, raw.Header, raw.Sequence, raw.Time, nil))
		w.stats.Recovered.Add(1)
		if len(ins) == w.batchSize {
			if err := w.process(ctx, ins); err != nil {
				return err
			}
			ins = nil
		}
		seq = raw.Sequence + 1
	}
	if err := w.process(ctx, ins); err != nil {
		return err
	}
	w.applied = max(w.applied, upper)
	return nil
}

// firstFrom is the stream sequence of the partition's first message at or
// after seq (MaxUint64: none).
func (w *worker) firstFrom(ctx context.Context, seq uint64) (uint64, error) {
	raw, err := w.hooks.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(w.filter))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return math.MaxUint64, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read %s from seq %d: %w", w.filter, seq, err)
	}
	return raw.Sequence, nil
}

func (w *worker) inbound(subject string, data []byte, h nats.Header, seq uint64, ts time.Time, m jetstream.Msg) inbound {
	for old := w.seen.Load(); seq > old && !w.seen.CompareAndSwap(old, seq); old = w.seen.Load() {
	}
	in := inbound{msg: guardian.Message{Subject: subject, Data: data, Seq: seq, Time: ts}, header: h, js: m}
	if w.routed {
		in.route, in.routeErr = acs.ParsePartitioned(subject)
	} else {
		in.routeErr = fmt.Errorf("subject %q is not %s.<tenant>.<session_id>.<hook>", subject, acs.InboundPrefix)
	}
	return in
}

// process makes a batch's effects durable, retrying until they are or ctx
// ends, then acknowledges the batch. The messages stay in hand the whole
// time, so nothing newer of the partition can overtake them.
func (w *worker) process(ctx context.Context, ins []inbound) error {
	if len(ins) == 0 {
		return nil
	}
	backoff := 100 * time.Millisecond
	lastProgress := time.Now()
	conflicts := 0
	for {
		err := w.apply(ctx, ins)
		if err == nil {
			w.health.healthy()
			break
		}
		if (errors.Is(err, errOutboxTooLarge) || permanent(err)) && len(ins) > 1 {
			// Nothing of the failing session was saved or published: the
			// halves go one after the other, in order, each with an
			// outbox that fits, until an envelope that cannot be applied
			// stands alone.
			half := len(ins) / 2
			if err := w.process(ctx, ins[:half]); err != nil {
				return err
			}
			return w.process(ctx, ins[half:])
		}
		if permanent(err) {
			if err = w.isolate(ctx, &ins[0], err); err == nil {
				w.health.healthy()
				break
			}
		}
		if errors.Is(err, errConflict) {
			// Re-decide at once against the re-read state; only a writer
			// that keeps winning (another instance on this partition)
			// earns a pause.
			w.stats.Conflicts.Add(1)
			if conflicts++; conflicts <= 3 {
				continue
			}
		}
		if ctx.Err() != nil || errors.Is(err, nats.ErrConnectionClosed) {
			// Shutting down, or the connection is gone for good: the
			// batch is handed back, ahead of what the worker still holds
			// (run's deferred Naks), so that whoever consumes the
			// partition next gets it now rather than after the ack wait.
			for _, in := range ins {
				if in.js != nil {
					_ = in.js.Nak()
				}
			}
			return errors.Join(err, ctx.Err())
		}
		w.stats.Retries.Add(1)
		w.health.failing(err)
		w.log.Warn().Err(err).Int("batch", len(ins)).Dur("retry_in", backoff).Msg("batch effects failed; retrying")
		if time.Since(lastProgress) > w.ackWait/3 {
			for _, in := range ins {
				if in.js != nil {
					_ = in.js.InProgress()
				}
			}
			lastProgress = time.Now()
		}
		if !w.pause(ctx, backoff) {
			return ctx.Err()
		}
		backoff = min(backoff*2, 5*time.Second)
	}
	// Applying a batch in stream order leaves its partition applied up to
	// its highest sequence (a redelivery below that was already applied).
	for _, in := range ins {
		w.applied = max(w.applied, in.msg.Seq)
	}
	for _, in := range ins {
		if in.js != nil {
			if err := in.js.Ack(); err != nil {
				w.log.Warn().Err(err).Uint64("seq", in.msg.Seq).Msg("ack")
			}
		}
	}
	return nil
}

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

// session returns the committed state of in's session, from the cache or
// the bucket. What its last write left unpublished goes out first: a
// publication of this batch must not overtake it. A stored value that does
// not verify is never used: the session is rebuilt (unverifiedSession).
func (w *worker) session(ctx context.Context, in *inbound) (cached[turnstate.Session], error) {
	key := in.route.SessionKey()
	c, ok := w.cache.get(key)
	// last is the session's newest stored decision, looked up once for the
	// rollback check and the outbox.
	var last newest
	looked := false
	if !ok {
		s, out, rev, err := w.store.Load(ctx, key)
		if ie := (*statestore.IntegrityError)(nil); errors.As(err, &ie) {
			return w.unverifiedSession(ctx, ie, in)
		}
		if err != nil {
			return c, err
		}
		if last, err = w.lastDecision(ctx, in.route); err != nil {
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

// publishOutboxes publishes outboxes so that each one's closing decision is
// stored only after the rest of it: first everything but the closing
// decisions, all in flight together, then — once all of that is stored —
// the closing decisions. Publications in flight are not stored in order
// when some fail: a stream leader that fails over loses what it had not
// committed while the next leader stores what comes after it, and a
// reconnecting connection sends what it had buffered after what it lost.
// A stored closing decision must mean the whole outbox was (flushOutbox).
func (w *worker) publishOutboxes(ctx context.Context, outboxes ...[]*nats.Msg) error {
	var body, closing []*nats.Msg
	for _, out := range outboxes {
		if n := len(out); n > 0 && strings.HasPrefix(out[n-1].Subject, acs.DecisionsPrefix+".") {
			body = append(body, out[:n-1]...)
			closing = append(closing, out[n-1])
			continue
		}
		body = append(body, out...)
	}
	if err := w.publishOutputs(ctx, body); err != nil {
		return err
	}
	return w.publishOutputs(ctx, closing)
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
// pending state when the batch touched it, else the stored one (nil when
// there is none). The subagent's session may belong to another partition,
// so this read is not ordered with the parent's stream; but a subagent
// returns only after its steps were decided, and every decision is
// published after its state is stored, so what the subagent did before it
// returned is in what this reads. A stored state that does not verify
// cannot vouch that the subagent read nothing untrusted: it reads as one
// that carries every taint label.
func (w *worker) subagent(ctx context.Context, rs *rules.Set, route acs.Route, id string, batch map[string]*pending[turnstate.Session]) (*turnstate.Session, error) {
	key := acs.SessionKey(route.Tenant, id)
	if p, ok := batch[key]; ok && p.state != nil {
		return p.state, nil
	}
	s, _, _, err := w.store.Load(ctx, key)
	if ie := (*statestore.IntegrityError)(nil); errors.As(err, &ie) {
		s = turnstate.New(route.Tenant, id)
		s.Parent = &turnstate.ParentLink{SessionID: route.SessionID}
		s.Taints = map[string]*turnstate.Taint{}
		if rs != nil {
			for _, t := range rs.Taints {
				s.Taints[t.ID] = &turnstate.Taint{}
			}
		}
		return s, nil
	}
	return s, err
}

// published is the outcome of one publication of a batch.
type published struct {
	seq uint64
	err error
}

// publish sends msgs asynchronously and waits for every acknowledgement. A
// refusal by the stream (a wrong expected sequence, say) is reported per
// message, for the caller to judge; anything else — a timeout, a lost
// connection, ctx ending — fails the whole call, since then nothing is
// known about the rest.
func (w *worker) publish(ctx context.Context, msgs []*nats.Msg) ([]published, error) {
	futures := make([]jetstream.PubAckFuture, len(msgs))
	out := make([]published, len(msgs))
	for i, m := range msgs {
		f, err := w.js.PublishMsgAsync(m)
		if err != nil {
			err = fmt.Errorf("publish to %s: %w", m.Subject, err)
			if !permanent(err) {
				return nil, err
			}
			// Too large to send: refused like a stream refuses.
			out[i].err = err
			continue
		}
		futures[i] = f
	}
	for i, f := range futures {
		if f == nil {
			continue
		}
		select {
		case ack := <-f.Ok():
			out[i].seq = ack.Sequence
		case err := <-f.Err():
			var apiErr *jetstream.APIError
			if !errors.As(err, &apiErr) {
				return nil, fmt.Errorf("publish to %s: %w", f.Msg().Subject, err)
			}
			out[i].err = err
		case <-ctx.Done():
			return nil, fmt.Errorf("publish to %s: %w", f.Msg().Subject, ctx.Err())
		}
	}
	return out, nil
}

// publishOutputs publishes a state write's decisions, alerts and dead
// letters; one the server refuses for good is dropped and alerted
// (dropUnpublishable) instead of blocking the partition.
func (w *worker) publishOutputs(ctx context.Context, msgs []*nats.Msg) error {
	err := w.publishAll(ctx, msgs)
	if err == nil || !permanent(err) {
		return err
	}
	return w.dropUnpublishable(ctx, msgs)
}

// publishAll publishes msgs and fails if any was not stored.
func (w *worker) publishAll(ctx context.Context, msgs []*nats.Msg) error {
	sent, err := w.publish(ctx, msgs)
	if err != nil {
		return err
	}
	for i, r := range sent {
		if r.err != nil {
			return fmt.Errorf("publish to %s: %w", msgs[i].Subject, r.err)
		}
	}
	return nil
}

// DecisionMsgID is the Nats-Msg-Id of the decision on the envelope at stream
// sequence seq: derived from the request id, and unique per inbound message
// so that a replayed request id gets its own (refusing) decision. An
// envelope that named no readable request id is answered under
// "decision:<seq>".
func DecisionMsgID(requestID string, seq uint64) string {
	if requestID == "" {
		requestID = "decision"
	}
	return requestID + ":" + strconv.FormatUint(seq, 10)
}

// seal is Guardian.Seal for the envelope in answers; a failure is
// permanent (errSeal): signing again fails the same way.
func (w *worker) seal(in *inbound, out *guardian.Outcome) (guardian.Sealed, error) {
	s, err := w.guardian.Seal(out, in.msg.Seq)
	if err != nil {
		return guardian.Sealed{}, fmt.Errorf("seq %d: %w", in.msg.Seq, err)
	}
	return s, nil
}

// decisionMsg is the decision out answers in with: the sealed bytes, and
// headers from the outcome's facts.
func (w *worker) decisionMsg(in *inbound, out guardian.Outcome, sealed guardian.Sealed) *nats.Msg {
	m := nats.NewMsg(acs.DecisionSubject(in.route.Tenant, in.route.SessionID))
	m.Data = sealed.Response
	if sealed.Receipt != "" {
		m.Header.Set(acs.HdrReceiptKey, w.receiptKey)
	}
	m.Header.Set(acs.HdrMsgID, DecisionMsgID(out.RequestID, in.msg.Seq))
	m.Header.Set(acs.HdrStreamSeq, strconv.FormatUint(in.msg.Seq, 10))
	m.Header.Set(acs.HdrHook, in.route.Hook)
	setIf(m.Header, acs.HdrRequestID, out.RequestID)
	setIf(m.Header, acs.HdrMethod, out.Method)
	setIf(m.Header, acs.HdrTurnID, out.TurnID)
	// The publisher's Nats-Msg-Id (its request id) correlates refusals
	// whose body named no readable request id.
	setIf(m.Header, acs.HdrOriginalMsgID, in.header.Get(acs.HdrMsgID))
	setIf(m.Header, acs.HdrReceipt, sealed.Receipt)
	if r := out.Response.Result; r != nil {
		m.Header.Set(acs.HdrDecision, string(r.Decision))
	} else {
		m.Header.Set(acs.HdrDecision, "error")
	}
	if out.Refusal != nil {
		m.Header.Set(acs.HdrErrorCode, strconv.Itoa(int(out.Refusal.Code)))
		m.Header.Set(acs.HdrErrorReason, out.Refusal.Reason)
	}
	return m
}

// alertMsg publishes an alert with its receipt, so that an alert forged
// on the bus — which anyone allowed to publish there can do — tells itself
// apart from a real one.
func (w *worker) alertMsg(a guardian.Alert, sealed guardian.SealedAlert, seq uint64) *nats.Msg {
	m := nats.NewMsg(a.Subject)
	m.Data = sealed.Body
	m.Header.Set(acs.HdrMsgID, a.MsgID)
	m.Header.Set(acs.HdrRuleID, a.RuleID)
	m.Header.Set(acs.HdrStreamSeq, strconv.FormatUint(seq, 10))
	if sealed.Receipt != "" {
		m.Header.Set(acs.HdrReceipt, sealed.Receipt)
		m.Header.Set(acs.HdrReceiptKey, w.receiptKey)
	}
	return m
}

// deadLetter keeps a refused message: the original bytes untouched, the
// reason in headers.
func (w *worker) deadLetter(in *inbound, out guardian.Outcome) *nats.Msg {
	ref := out.Refusal
	w.stats.DeadLettered.Add(1)
	w.log.Warn().Uint64("seq", in.msg.Seq).Str("subject", acs.InboundOf(in.msg.Subject)).
		Int("code", int(ref.Code)).Str("reason", ref.Reason).Str("error", ref.Message).Msg("dead-lettered")
	m := nats.NewMsg(acs.DLQSubject(acs.TenantOf(in.msg.Subject)))
	m.Data = in.msg.Data
	m.Header.Set(acs.HdrMsgID, "dlq:"+strconv.FormatUint(in.msg.Seq, 10))
	m.Header.Set(acs.HdrErrorCode, strconv.Itoa(int(ref.Code)))
	m.Header.Set(acs.HdrErrorName, ref.Code.String())
	m.Header.Set(acs.HdrErrorReason, ref.Reason)
	m.Header.Set(acs.HdrErrorMessage, msghdr.Value(ref.Error()))
	m.Header.Set(acs.HdrOriginalSubj, acs.InboundOf(in.msg.Subject))
	m.Header.Set(acs.HdrOriginalSeq, strconv.FormatUint(in.msg.Seq, 10))
	m.Header.Set(acs.HdrOriginalStream, acs.HooksStream)
	setIf(m.Header, acs.HdrOriginalMsgID, in.header.Get(acs.HdrMsgID))
	setIf(m.Header, acs.HdrRequestID, out.RequestID)
	// A server whose max_payload is not above ACS_HOOKS' message limit
	// cannot take a near-limit message plus headers. The original stays in
	// ACS_HOOKS at its sequence; the dead letter says so rather than block
	// the partition on a publish that can never succeed.
	if limit := w.js.Conn().MaxPayload(); limit > 0 && int64(len(m.Data)+msghdr.Size(m.Header)) > limit {
		m.Header.Set(acs.HdrBodyOmitted, fmt.Sprintf("%d bytes do not fit the server's max_payload %d; the original is %s sequence %d", len(m.Data), limit, acs.HooksStream, in.msg.Seq))
		m.Data = nil
	}
	return m
}

func setIf(h nats.Header, k, v string) {
	if v != "" {
		h.Set(k, msghdr.Value(v))
	}
}

// sleep waits d or until ctx ends; it reports whether the full wait passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
