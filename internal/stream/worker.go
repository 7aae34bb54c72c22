package stream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/internal/msghdr"
	"github.com/turnguard/turnguard/internal/statestore"
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

// OutboxSize estimates the encoded size of msgs in a state write: the
// bodies stored raw after the record's JSON (statestore), 64 bytes a
// message for its JSON punctuation and its body's frame. loadgen's
// pipeline floor sizes its stand-in state writes with it.
func OutboxSize(msgs []*nats.Msg) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Subject) + msghdr.Size(m.Header) + len(m.Data) + 64
	}
	return n
}

// inbound is one message of the hooks stream on its way through a worker.
type inbound struct {
	msg      guardian.Message
	route    acs.Route
	routeErr error
	// key is route.SessionKey(), made once: a batch looks it up often.
	key    string
	header nats.Header
	// owner is the worker of the partition the message was read from.
	owner *worker
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
	rules     *policy.Source
	cache     *stateCache[turnstate.Session]
	agents    *stateCache[turnstate.Agent]
	stats     *Stats
	log       zerolog.Logger

	// sealer verifies the HTTP endpoint's caller attestations.
	sealer *turnstate.Sealer

	batchSize int
	// maxValueBytes bounds a session's stored value (Config.MaxValueBytes).
	maxValueBytes int
	ackWait       time.Duration
	// pullExpiry is the pull requests' expiry (topology's PullExpiry):
	// the pinned client must ask again within PinnedTTL or lose the
	// partition.
	pullExpiry time.Duration
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
	// receiptKey names the key receipts are signed with; singleReceipts
	// signs each on its own (Config.SingleReceipts).
	receiptKey     string
	singleReceipts bool
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
	// childWait bounds the waits of subagentStops for their children's
	// partitions (freshChild).
	childWait waitBudget
	// onPinned is told when the server pins this worker.
	onPinned func()
	// group applies the worker's live batches together with other
	// partitions' (nil: each batch alone).
	group *group
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

// run consumes the partition until ctx ends, a restart is asked for or a
// batch fails; eager recovers what is already pending first.
func (w *worker) run(ctx context.Context, eager bool) error {
	w.lastConsumerSeq, w.applied, w.sawFresh = 0, 0, false
	w.pin.Store(nil)
	if eager {
		if err := w.recover(ctx, 0); err != nil {
			return fmt.Errorf("recover %s: %w", w.consumer, err)
		}
	}
	f, err := w.consume()
	if err != nil {
		return err
	}
	w.health.healthy()
	defer f.handBack()
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
		case m := <-f.deliveries:
			batch = append(batch, m)
		}
	fill:
		for len(batch) < w.batchSize {
			select {
			case m := <-f.deliveries:
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

// feed is a running consume of the partition: deliveries arrive in stream
// order on its channel until handBack.
type feed struct {
	cc         jetstream.ConsumeContext
	deliveries chan jetstream.Msg
	stopping   chan struct{}
	lateMu     sync.Mutex
	late       []jetstream.Msg
}

// consume starts consuming the partition.
func (w *worker) consume() (*feed, error) {
	f := &feed{deliveries: make(chan jetstream.Msg, w.batchSize), stopping: make(chan struct{})}
	cc, err := w.cons.Consume(func(m jetstream.Msg) {
		// The pin is noted as the delivery arrives, not when its batch is
		// handled: a busy worker must not look unpinned to its own
		// instance, which would take its pin for a dead one's.
		w.notePin(m)
		f.deliver(m)
	}, w.consumeOpts()...)
	if err != nil {
		return nil, fmt.Errorf("consume %s: %w", w.consumer, err)
	}
	f.cc = cc
	return f, nil
}

// consumeOpts are the pull options of the partition's consume.
func (w *worker) consumeOpts() []jetstream.PullConsumeOpt {
	opts := []jetstream.PullConsumeOpt{jetstream.PullMaxMessages(w.batchSize), jetstream.ConsumeErrHandler(w.consumeError)}
	if w.routed {
		opts = append(opts, jetstream.PullPriorityGroup(acs.PartitionGroup), jetstream.PullExpiry(w.pullExpiry))
	}
	return opts
}

// consumeError takes what the consume reports between deliveries.
func (w *worker) consumeError(_ jetstream.ConsumeContext, err error) {
	if !errors.Is(err, jetstream.ErrPinIDMismatch) {
		if persistentConsumeError(err) {
			w.consumerHealth.failing(fmt.Errorf("consume %s: %w", w.consumer, err))
		}
		// Whatever it was (a deleted consumer can also show as "no
		// responders" or missed heartbeats), the next ownership tick asks
		// the server whether the consumer exists.
		w.suspect.Store(true)
		w.log.Warn().Err(err).Msg("consume")
		return
	}
	// Another instance was pinned: stop believing this one is.
	w.pin.Store(nil)
	w.log.Info().Msg("the partition was pinned to another instance")
}

// deliver queues a delivery for the run loop, or sets it aside once the
// feed is stopping. The consume's callback runs serially: whatever it sets
// aside after stopping closed came after all it queued.
func (f *feed) deliver(m jetstream.Msg) {
	select {
	case <-f.stopping:
		f.setAside(m)
		return
	default:
	}
	select {
	case f.deliveries <- m:
	case <-f.stopping:
		f.setAside(m)
	}
}

func (f *feed) setAside(m jetstream.Msg) {
	f.lateMu.Lock()
	f.late = append(f.late, m)
	f.lateMu.Unlock()
}

// handBack stops the consume and hands the deliveries it still holds back
// with a Nak, in stream order, so the partition's next holder gets them at
// once instead of after the ack wait.
func (f *feed) handBack() {
	close(f.stopping)
	f.cc.Drain()
	select {
	case <-f.cc.Closed():
	case <-time.After(5 * time.Second):
		f.cc.Stop()
	}
	for {
		select {
		case m := <-f.deliveries:
			_ = m.Nak()
			continue
		default:
		}
		break
	}
	f.lateMu.Lock()
	defer f.lateMu.Unlock()
	for _, m := range f.late {
		_ = m.Nak()
	}
}

func (w *worker) inbound(subject string, data []byte, h nats.Header, seq uint64, ts time.Time, m jetstream.Msg) inbound {
	for old := w.seen.Load(); seq > old && !w.seen.CompareAndSwap(old, seq); old = w.seen.Load() {
	}
	in := inbound{msg: guardian.Message{Subject: subject, Data: data, Seq: seq, Time: ts, Caller: w.callerOf(subject, data, h), MsgID: h.Get(acs.HdrMsgID)}, header: h, js: m, owner: w}
	if w.routed {
		in.route, in.routeErr = acs.ParsePartitioned(subject)
	} else {
		in.routeErr = fmt.Errorf("subject %q is not %s.<tenant>.<session_id>.<hook>", subject, acs.InboundPrefix)
	}
	in.key = in.route.SessionKey()
	return in
}

// process makes a batch's effects durable, retrying until they are or ctx
// ends, then acknowledges the batch. The messages stay in hand the whole
// time, so nothing newer of the partition can overtake them.
func (w *worker) process(ctx context.Context, ins []inbound) error {
	if len(ins) == 0 {
		return nil
	}
	for i := range ins {
		// Applied alone, the batch is w's whoever read it (the fence
		// tests hand one worker's reads to another).
		ins[i].owner = w
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
	w.done(ins)
	return nil
}

// processLive processes a batch of fresh deliveries: together with other
// partitions' batches when the processor groups them (group.go), else, or
// when the group attempt fails, alone. From its first subagentStop on, the
// batch is applied alone: a subagentStop may wait for its child's
// partition, which inside a group could be waiting for the group.
func (w *worker) processLive(ctx context.Context, ins []inbound) error {
	if w.group == nil {
		return w.process(ctx, ins)
	}
	n := groupablePrefix(ins)
	if n > 0 {
		if err := w.processGrouped(ctx, ins[:n]); err != nil {
			return err
		}
	}
	return w.process(ctx, ins[n:])
}

// processGrouped applies ins, holding no subagentStop, in a group, or
// alone when reading its sessions or the group attempt fails.
func (w *worker) processGrouped(ctx context.Context, ins []inbound) error {
	if err := w.warm(ctx, ins); err != nil {
		w.log.Debug().Err(err).Int("batch", len(ins)).Msg("reading the batch's sessions failed; applying it alone")
		return w.process(ctx, ins)
	}
	if err := w.group.apply(ctx, w, ins); err != nil {
		w.stats.GroupFallbacks.Add(1)
		w.log.Debug().Err(err).Int("batch", len(ins)).Msg("group attempt failed; applying the batch alone")
		return w.process(ctx, ins)
	}
	w.health.healthy()
	w.done(ins)
	return nil
}

// done notes a batch whose effects are durable as applied and
// acknowledges its deliveries.
func (w *worker) done(ins []inbound) {
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
