package stream

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/statestore"
	"github.com/turnguard/turnguard/internal/testkit/guardiantest"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
	"github.com/turnguard/turnguard/internal/topology"
)

// TestStaleInstanceIsFenced has two workers decide the same session, as two
// instances briefly holding one partition would (the pin is no exclusivity
// guarantee): b last saw the session after envelope 2, a has since applied
// 3 to 5, and b is handed 6 and 7. b's decisions from its stale state
// would call them protocol violations; its save loses the revision check,
// so they must never be published — b re-reads and decides them right.
func TestStaleInstanceIsFenced(t *testing.T) {
	// One worker alone decides the session for reference; the two racing
	// ones must publish exactly its decisions, byte for byte (chain
	// hashes included).
	alone := fenceRig(t)
	if err := alone.a.process(context.Background(), alone.ins); err != nil {
		t.Fatal(err)
	}
	want := alone.decisions(t)

	r := fenceRig(t)
	for _, step := range []struct {
		w        *worker
		from, to int
	}{{r.b, 0, 2}, {r.a, 2, 5}, {r.b, 5, 7}, {r.a, 7, len(r.ins)}} {
		if err := step.w.process(context.Background(), r.ins[step.from:step.to]); err != nil {
			t.Fatal(err)
		}
	}
	if r.p.Stats().Conflicts.Load() == 0 {
		t.Fatal("b's stale save was not refused; the test proves nothing")
	}
	got := r.decisions(t)
	if len(got) != len(r.ins) {
		t.Errorf("%d decisions for %d envelopes", len(got), len(r.ins))
	}
	for seq, body := range want {
		if got[seq] != body {
			t.Errorf("seq %d decided\n%s\nalone it is\n%s", seq, got[seq], body)
		}
	}
	st, _, _, err := r.store.Load(context.Background(), acs.SessionKey("default", examples.SessionID))
	if err != nil || st == nil {
		t.Fatalf("state: %v", err)
	}
	if len(st.Violations) > 0 || st.Envelopes != uint64(len(r.ins)) {
		t.Errorf("state after the race: %d envelopes, violations %v", st.Envelopes, st.Violations)
	}
}

// fenceTest is a server holding the example session and two workers of its
// one partition, each with a cache of its own.
type fenceTest struct {
	p         *Processor
	a, b      *worker
	ins       []inbound
	store     *statestore.Store
	decisionS jetstream.Stream
}

func fenceRig(t *testing.T) *fenceTest {
	t.Helper()
	ctx := context.Background()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv)
	rs := guardiantest.DefaultRules(t)
	cfg := DefaultConfig()
	cfg.Topology.Partitions = 1
	p, err := New(nc, guardiantest.Pure(t), policy.NewSource(rs), cfg, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel))
	if err != nil {
		t.Fatal(err)
	}
	if err := topology.Ensure(ctx, p.js, cfg.Topology); err != nil {
		t.Fatal(err)
	}
	hooks, err := p.js.Stream(ctx, acs.HooksStream)
	if err != nil {
		t.Fatal(err)
	}
	decisions, err := p.js.Stream(ctx, acs.DecisionsStream)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := p.js.KeyValue(ctx, acs.StateBucket)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := hooks.Consumer(ctx, acs.PartitionConsumer(0))
	if err != nil {
		t.Fatal(err)
	}
	r := &fenceTest{p: p, store: statestore.NewStore(kv, p.sealer), decisionS: decisions}
	r.a = p.newWorker(cons, hooks, decisions, r.store, acs.PartitionFilter(0), true)
	r.b = p.newWorker(cons, hooks, decisions, r.store, acs.PartitionFilter(0), true)
	for _, e := range examples.Session(examples.SessionID) {
		ack, err := p.js.Publish(ctx, e.Subject("default", examples.SessionID), e.Data)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := hooks.GetMsg(ctx, ack.Sequence)
		if err != nil {
			t.Fatal(err)
		}
		r.ins = append(r.ins, r.a.inbound(raw.Subject, raw.Data, raw.Header, raw.Sequence, raw.Time, nil))
	}
	return r
}

// decisions reads every decision body by the inbound sequence it answers;
// a sequence answered twice fails the test.
func (r *fenceTest) decisions(t *testing.T) map[uint64]string {
	t.Helper()
	ctx := context.Background()
	info, err := r.decisionS.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.decisionS.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint64]string{}
	for range info.State.Msgs {
		m, err := c.Next()
		if err != nil {
			t.Fatal(err)
		}
		seq, _ := strconv.ParseUint(m.Headers().Get(acs.HdrStreamSeq), 10, 64)
		if _, twice := out[seq]; twice {
			t.Errorf("seq %d decided twice", seq)
		}
		out[seq] = string(m.Data())
	}
	return out
}

// TestOutboxOutlivesACrash: a worker that saved a session's state and died
// before publishing what the state's outbox holds leaves it to the next
// holder, which publishes it when it loads the session — here on the
// redelivery of the very envelope, which is already applied.
func TestOutboxOutlivesACrash(t *testing.T) {
	ctx := context.Background()
	key := acs.SessionKey("default", examples.SessionID)
	alone := fenceRig(t)
	last := len(alone.ins) - 1
	for _, part := range [][]inbound{alone.ins[:last], alone.ins[last:]} {
		if err := alone.a.process(ctx, part); err != nil {
			t.Fatal(err)
		}
	}
	want := alone.decisions(t)
	final, outbox, _, err := alone.store.Load(ctx, key)
	if err != nil || outbox == nil || len(outbox.Msgs) == 0 {
		t.Fatalf("the last write left no outbox: %v", err)
	}

	r := fenceRig(t)
	if err := r.a.process(ctx, r.ins[:last]); err != nil {
		t.Fatal(err)
	}
	// The crash: the final state and its outbox are saved, nothing of the
	// outbox is published.
	_, _, rev, err := r.store.Load(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	save, err := r.store.SaveMsg(final, outbox, rev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.p.js.PublishMsg(ctx, save.Msg); err != nil {
		t.Fatal(err)
	}
	if err := r.b.process(ctx, r.ins[last:]); err != nil {
		t.Fatal(err)
	}
	if r.p.Stats().Republished.Load() == 0 || r.p.Stats().Skipped.Load() != 1 {
		t.Errorf("republished %d, skipped %d", r.p.Stats().Republished.Load(), r.p.Stats().Skipped.Load())
	}
	got := r.decisions(t)
	if len(got) != len(want) {
		t.Errorf("%d decisions, want %d", len(got), len(want))
	}
	for seq, body := range want {
		if got[seq] != body {
			t.Errorf("seq %d decided\n%s\nalone it is\n%s", seq, got[seq], body)
		}
	}
}

// TestLargeOutboxIsSplit: a batch whose publications for one session would
// not fit in one state write — twelve refused 200 KB envelopes, each
// dead-lettered with its bytes — is applied in smaller parts instead of
// failing for ever.
func TestLargeOutboxIsSplit(t *testing.T) {
	ctx := context.Background()
	r := fenceRig(t)
	big := []byte(`{"jsonrpc":"2.0","id":"x","method":"steps/toolCallRequest","params":{"padding":"` + strings.Repeat("a", 200<<10) + `"}}`)
	batch := []inbound{r.ins[0]}
	// Twelve of them: their outbox (about 2.4 MB, the bodies stored raw)
	// is over even the embedded server's 2 MiB max_payload.
	const refused = 12
	for range refused {
		ack, err := r.p.js.Publish(ctx, acs.InboundPrefix+".default."+examples.SessionID+".toolCallRequest", big)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := r.a.hooks.GetMsg(ctx, ack.Sequence)
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, r.a.inbound(raw.Subject, raw.Data, raw.Header, raw.Sequence, raw.Time, nil))
	}
	if limit := r.p.js.Conn().MaxPayload(); int64(refused*len(big)) < limit {
		t.Fatalf("the batch's outbox would fit in max_payload %d; the test proves nothing", limit)
	}
	pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := r.a.process(pctx, batch); err != nil {
		t.Fatal(err)
	}
	dlq, err := r.p.js.Stream(ctx, acs.DLQStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := dlq.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != refused {
		t.Errorf("%d dead letters, want %d", info.State.Msgs, refused)
	}
	if got := r.decisions(t); len(got) != refused+1 {
		t.Errorf("%d decisions, want %d", len(got), refused+1)
	}
}

// TestPublishedOutboxIsNotRepeated: every state keeps the outbox of its last
// write, so a worker loading a session after a clean stop finds one that
// already went out. It must not publish it again: the streams would drop
// the copies, but plain subscribers of the decision subjects — a waiting
// caller among them — would see each decision twice.
func TestPublishedOutboxIsNotRepeated(t *testing.T) {
	ctx := context.Background()
	r := fenceRig(t)
	last := len(r.ins) - 1
	if err := r.a.process(ctx, r.ins[:last]); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	var mu sync.Mutex
	sub, err := r.p.js.Conn().Subscribe(acs.DecisionsPrefix+".>", func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		seen[m.Header.Get(acs.HdrStreamSeq)]++
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := r.p.js.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	// Another worker, with nothing cached, takes the session's next
	// envelope: it loads the state and its published outbox.
	if err := r.b.process(ctx, r.ins[last:]); err != nil {
		t.Fatal(err)
	}
	if err := r.p.js.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	want := strconv.FormatUint(r.ins[last].msg.Seq, 10)
	// Wait for the new decision; the check below requires it alone.
	if err := testwait.Wait(5*time.Second, 5*time.Millisecond, func() error {
		mu.Lock()
		defer mu.Unlock()
		if seen[want] == 0 {
			return fmt.Errorf("no decision for inbound sequence %s", want)
		}
		return nil
	}); err != nil {
		// The check below reports what was seen.
		t.Log(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[want] != 1 {
		t.Errorf("decisions seen by a subscriber, by inbound sequence: %v; want only %s, once", seen, want)
	}
	if n := r.p.Stats().Republished.Load(); n != 0 {
		t.Errorf("republished %d publications of an outbox that had gone out", n)
	}
}
