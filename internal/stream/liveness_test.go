package stream_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
)

// TestReplayedMemberRecordExpires is issue 23's probe of liveness: an
// instance dies and someone who can have the server store a message where
// they like (a direct get replied to the record's own KV subject) keeps
// putting its last record back. The record verifies — a processor sealed
// it — but its heartbeat no longer advances, so the survivor takes every
// partition within a bounded time, and its readiness says so while a
// partition is assigned to the silent member. Before liveness had a clock
// the replayed record kept half the partitions undecided, /readyz 200.
func TestReplayedMemberRecordExpires(t *testing.T) {
	for _, tc := range []struct {
		name string
		// earlier replays a record older than b's last: its beat must
		// not count either.
		earlier bool
	}{{"its last record", false}, {"an earlier record", true}} {
		t.Run(tc.name, func(t *testing.T) { replayMemberRecord(t, tc.earlier) })
	}
}

func replayMemberRecord(t *testing.T, earlier bool) {
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv)
	js := natstest.JetStream(t, nc)
	ctx := context.Background()
	cfg := testConfig()
	cfg.Topology.Partitions = 8
	cfg.Topology.MemberTTL = 2 * time.Second
	cfg.Topology.PinnedTTL = 3 * time.Second
	a, b := cfg, cfg
	a.InstanceID, b.InstanceID = "a", "b"
	first := startProcessor(t, srv, a)
	second := startProcessor(t, srv, b)
	split := awaitOwners(t, js, cfg.Topology.Partitions, "a", "b")
	kv, err := js.KeyValue(ctx, acs.MembersBucket)
	if err != nil {
		t.Fatal(err)
	}
	old, err := kv.Get(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if earlier {
		// b heartbeats again before it dies.
		testwait.CheckFor(t, waitFor, 20*time.Millisecond, func() error {
			if e, err := kv.Get(ctx, "b"); err != nil || e.Revision() == old.Revision() {
				return fmt.Errorf("b has not heartbeaten since revision %d (%v)", old.Revision(), err)
			}
			return nil
		})
	}
	// A crash: no goodbye.
	second.nc.Close()
	last, err := kv.Get(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	record := last.Value()
	if earlier {
		record = old.Value()
	}
	// The replay: the same bytes stored again, faster than the bucket's
	// TTL forgets them, until the test ends.
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	replayed := make(chan struct{})
	go func() {
		defer close(replayed)
		t := time.NewTicker(cfg.Topology.MemberTTL / 8)
		defer t.Stop()
		for {
			_, _ = kv.Put(rctx, "b", record)
			select {
			case <-rctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	defer func() { stop(); <-replayed }()
	killed := time.Now()
	// Readiness reflects the gap: partitions are assigned to b, which
	// does not renew.
	testwait.CheckFor(t, waitFor, 5*time.Millisecond, func() error {
		err := first.p.Ready()
		if err != nil && strings.Contains(err.Error(), `"b"`) {
			t.Logf("not ready %s after the kill: %v", time.Since(killed).Round(time.Millisecond), err)
			return nil
		}
		return fmt.Errorf("a's readiness never named the silent member b: %v", err)
	})
	// Bounded: the member TTL for b to be dead, a tick or two to take
	// over, the pinned TTL for the server to let go of b's pins.
	bound := cfg.Topology.MemberTTL + cfg.Topology.PinnedTTL + 2*time.Second
	testwait.CheckFor(t, bound, 20*time.Millisecond, func() error {
		st := first.p.Status()
		if st.Owned() != cfg.Topology.Partitions {
			return fmt.Errorf("a owns %d of %d partitions with b's record replayed (b held %v)", st.Owned(), cfg.Topology.Partitions, split["b"])
		}
		if err := first.p.Ready(); err != nil {
			return fmt.Errorf("a not ready after taking every partition: %w", err)
		}
		return nil
	})
	t.Logf("a took every partition and was ready %s after the kill", time.Since(killed).Round(time.Millisecond))
	// And decides in them: one session per partition.
	w := watch(t, nc)
	for i := range 16 {
		sid := fmt.Sprintf("00000000-0000-4000-8000-00000000b%03d", i)
		e := examples.Session(sid)[0]
		seq := natstest.Publish(t, js, e.Subject("default", sid), e.Data)
		w.await(t, seq, true, false)
	}
	if rctx.Err() != nil {
		t.Fatal("the replay stopped before the test did")
	}
}

// TestDeletedMembersBucketIsRecreated is issue 23's probe of the members
// bucket: deleting ACS_PROCESSORS under a running processor left it missing
// and readiness 200, and stopped every repair — the ownership loop gave up
// each tick before checking the assets — so a partition consumer deleted
// after it was never recreated. Both come back now, each alerted, and the
// processor decides in every partition again.
func TestDeletedMembersBucketIsRecreated(t *testing.T) {
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv)
	js := natstest.JetStream(t, nc)
	w := watch(t, nc)
	ops := watchOps(t, nc)
	cfg := testConfig()
	cfg.StuckAfter = time.Second
	cfg.InstanceID = "only"
	r := startProcessor(t, srv, cfg)
	waitForConsumers(t, js, cfg.Topology.Partitions+1)
	awaitReady(t, r.p)
	ctx := context.Background()
	sessions := make([]string, 8)
	for i := range sessions {
		sessions[i] = fmt.Sprintf("00000000-0000-4000-8000-0000000%05d", i)
		e := examples.Session(sessions[i])[0]
		w.await(t, natstest.Publish(t, js, e.Subject("default", sessions[i]), e.Data), true, false)
	}
	deleted := time.Now()
	if err := js.DeleteKeyValue(ctx, acs.MembersBucket); err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteConsumer(ctx, acs.HooksStream, acs.PartitionConsumer(1)); err != nil {
		t.Fatal(err)
	}
	for _, sid := range sessions {
		e := examples.Session(sid)[1]
		w.await(t, natstest.Publish(t, js, e.Subject("default", sid), e.Data), true, false)
	}
	ops.await(t, stream.AlertAssetRecreated, map[string]any{"asset": acs.MembersBucket})
	t.Logf("%s recreated and alerted within %s", acs.MembersBucket, time.Since(deleted).Round(time.Millisecond))
	ops.await(t, stream.AlertAssetRecreated, map[string]any{"asset": acs.HooksStream + "/" + acs.PartitionConsumer(1)})
	awaitOwners(t, js, cfg.Topology.Partitions, "only")
	awaitReady(t, r.p)
}
