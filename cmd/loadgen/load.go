package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/traffic"
)

// record is how far one session got: its first published envelopes were
// stored; when uncertain, the next one was being published when the run
// was interrupted and may or may not have been stored.
type record struct {
	index     int64
	published int
	uncertain bool
}

// loader publishes generated sessions: --sessions slots, each publishing
// one session at a time, envelope k+1 only once envelope k's PubAck
// arrived, so a retry can never reorder a session; the slots interleave
// to keep the server busy. With awaitDecision set, envelope k+1 also waits
// for envelope k's decision (closed loop), as an agent does.
type loader struct {
	gen      *traffic.Generator
	js       jetstream.JetStream
	obs      *observer
	log      zerolog.Logger
	deadline time.Time
	// maxEnvelopes bounds the envelopes published (0: no bound).
	maxEnvelopes int64
	// interval paces publishes over all slots (0: as fast as possible).
	interval time.Duration
	// awaitDecision, when positive, has each slot wait for the decision
	// of its envelope before publishing the next, at most this long.
	awaitDecision time.Duration
	start         time.Time

	claimed     atomic.Int64
	paced       atomic.Int64
	nextSession atomic.Int64
	published   atomic.Int64
	retries     atomic.Int64
	duplicates  atomic.Int64
	lastAck     atomic.Int64
	// awaitTimeouts counts decisions a slot gave up waiting for.
	awaitTimeouts atomic.Int64

	mu      sync.Mutex
	records []record
}

// run publishes until the deadline, the envelope bound or ctx, and returns
// what every started session got to.
func (l *loader) run(ctx context.Context, slots int) []record {
	l.start = time.Now()
	l.lastAck.Store(l.start.UnixNano())
	var wg sync.WaitGroup
	for range slots {
		wg.Go(func() { l.slot(ctx) })
	}
	wg.Wait()
	return l.records
}

func (l *loader) slot(ctx context.Context) {
	var decided chan struct{}
	var timer *time.Timer
	if l.awaitDecision > 0 {
		// One channel and one timer per slot, reused for every envelope:
		// a slot awaits one decision at a time.
		decided = make(chan struct{}, 1)
		timer = time.NewTimer(l.awaitDecision)
		defer timer.Stop()
	}
	for {
		if ctx.Err() != nil || !time.Now().Before(l.deadline) || (l.maxEnvelopes > 0 && l.claimed.Load() >= l.maxEnvelopes) {
			return
		}
		s := l.gen.Session(l.nextSession.Add(1) - 1)
		rec := record{index: s.Index}
		for k := range s.Envelopes {
			if !l.claim(ctx) {
				break
			}
			e := &s.Envelopes[k]
			// Registered before publishing: the decision may arrive
			// before the PubAck does.
			l.obs.expect(e.RequestID, time.Now(), decided)
			if err := l.publish(ctx, e); err != nil {
				rec.uncertain = true
				break
			}
			rec.published = k + 1
			if decided != nil && !l.awaitDecisionOf(ctx, e.RequestID, decided, timer) {
				break
			}
		}
		if rec.published > 0 || rec.uncertain {
			l.mu.Lock()
			l.records = append(l.records, rec)
			l.mu.Unlock()
		}
		if rec.published < len(s.Envelopes) {
			return
		}
	}
}

// claim takes one envelope of the budget and waits for its turn at the
// configured rate; false means stop.
func (l *loader) claim(ctx context.Context) bool {
	if l.maxEnvelopes > 0 && l.claimed.Add(1) > l.maxEnvelopes {
		return false
	}
	at := time.Now()
	if l.interval > 0 {
		at = l.start.Add(time.Duration(l.paced.Add(1)-1) * l.interval)
	}
	if !at.Before(l.deadline) {
		return false
	}
	return wait(ctx, time.Until(at))
}

// awaitDecisionOf waits until the decision of requestID was observed (a
// signal on decided), at most l.awaitDecision: an envelope the processor
// never decides (refused and dead-lettered unroutable, say) must not stop
// its slot for good, so the slot goes on and the wait is counted. False
// means ctx ended.
func (l *loader) awaitDecisionOf(ctx context.Context, requestID string, decided chan struct{}, timer *time.Timer) bool {
	timer.Reset(l.awaitDecision)
	select {
	case <-decided:
		return true
	case <-ctx.Done():
		l.obs.forget(requestID, decided)
		return false
	case <-timer.C:
		l.awaitTimeouts.Add(1)
		l.log.Warn().Str("request_id", requestID).Dur("waited", l.awaitDecision).Msg("no decision seen; the session goes on")
		l.obs.forget(requestID, decided)
		return true
	}
}

// wait sleeps d (nothing when d is not positive) unless ctx ends first; it
// reports whether ctx is still live.
func wait(ctx context.Context, d time.Duration) bool {
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
	return ctx.Err() == nil
}

// publish stores one envelope, retrying until the stream acknowledges it.
// Every attempt carries the same Nats-Msg-Id, so an attempt whose ack was
// lost and that is repeated is stored once (the ack then says Duplicate).
// It only gives up when ctx ends; the envelope is then uncertain.
func (l *loader) publish(ctx context.Context, e *traffic.Envelope) error {
	backoff := 50 * time.Millisecond
	for attempt := 0; ; attempt++ {
		msg := &nats.Msg{Subject: e.Subject, Data: e.Data, Header: nats.Header{acs.HdrMsgID: []string{e.MsgID}}}
		f, err := l.js.PublishMsgAsync(msg)
		if err == nil {
			select {
			case ack := <-f.Ok():
				l.published.Add(1)
				if ack.Duplicate {
					l.duplicates.Add(1)
				}
				l.lastAck.Store(time.Now().UnixNano())
				return nil
			case err = <-f.Err():
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		l.retries.Add(1)
		if attempt < 3 || attempt%20 == 0 {
			l.log.Warn().Err(err).Str("msg_id", e.MsgID).Int("attempt", attempt+1).Msg("publish failed; retrying")
		}
		if !wait(ctx, backoff) {
			return ctx.Err()
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// observer watches the run tenant's decisions and alerts as they are
// published, for latency and live counts. Reconciliation does not trust
// it: it reads the streams.
type observer struct {
	mu   sync.Mutex
	sent map[string]time.Time
	// awaited are the slots waiting for a request's decision (closed
	// loop), each signalled once on its channel.
	awaited   map[string]chan<- struct{}
	hist      *hdrhistogram.Histogram
	decisions int64
	denies    int64
	alerts    map[string]int64
	first     time.Time
	last      time.Time
}

func newObserver() *observer {
	return &observer{sent: map[string]time.Time{}, awaited: map[string]chan<- struct{}{}, alerts: map[string]int64{},
		hist: hdrhistogram.New(1, int64(10*time.Minute/time.Microsecond), 3)}
}

// subscribe has the observer watch the tenant's decisions and alerts on
// nc, with no pending limits (a dropped message would count as missing).
func (o *observer) subscribe(nc *nats.Conn, tenant string) error {
	for subject, cb := range map[string]nats.MsgHandler{
		acs.DecisionsPrefix + "." + tenant + ".>": o.onDecision,
		acs.AlertsPrefix + "." + tenant + ".>":    o.onAlert,
	} {
		sub, err := nc.Subscribe(subject, cb)
		if err != nil {
			return fmt.Errorf("subscribe %s: %w", subject, err)
		}
		if err := sub.SetPendingLimits(-1, -1); err != nil {
			return err
		}
	}
	return nc.Flush()
}

// expect notes when a request was first published and, when decided is
// not nil, has its decision signalled there.
func (o *observer) expect(requestID string, at time.Time, decided chan<- struct{}) {
	o.mu.Lock()
	if _, ok := o.sent[requestID]; !ok {
		o.sent[requestID] = at
	}
	if decided != nil {
		o.awaited[requestID] = decided
	}
	if o.first.IsZero() {
		o.first = at
	}
	o.mu.Unlock()
}

func (o *observer) onDecision(m *nats.Msg) {
	now := time.Now()
	rid := m.Header.Get(acs.HdrRequestID)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.decisions++
	o.last = now
	if m.Header.Get(acs.HdrDecision) == "deny" {
		o.denies++
	}
	if at, ok := o.sent[rid]; ok {
		delete(o.sent, rid)
		_ = o.hist.RecordValue(now.Sub(at).Microseconds())
	}
	if ch, ok := o.awaited[rid]; ok {
		delete(o.awaited, rid)
		// The slot's channel has room: it awaits one request at a time
		// and drains a late signal in forget.
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// forget stops signalling requestID's decision on decided, and drains a
// signal that came in meanwhile, so the slot's next wait does not take it
// for its own envelope's.
func (o *observer) forget(requestID string, decided chan struct{}) {
	o.mu.Lock()
	delete(o.awaited, requestID)
	o.mu.Unlock()
	select {
	case <-decided:
	default:
	}
}

func (o *observer) onAlert(m *nats.Msg) {
	o.mu.Lock()
	o.alerts[m.Header.Get(acs.HdrRuleID)]++
	o.mu.Unlock()
}

// outstanding is how many published requests have no decision seen yet.
func (o *observer) outstanding() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.sent)
}

// settle waits until every published request's decision was seen, or d.
func (o *observer) settle(ctx context.Context, d time.Duration) {
	deadline := time.Now().Add(d)
	for o.outstanding() > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
}
