package stream_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/natstest"
	"github.com/turnguard/turnguard/internal/stream"
)

// TestStatusAndBacklogs: a lone instance owns every partition, in order,
// and the consumer of malformed subjects last; Backlogs asks the server
// about each of them, and Status agrees with Ready.
func TestStatusAndBacklogs(t *testing.T) {
	srv := natstest.RunServer(t)
	js, _ := jetstream.New(natstest.Connect(t, srv))
	cfg := testConfig()
	cfg.StuckAfter = time.Second
	r := startProcessor(t, srv, cfg)
	if s := r.p.Status(); s.StuckAfter != time.Second || s.Partitions != cfg.Topology.Partitions {
		t.Fatalf("status before Run settles: %+v", s)
	}
	waitForConsumers(t, js, cfg.Topology.Partitions+1)
	var s stream.Status
	deadline := time.Now().Add(waitFor)
	for s = r.p.Status(); (!s.Running || s.Owned() < cfg.Topology.Partitions) && time.Now().Before(deadline); s = r.p.Status() {
		time.Sleep(20 * time.Millisecond)
	}
	if !s.Running || s.Owned() != cfg.Topology.Partitions || len(s.Consumers) != cfg.Topology.Partitions+1 {
		t.Fatalf("status: %+v", s)
	}
	for i, c := range s.Consumers {
		want, wantPartition := stream.PartitionConsumer(i), i
		if i == cfg.Topology.Partitions {
			want, wantPartition = stream.UnroutedConsumer, -1
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
	// A consumer that is gone is left out rather than reported empty.
	if err := js.DeleteConsumer(context.Background(), stream.HooksStream, stream.PartitionConsumer(2)); err != nil {
		t.Fatal(err)
	}
	for _, x := range r.p.Backlogs(context.Background()) {
		if x.Consumer == stream.PartitionConsumer(2) {
			t.Errorf("a backlog for the deleted consumer: %+v", x)
		}
	}
	err := awaitNotReady(t, r.p, stream.PartitionConsumer(2))
	if got := r.p.Status(); len(got.Stuck()) != 1 || got.Stuck()[0].Consumer != stream.PartitionConsumer(2) || got.Err().Error() != err.Error() {
		t.Fatalf("stuck status %+v, Err %v; Ready %v", got.Stuck(), got.Err(), err)
	}
}
