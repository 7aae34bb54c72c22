package stream_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/scenario"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
)

// TestGroupsTakePartitionsTogether: with one group loop held (by the
// observer, after a group's effects are durable), the other partitions'
// batches wait for it and are then applied as one group; everything is
// still decided exactly once, in each session's order.
func TestGroupsTakePartitionsTogether(t *testing.T) {
	srv := natstest.RunServer(t)
	held := newGate()
	cfg := testConfig()
	cfg.GroupLoops = 1
	cfg.Observer = held
	r := startProcessor(t, srv, cfg)
	js, err := jetstream.New(natstest.Connect(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	waitForConsumers(t, js, cfg.Topology.Partitions+1)
	stats := r.p.Stats()
	total := 0
	var states []scenario.ExpectedState
	// Each round holds the loop on its first group while the sessions'
	// other partitions deliver; one round suffices unless a worker was
	// slow to offer its batch before the gate opened.
	for round := 0; stats.GroupedBatches.Load() <= stats.Groups.Load(); round++ {
		if round == 20 {
			t.Fatalf("no group took more than one partition's batch in %d rounds: %d groups, %d batches", round, stats.Groups.Load(), stats.GroupedBatches.Load())
		}
		held.shut()
		n, st := publishSessions(t, js, fmt.Sprintf("group-%d", round), 8, nil)
		total += n
		states = append(states, st...)
		if err := testwait.Wait(30*time.Second, 5*time.Millisecond, func() error {
			if held.held.Load() == 0 {
				return fmt.Errorf("no group held yet")
			}
			busy := 0
			for i := range cfg.Topology.Partitions {
				c, err := js.Consumer(ctx, acs.HooksStream, acs.PartitionConsumer(i))
				if err != nil {
					return err
				}
				if c.CachedInfo().NumAckPending > 0 {
					busy++
				}
			}
			if busy < 2 {
				return fmt.Errorf("%d partitions with deliveries in hand", busy)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		held.open()
		awaitDecided(t, js, total, 60*time.Second, 10*time.Millisecond)
	}
	checkExactlyOnce(t, js, total)
	checkStates(t, js, states)
	if e, b := stats.GroupedEnvelopes.Load(), stats.GroupedBatches.Load(); e < b {
		t.Errorf("%d envelopes in %d grouped batches", e, b)
	}
	if f := stats.GroupFallbacks.Load(); f != 0 {
		t.Errorf("%d group attempts fell back to applying alone", f)
	}
}
