package stream

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/membership"
)

// ownership decides which partitions this instance consumes. Every
// instance heartbeats into acs.MembersBucket and computes the same Assign over
// the live members; it consumes the partitions assigned to it and lets go
// of the others. Who actually receives a partition's messages is decided
// by the server — each partition consumer pins one client — and a stale
// writer is stopped by the KV revision check, so a disagreement about
// membership (a slow heartbeat, a split) costs wasted work, never a wrong
// or repeated effect.
type ownership struct {
	self     membership.Member
	members  membership.Registry
	hooks    jetstream.Stream
	workers  []*worker
	interval time.Duration
	log      zerolog.Logger

	running map[int]*running
	// suspect holds, per partition, a pin no live member claimed at the
	// last tick; claimed by nobody at the next one too, it is released.
	suspect map[int]string
	// view is the member set of the last assignment, for logging changes.
	view []string
	// pinned is poked when a worker learns its pin, so the heartbeat
	// claims it at once and nobody takes it for a dead instance's.
	pinned chan struct{}
	// unrouted is the instance's worker of malformed subjects; repair
	// checks the assets when it or a partition worker fails.
	unrouted *worker
	repair   *repairer
	// ticks counts ticks, for the periodic check of the assets.
	ticks int
	// snapshot is the workers of the partitions assigned to this instance
	// at the last tick, for readers outside the ownership loop
	// (readiness).
	snapshot atomic.Pointer[[]*worker]

	// liveness tells which members renew their records; beat is the
	// beat of this instance's last record.
	liveness  *membership.Liveness
	beat      uint64
	memberTTL time.Duration
	// membersRead is the failure streak of reading the member set, for
	// readiness: an instance that cannot read it cannot tell whether it
	// should take over partitions.
	membersRead health
	// silent is, for readiness, the partitions assigned at the last tick
	// to members whose beat has stopped advancing ("" when none).
	silent atomic.Pointer[string]
	// purges looks for purges of what sessions are rebuilt from (nil: not
	// looked for).
	purges *purgeWatch
}

// poke has the next tick come now.
func (o *ownership) poke() {
	select {
	case o.pinned <- struct{}{}:
	default:
	}
}

// running is a partition worker this instance started.
type running struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (o *ownership) run(ctx context.Context, fatal context.CancelCauseFunc) {
	defer o.shutdown()
	t := time.NewTicker(o.interval)
	defer t.Stop()
	changed := o.members.Changes(ctx, o.log)
	for {
		o.tick(ctx, fatal)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-changed:
		case <-o.pinned:
		}
	}
}

func (o *ownership) tick(ctx context.Context, fatal context.CancelCauseFunc) {
	// The heartbeat goes out after the reassignment, so it tells what
	// this instance holds now.
	defer o.heartbeat(ctx)
	records, err := o.members.Live(ctx)
	if err != nil {
		if ctx.Err() == nil {
			o.log.Warn().Err(err).Msg("membership unreadable; keeping the partitions held")
		}
		o.membersRead.failing(fmt.Errorf("the member set %s is unreadable: %w", acs.MembersBucket, err))
		// The members bucket is an asset like the others: deleted, it is
		// put back here, or no tick would ever get past this point.
		o.repairAssets(ctx, true)
		return
	}
	o.membersRead.healthy()
	// A record proves who wrote it, not that its writer still runs: only
	// members whose beat advances count. This instance is live whatever
	// the bucket says right now.
	delete(records, o.self.ID)
	live, silence := o.liveness.Observe(records, time.Now())
	live[o.self.ID] = o.self
	ids := slices.Sorted(maps.Keys(live))
	assignment := membership.Assign(len(o.workers), ids)
	claimed := map[string]bool{}
	for _, m := range live {
		for _, pin := range m.Pins {
			claimed[pin] = true
		}
	}
	var leaving []int
	for p, id := range assignment {
		_, on := o.running[p]
		switch {
		case id == o.self.ID && !on:
			o.start(ctx, p, claimed, fatal)
		case id != o.self.ID && on:
			// All that go finish their batches together.
			o.running[p].cancel()
			leaving = append(leaving, p)
		case on:
			o.releaseDeadPin(ctx, p, claimed)
		}
	}
	for _, p := range leaving {
		o.stop(ctx, p)
	}
	o.checkSuspects(ctx)
	o.repairAssets(ctx, false)
	o.noteSilent(assignment, silence)
	if o.purges != nil {
		// Every tick: three stream info requests, against a purge noticed
		// only when the sessions it took load again.
		o.purges.check(ctx)
	}
	// Readiness looks at every partition assigned here, started or not.
	var ws []*worker
	for p, id := range assignment {
		if id == o.self.ID {
			ws = append(ws, o.workers[p])
		}
	}
	o.snapshot.Store(&ws)
	if !slices.Equal(ids, o.view) {
		o.view = ids
		o.log.Info().Strs("members", ids).Ints("partitions", slices.Sorted(maps.Keys(o.running))).Msg("membership changed; partitions reassigned")
	}
}

func (o *ownership) heartbeat(ctx context.Context) {
	self := o.self
	self.Pins = map[string]string{}
	for p := range o.running {
		self.Owns = append(self.Owns, p)
		if pin := o.workers[p].pinID(); pin != "" {
			self.Pins[o.workers[p].consumer] = pin
		}
	}
	slices.Sort(self.Owns)
	o.beat = membership.NextBeat(o.beat, time.Now())
	self.Beat = o.beat
	if err := o.members.Heartbeat(ctx, self); err != nil && ctx.Err() == nil {
		o.log.Warn().Err(err).Msg("membership heartbeat failed; keeping the partitions held")
	}
}

// noteSilent records, for readiness, the partitions assigned to members
// that are still counted alive but have not advanced their beat for half
// the member TTL: a member that died, whose partitions nobody decides
// until the TTL has passed and this instance takes them.
func (o *ownership) noteSilent(assignment []string, silence map[string]time.Duration) {
	held := map[string][]int{}
	for p, id := range assignment {
		if id != o.self.ID && silence[id] >= o.memberTTL/2 {
			held[id] = append(held[id], p)
		}
	}
	if len(held) == 0 {
		o.silent.Store(nil)
		return
	}
	var parts []string
	for _, id := range slices.Sorted(maps.Keys(held)) {
		parts = append(parts, fmt.Sprintf("partition(s) %v assigned to member %q, whose heartbeat has not advanced for %s",
			held[id], id, silence[id].Round(time.Millisecond)))
	}
	msg := strings.Join(parts, "; ")
	o.silent.Store(&msg)
}

// membersProblem is why membership keeps this instance from calling
// itself ready: partitions held by a silent member, or a member set
// unreadable for a member TTL ("" when neither).
func (o *ownership) membersProblem() string {
	var out []string
	if d, why, stuck := o.membersRead.stuck(o.memberTTL); stuck {
		out = append(out, fmt.Sprintf("membership failing for %s: %s", d.Round(time.Second), why))
	}
	if s := o.silent.Load(); s != nil {
		out = append(out, *s)
	}
	return strings.Join(out, "; ")
}

// checkSuspects asks the server whether the consumers of running workers
// that saw consume errors still exist: a deleted consumer shows to the
// client as several errors (deleted, no responders, missed heartbeats),
// and only the server can say which it is. A consumer that exists again
// (or all along) ends the streak.
func (o *ownership) checkSuspects(ctx context.Context) {
	ws := []*worker{o.unrouted}
	for p := range o.running {
		ws = append(ws, o.workers[p])
	}
	for _, w := range ws {
		if w == nil || !w.suspect.Swap(false) {
			continue
		}
		_, err := w.cons.Info(ctx)
		switch {
		case err == nil:
			w.consumerHealth.healthy()
		case persistentConsumeError(err):
			w.consumerHealth.failing(fmt.Errorf("consumer %s: %w", w.consumer, err))
			w.suspect.Store(true)
		default:
			w.suspect.Store(true) // unknown yet: ask again next tick
		}
	}
}

// assetCheckTicks is how many ownership ticks (a fifth of MemberTTL each,
// 1 s by default) pass between checks of the assets when nothing fails.
const assetCheckTicks = 10

// repairAssets recreates missing streams, buckets and consumers when a
// worker fails or suspects its consumer, or (force) when the member set
// cannot be read, and restarts the workers whose consumers were recreated.
func (o *ownership) repairAssets(ctx context.Context, force bool) {
	var ws []*worker
	if o.unrouted != nil {
		ws = append(ws, o.unrouted)
	}
	if prev := o.snapshot.Load(); prev != nil {
		ws = append(ws, *prev...)
	}
	// Every assetCheckTicks ticks the assets are checked anyway: a
	// consumer edited to filter nothing fails nothing, and decides nothing.
	o.ticks++
	if o.repair == nil || !force && !needsRepair(ws) && o.ticks%assetCheckTicks != 0 {
		return
	}
	created := o.repair.repair(ctx)
	if len(created) == 0 {
		return
	}
	hooks := slices.Contains(created, acs.HooksStream)
	for _, w := range ws {
		w.wakeSoon()
		if hooks || slices.Contains(created, acs.HooksStream+"/"+w.consumer) {
			w.suspect.Store(true) // the next tick confirms the new consumer
			w.restartSoon()
		}
	}
}

// start consumes partition p. If its pin belongs to nobody live (a crashed
// instance, or none at all), the unacknowledged messages are recovered
// from the stream at once; if a live instance still holds it, that one is
// finishing its batch and releases the pin, and this worker recovers when
// its first delivery arrives.
func (o *ownership) start(ctx context.Context, p int, claimed map[string]bool, fatal context.CancelCauseFunc) {
	w := o.workers[p]
	pin, err := o.currentPin(ctx, w)
	if err != nil {
		// An assigned partition that cannot start is stuck as surely as
		// one that fails while running (its consumer deleted, say).
		w.consumerHealth.failing(fmt.Errorf("start %s: %w", w.consumer, err))
		o.log.Warn().Err(err).Str("consumer", w.consumer).Msg("cannot read the partition's pin; trying next tick")
		return
	}
	w.consumerHealth.healthy()
	eager := pin == "" || !claimed[pin]
	if pin != "" && !claimed[pin] {
		o.unpin(ctx, w, pin)
	}
	wctx, cancel := context.WithCancel(ctx)
	r := &running{cancel: cancel, done: make(chan struct{})}
	o.running[p] = r
	go func() {
		defer close(r.done)
		w.supervise(wctx, fatal, eager)
	}()
}

// stop lets go of partition p: the worker finishes its batch, then the pin
// is released so the partition's new owner is served at once.
func (o *ownership) stop(ctx context.Context, p int) {
	r := o.running[p]
	delete(o.running, p)
	delete(o.suspect, p)
	w := o.workers[p]
	held := w.pinID()
	r.cancel()
	<-r.done
	if held == "" || ctx.Err() != nil {
		return
	}
	if pin, err := o.currentPin(ctx, w); err == nil && pin == held {
		o.unpin(ctx, w, pin)
	}
}

// releaseDeadPin frees partition p when it is pinned to a client no live
// member claims twice in a row (an instance that died holding it), and
// has the worker recover what that one left unacknowledged.
func (o *ownership) releaseDeadPin(ctx context.Context, p int, claimed map[string]bool) {
	w := o.workers[p]
	if w.pinID() != "" {
		return // this instance has been served; the pin is ours
	}
	pin, err := o.currentPin(ctx, w)
	if err != nil || pin == "" || claimed[pin] {
		delete(o.suspect, p)
		return
	}
	if o.suspect[p] != pin {
		o.suspect[p] = pin
		return
	}
	delete(o.suspect, p)
	o.unpin(ctx, w, pin)
	w.recoverSoon()
}

func (o *ownership) currentPin(ctx context.Context, w *worker) (string, error) {
	info, err := w.cons.Info(ctx)
	if err != nil {
		return "", err
	}
	for _, g := range info.PriorityGroups {
		if g.Group == acs.PartitionGroup {
			return g.PinnedClientID, nil
		}
	}
	return "", nil
}

func (o *ownership) unpin(ctx context.Context, w *worker, pin string) {
	if err := o.hooks.UnpinConsumer(ctx, w.consumer, acs.PartitionGroup); err != nil {
		o.log.Warn().Err(err).Str("consumer", w.consumer).Msg("unpin")
		return
	}
	o.log.Info().Str("consumer", w.consumer).Str("pin", pin).Msg("released the partition's pin")
}

// shutdown stops every worker, releases their pins and leaves the member
// set, so the other instances take over without waiting for TTLs.
func (o *ownership) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, r := range o.running {
		r.cancel() // all finish their batches together
	}
	for _, p := range slices.Sorted(maps.Keys(o.running)) {
		o.stop(ctx, p)
	}
	if err := o.members.Leave(ctx, o.self.ID); err != nil {
		o.log.Warn().Err(err).Msg("leaving the member set")
	}
}
