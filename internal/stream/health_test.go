package stream_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/natstest"
	"github.com/turnguard/turnguard/internal/stream"
)

// awaitNotReady waits until Ready fails with an error mentioning want.
func awaitNotReady(t *testing.T, p *stream.Processor, want string) error {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	var err error
	for time.Now().Before(deadline) {
		if err = p.Ready(); err != nil && strings.Contains(err.Error(), want) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("Ready() = %v, want an error naming %q", err, want)
	return nil
}

// TestReadinessReportsStuckPartitions: deleting a partition consumer, or the
// state bucket, under a running processor used to leave it "ready" while a
// partition decided nothing. Now Ready fails, naming the partition and why,
// once it has been failing for StuckAfter.
func TestReadinessReportsStuckPartitions(t *testing.T) {
	for _, tc := range []struct {
		name string
		// break_ breaks the processor; it returns what Ready must name.
		break_ func(t *testing.T, js jetstream.JetStream) string
	}{
		{"partition consumer deleted", func(t *testing.T, js jetstream.JetStream) string {
			if err := js.DeleteConsumer(context.Background(), stream.HooksStream, stream.PartitionConsumer(1)); err != nil {
				t.Fatal(err)
			}
			return stream.PartitionConsumer(1)
		}},
		{"state bucket deleted", func(t *testing.T, js jetstream.JetStream) string {
			if err := js.DeleteKeyValue(context.Background(), stream.StateBucket); err != nil {
				t.Fatal(err)
			}
			// A session's envelope now cannot be made durable.
			sid := examples.TaintSessionID
			e := examples.Session(sid)[0]
			if _, err := js.Publish(context.Background(), e.Subject("default", sid), e.Data); err != nil {
				t.Fatal(err)
			}
			return "stuck"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := natstest.RunServer(t)
			js, _ := jetstream.New(natstest.Connect(t, srv))
			cfg := testConfig()
			cfg.StuckAfter = time.Second
			r := startProcessor(t, srv, cfg)
			waitForConsumers(t, js, cfg.Topology.Partitions+1)
			deadline := time.Now().Add(waitFor)
			for r.p.Ready() != nil && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if err := r.p.Ready(); err != nil {
				t.Fatalf("not ready after start: %v", err)
			}
			want := tc.break_(t, js)
			err := awaitNotReady(t, r.p, want)
			t.Logf("Ready: %v", err)
		})
	}
}
