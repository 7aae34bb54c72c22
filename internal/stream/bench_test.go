package stream_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/acs"
	"github.com/turnguard/turnguard/internal/metrics"
	"github.com/turnguard/turnguard/internal/natstest"
	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/internal/testwait"
	"github.com/turnguard/turnguard/internal/topology"
)

// BenchmarkProcessorBacklog measures end-to-end processing on an embedded
// server: b.N envelopes (the example session, over many sessions) are put in
// ACS_HOOKS first, then a processor with the default configuration decides
// them all. ns/op is the wall time per decided envelope, publishing excluded.
func BenchmarkProcessorBacklog(b *testing.B) { benchBacklog(b, stream.DefaultConfig()) }

// BenchmarkProcessorBacklogObserved is BenchmarkProcessorBacklog with the
// metrics observer (processor --metrics) set.
func BenchmarkProcessorBacklogObserved(b *testing.B) {
	cfg := stream.DefaultConfig()
	cfg.Observer = metrics.New().Observer()
	benchBacklog(b, cfg)
}

func benchBacklog(b *testing.B, cfg stream.Config) {
	srv := natstest.RunServer(b)
	nc := natstest.Connect(b, srv)
	js := natstest.JetStream(b, nc, jetstream.WithPublishAsyncMaxPending(4096))
	ctx := context.Background()
	if err := topology.Ensure(ctx, js, topology.Default()); err != nil {
		b.Fatal(err)
	}
	var envs []examples.Envelope
	session := ""
	for i := range b.N {
		if len(envs) == 0 {
			session = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
			envs = examples.Session(session)
		}
		if _, err := js.PublishAsync(envs[0].Subject("default", session), envs[0].Data); err != nil {
			b.Fatal(err)
		}
		envs = envs[1:]
	}
	<-js.PublishAsyncComplete()
	b.ResetTimer()
	start := time.Now()
	r := startProcessor(b, srv, cfg)
	// The poll interval bounds the error of the measurement.
	testwait.CheckFor(b, 10*time.Minute, 2*time.Millisecond, func() error {
		if got := natstest.CountMsgs(b, js, acs.DecisionsStream); got < b.N {
			return fmt.Errorf("%d of %d decisions", got, b.N)
		}
		return nil
	})
	elapsed := time.Since(start)
	b.StopTimer()
	r.stop()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "envelopes/s")
}
