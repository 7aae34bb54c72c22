package stream_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
)

// TestStatusAndBacklogs: a lone instance owns every partition, in order,
// and the consumer of malformed subjects last; Backlogs asks the server
// about each of them, and Status agrees with Ready.
func TestStatusAndBacklogs(t *testing.T) {
	srv := natstest.RunServer(t)
	js := natstest.JetStream(t, natstest.Connect(t, srv))
	cfg := testConfig()
	cfg.StuckAfter = time.Second
	r := startProcessor(t, srv, cfg)
	if s := r.p.Status(); s.StuckAfter != time.Second || s.Partitions != cfg.Topology.Partitions {
		t.Fatalf("status before Run settles: %+v", s)
	}
	waitForConsumers(t, js, cfg.Topology.Partitions+1)
	var s stream.Status
	// Not failing here: the check below prints the status.
	_ = testwait.Wait(waitFor, 20*time.Millisecond, func() error {
		if s = r.p.Status(); !s.Running || s.Owned() < cfg.Topology.Partitions {
			return errors.New("not running with every partition")
		}
		return nil
	})
	if !s.Running || s.Owned() != cfg.Topology.Partitions || len(s.Consumers) != cfg.Topology.Partitions+1 {
		t.Fatalf("status: %+v", s)
	}
	for i, c := range s.Consumers {
		want, wantPartition := acs.PartitionConsumer(i), i
		if i == cfg.Topology.Partitions {
			want, wantPartition = acs.UnroutedConsumer, -1
		}
		if c.Consumer != want || c.Partition != wantPartition || c.Stuck || c.Failing != 0 {
			t.Errorf("consumer %d: %+v, want %s (partition %d), healthy", i, c, want, wantPartition)
		}
	}
	if err := s.Err(); err != nil || r.p.Ready() != nil {
		t.Fatalf("healthy status: %v, Ready %v", err, r.p.Ready())
	}
	b := r.p.Backlogs(context.Background())
	if len(b) != len(s.Consumers) {
		t.Fatalf("backlogs: %+v", b)
	}
	for i, c := range s.Consumers {
		if b[i].Consumer != c.Consumer || b[i].Partition != c.Partition {
			t.Errorf("backlog %d: %+v, want consumer %s", i, b[i], c.Consumer)
		}
	}
	// A consumer edited to consume nothing of its partition decides
	// nothing without failing; the periodic check of the assets finds it.
	ctx := context.Background()
	c, err := js.Consumer(ctx, acs.HooksStream, acs.PartitionConsumer(2))
	if err != nil {
		t.Fatal(err)
	}
	edited := c.CachedInfo().Config
	edited.FilterSubject = "acs.part.2.nobody.>"
	if _, err := js.UpdateConsumer(ctx, acs.HooksStream, edited); err != nil {
		t.Fatal(err)
	}
	err = awaitNotReady(t, r.p, acs.PartitionConsumer(2))
	if got := r.p.Status(); !strings.Contains(got.Assets, "filter subject") || got.Err().Error() != err.Error() {
		t.Fatalf("status %+v, Err %v; Ready %v", got, got.Err(), err)
	}
}
