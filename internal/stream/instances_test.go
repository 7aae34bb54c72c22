package stream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/internal/membership"
	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
	"github.com/turnguard/turnguard/internal/topology"
)

// owners reads who holds which partition from the member bucket.
func owners(t *testing.T, js jetstream.JetStream) map[string][]int {
	t.Helper()
	ctx := context.Background()
	kv, err := js.KeyValue(ctx, acs.MembersBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil // not created yet
	}
	if err != nil {
		t.Fatal(err)
	}
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]int{}
	for k := range keys.Keys() {
		e, err := kv.Get(ctx, k)
		if err != nil {
			continue
		}
		var m membership.Member
		if err := json.Unmarshal(turnstate.RecordOf(e.Value()), &m); err != nil {
			t.Fatal(err)
		}
		out[m.ID] = m.Owns
	}
	return out
}

// awaitOwners waits until the live members are exactly ids and their
// partitions together are all of them, each once.
func awaitOwners(t *testing.T, js jetstream.JetStream, partitions int, ids ...string) map[string][]int {
	t.Helper()
	return awaitOwnersWithin(t, js, waitFor, partitions, ids...)
}

// awaitOwnersWithin is awaitOwners with its patience given: an instance
// that started before it saw the other takes every partition, and giving
// some back waits for the pulls in flight on them (each up to a third of
// the pinned TTL) before its next heartbeat records what it holds; the
// pins keep one consumer on each partition meanwhile.
func awaitOwnersWithin(t *testing.T, js jetstream.JetStream, within time.Duration, partitions int, ids ...string) map[string][]int {
	t.Helper()
	var got map[string][]int
	testwait.CheckFor(t, within, 50*time.Millisecond, func() error {
		got = owners(t, js)
		var all []int
		var members []string
		for id, ps := range got {
			members = append(members, id)
			all = append(all, ps...)
		}
		slices.Sort(all)
		slices.Sort(members)
		if slices.Equal(members, ids) && len(all) == partitions && len(slices.Compact(all)) == partitions {
			return nil
		}
		return fmt.Errorf("partitions never settled over %v: %v", ids, got)
	})
	return got
}

// TestInstancesSharePartitions runs two processors on one server: the
// partitions spread over both, both decide, and when one dies without a
// goodbye the other takes its partitions and what it left unacknowledged.
// Every envelope gets exactly one decision and every session exact
// counters.
func TestInstancesSharePartitions(t *testing.T) {
	const sessions = 40
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv)
	js := natstest.JetStream(t, nc)
	cfg := testConfig()
	cfg.Topology.Partitions = 8
	cfg.BatchSize = 8
	cfg.Topology.AckWait = 2 * time.Second
	cfg.Topology.MemberTTL = 2 * time.Second
	cfg.Topology.PinnedTTL = 4 * time.Second
	a, b := cfg, cfg
	a.InstanceID, b.InstanceID = "a", "b"
	first := startProcessor(t, srv, a)
	second := startProcessor(t, srv, b)
	split := awaitOwners(t, js, cfg.Topology.Partitions, "a", "b")
	if len(split["a"]) != 4 || len(split["b"]) != 4 {
		t.Fatalf("8 partitions over 2 instances split %v", split)
	}
	var killed time.Time
	total, states := publishSessions(t, js, "shared", sessions, func(i int) {
		if i == sessions/2 {
			// Kill it while it is busy. Not failing here: the check
			// after publishing says what each instance decided.
			if err := testwait.Wait(waitFor, 5*time.Millisecond, func() error {
				if second.p.Stats().Processed.Load() == 0 {
					return errors.New("b has decided nothing")
				}
				return nil
			}); err != nil {
				t.Log(err)
			}
			// A crash: no goodbye, its heartbeat and pins just stop.
			second.nc.Close()
			killed = time.Now()
		}
	})
	// a may still be catching up on a loaded machine: wait for it to
	// decide, rather than read its count at one moment. b's is final.
	if err := testwait.Wait(waitFor, 5*time.Millisecond, func() error {
		if first.p.Stats().Processed.Load() == 0 {
			return errors.New("a has decided nothing")
		}
		return nil
	}); err != nil || second.p.Stats().Processed.Load() == 0 {
		t.Fatalf("both instances should have decided: a %d, b %d", first.p.Stats().Processed.Load(), second.p.Stats().Processed.Load())
	}
	awaitOwners(t, js, cfg.Topology.Partitions, "a")
	t.Logf("a took over after %s", time.Since(killed).Round(time.Millisecond))
	awaitDecided(t, js, total, 30*time.Second, 50*time.Millisecond)
	t.Logf("all decided %s after the kill", time.Since(killed).Round(time.Millisecond))
	checkExactlyOnce(t, js, total)
	checkStates(t, js, states)
	st := first.p.Stats()
	t.Logf("a: %d processed, %d recovered, %d skipped, %d conflicts; b: %d processed before it died",
		st.Processed.Load(), st.Recovered.Load(), st.Skipped.Load(), st.Conflicts.Load(), second.p.Stats().Processed.Load())
}

// TestGracefulLeaveHandsOver: an instance that stops on purpose leaves the
// member set and releases its pins, so the other serves its partitions at
// once rather than after the TTLs.
func TestGracefulLeaveHandsOver(t *testing.T) {
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv)
	js := natstest.JetStream(t, nc)
	cfg := testConfig()
	// TTLs far above the test's patience: only a handover can pass it.
	// Without one, a would take b's partitions no sooner than 4/5 of the
	// member TTL after the stop (b heartbeats every fifth of it) or 2/3 of
	// the pinned TTL (b pulls every third): over 80 s.
	cfg.Topology.MemberTTL = 2 * time.Minute
	cfg.Topology.PinnedTTL = 2 * time.Minute
	const handoverWithin = time.Minute
	a, b := cfg, cfg
	a.InstanceID, b.InstanceID = "a", "b"
	startProcessor(t, srv, a)
	second := startProcessor(t, srv, b)
	// With these TTLs settling can outlast waitFor (it did under a loaded
	// CI run, stop 41): a pull in flight and a heartbeat more.
	awaitOwnersWithin(t, js, cfg.Topology.PinnedTTL/3+cfg.Topology.MemberTTL/5+waitFor, cfg.Topology.Partitions, "a", "b")
	_, built := loadScenario(t, "full-session")
	for _, m := range built.Messages[:3] {
		natstest.Publish(t, js, m.Subject, m.Data)
	}
	start := time.Now()
	second.stop()
	awaitOwners(t, js, cfg.Topology.Partitions, "a")
	for _, m := range built.Messages[3:] {
		natstest.Publish(t, js, m.Subject, m.Data)
	}
	awaitDecided(t, js, len(built.Messages), 30*time.Second, 20*time.Millisecond)
	// Measured before the checks, which take time of their own.
	took := time.Since(start)
	checkExactlyOnce(t, js, len(built.Messages))
	if took >= handoverWithin {
		t.Errorf("the handover took %s, as long as waiting for the TTLs could", took)
	}
}

// gate is a stream.Observer that, while shut, holds each worker after a
// batch it made durable: before acknowledging it, with its next deliveries
// in hand.
type gate struct {
	mu     sync.Mutex
	opened chan struct{} // closed while the gate is open
	isOpen bool
	held   atomic.Int32 // workers held now
}

func newGate() *gate { return &gate{opened: make(chan struct{})} }

func (g *gate) Batch(int) {
	g.mu.Lock()
	opened := g.opened
	g.mu.Unlock()
	g.held.Add(1)
	defer g.held.Add(-1)
	<-opened
}

func (g *gate) Decided(string, string, time.Duration) {}
func (g *gate) Refused(acs.Code, string)              {}
func (g *gate) Alerted(string, string)                {}
func (g *gate) Denied(string)                         {}

func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.isOpen {
		close(g.opened)
		g.isOpen = true
	}
}

func (g *gate) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.isOpen {
		g.opened = make(chan struct{})
		g.isOpen = false
	}
}

// countNaks counts the server's Nak advisories per partition consumer:
// its word that a holder handed deliveries back. The returned func sums
// them over partitions.
func countNaks(t *testing.T, nc *nats.Conn) func(partitions []int) int {
	t.Helper()
	var mu sync.Mutex
	naks := map[string]int{}
	sub, err := nc.Subscribe("$JS.EVENT.ADVISORY.CONSUMER.MSG_NAKED."+acs.HooksStream+".*", func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		naks[m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]]++
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	// The server sends advisories only to interest it knows of.
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return func(partitions []int) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, p := range partitions {
			n += naks[acs.PartitionConsumer(p)]
		}
		return n
	}
}

// TestHandoverUnderBacklog moves partitions twice while a backlog is being
// decided — b joins, then a leaves — with the ack wait far above the
// test's patience: what a held when letting go must reach b at once (Nak,
// in order), and b must never mistake a pending envelope for an applied
// one. At each handover a is held by a gate with a batch and more
// deliveries in hand, so it always has something to hand over, however
// fast the machine; the server's Nak advisories prove it handed them back.
func TestHandoverUnderBacklog(t *testing.T) {
	const sessions = 60
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv)
	js := natstest.JetStream(t, nc)
	cfg := testConfig()
	cfg.BatchSize = 16
	cfg.Topology.AckWait = 5 * time.Minute
	if err := topology.Ensure(context.Background(), js, cfg.Topology); err != nil {
		t.Fatal(err)
	}
	naks := countNaks(t, nc)
	total, states := publishSessions(t, js, "backlog", sessions, nil)
	a, b := cfg, cfg
	a.InstanceID, b.InstanceID = "a", "b"
	held := newGate()
	a.Observer = held
	start := time.Now()
	first := startProcessor(t, srv, a)
	// Registered after the processor's own cleanup, so it runs first:
	// a held worker would keep a from stopping.
	t.Cleanup(held.open)
	testwait.Eventually(t, waitFor, time.Millisecond, "a never decided a batch", func() bool { return held.held.Load() > 0 })

	// The first handover: b joins while a is held in its backlog. a lets
	// go of b's partitions once its workers finish the batch in hand.
	startProcessor(t, srv, b)
	testwait.Eventually(t, waitFor, 5*time.Millisecond, "b never joined the member set", func() bool {
		_, ok := owners(t, js)["b"]
		return ok
	})
	held.open()
	split := awaitOwners(t, js, cfg.Topology.Partitions, "a", "b")
	testwait.Eventually(t, waitFor, 5*time.Millisecond, "a handed nothing back of the partitions b took", func() bool { return naks(split["b"]) > 0 })

	// The second: a leaves while held, a second backlog behind the batch
	// in hand. It is told to stop before it is let go, so that it cannot
	// decide the backlog first.
	held.shut()
	more, moreStates := publishSessions(t, js, "more", sessions, nil)
	total += more
	states = append(states, moreStates...)
	testwait.Eventually(t, waitFor, time.Millisecond, "a was never held with the second backlog published", func() bool { return held.held.Load() > 0 })
	first.cancel()
	held.open()
	first.stop()
	testwait.Eventually(t, waitFor, 5*time.Millisecond, "a handed nothing back when leaving", func() bool { return naks(split["a"]) > 0 })

	awaitDecided(t, js, total, time.Minute, 20*time.Millisecond)
	// Measured before the checks, which take time of their own. Anything
	// decided only after its ack wait was delivered after start.
	took := time.Since(start)
	checkExactlyOnce(t, js, total)
	checkStates(t, js, states)
	if took >= cfg.Topology.AckWait {
		t.Errorf("deciding the backlogs over two handovers took %s, as long as the ack wait", took)
	}
	t.Logf("a decided %d before leaving; %d in all in %s", first.p.Stats().Processed.Load(), total, took.Round(time.Millisecond))
}

// TestFakeMembersAreIgnored is the fake-member attack: records written into
// ACS_PROCESSORS by someone without the state key — plain JSON claiming
// partitions, or sealed with another key — and kept alive. The real
// instance keeps every partition, counts each fake record and alerts on
// it; before records were sealed, three fakes made the only processor give
// up 12 of 16 partitions.
func TestFakeMembersAreIgnored(t *testing.T) {
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv)
	js := natstest.JetStream(t, nc)
	ctx := context.Background()
	cfg := testConfig()
	cfg.Topology.Partitions = 8
	cfg.Topology.MemberTTL = 2 * time.Second
	cfg.InstanceID = "real"
	r := startProcessor(t, srv, cfg)
	awaitOwners(t, js, cfg.Topology.Partitions, "real")
	kv, err := js.KeyValue(ctx, acs.MembersBucket)
	if err != nil {
		t.Fatal(err)
	}
	alerts, err := nc.SubscribeSync("acs.alerts._system.critical." + stream.AlertMemberRejected)
	if err != nil {
		t.Fatal(err)
	}
	otherKey := make([]byte, turnstate.StateKeySize)
	other, err := turnstate.NewSealer(otherKey)
	if err != nil {
		t.Fatal(err)
	}
	fakes := map[string][]byte{}
	for _, id := range []string{"fake-1", "fake-2"} {
		fakes[id], _ = json.Marshal(membership.Member{ID: id, Started: time.Now(), Owns: []int{0, 1, 2, 3}})
	}
	sealedElsewhere, _ := json.Marshal(membership.Member{ID: "fake-3", Started: time.Now(), Owns: []int{4, 5}})
	fakes["fake-3"] = other.Seal("member", "fake-3", sealedElsewhere)
	// Kept alive for a few of the real instance's ticks: the sleep is a
	// fake member's heartbeat, time passing, not a wait for a signal.
	for range 5 {
		for id, v := range fakes {
			if _, err := kv.Put(ctx, id, v); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(cfg.Topology.MemberTTL / 4)
	}
	e, err := kv.Get(ctx, "real")
	if err != nil {
		t.Fatal(err)
	}
	var self membership.Member
	if err := json.Unmarshal(turnstate.RecordOf(e.Value()), &self); err != nil {
		t.Fatal(err)
	}
	if len(self.Owns) != cfg.Topology.Partitions {
		t.Fatalf("the real instance holds %v with fake members around, want all %d partitions", self.Owns, cfg.Topology.Partitions)
	}
	if n := r.p.Stats().MembersRejected.Load(); n != uint64(len(fakes)) {
		t.Fatalf("%d fake members counted, want %d (one per key, however often it is kept alive)", n, len(fakes))
	}
	seen := map[string]bool{}
	for {
		m, err := alerts.NextMsg(time.Second)
		if errors.Is(err, nats.ErrTimeout) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for id := range fakes {
			if strings.Contains(string(m.Data), `"key":"`+id+`"`) {
				if seen[id] {
					t.Errorf("a second alert for %s", id)
				}
				seen[id] = true
			}
		}
	}
	if len(seen) != len(fakes) {
		t.Fatalf("alerts for %v, want one for each of %d fakes", seen, len(fakes))
	}
}
