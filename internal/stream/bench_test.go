package stream_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/metrics"
	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
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

// BenchmarkFirstEnvelopeLookup is what a session with no state and no
// decision costs more since purges are looked for: one look-up of the
// first envelope of the session's subjects in ACS_HOOKS (a direct get by
// subject, next_by_subj with a wildcard), here in a stream of 100,000
// envelopes of 20,000 sessions, for a session found at the stream's end
// (a new one: its own first envelope), against a read of the last message
// of one subject.
func BenchmarkFirstEnvelopeLookup(b *testing.B) {
	srv := natstest.RunServer(b)
	nc := natstest.Connect(b, srv)
	js := natstest.JetStream(b, nc, jetstream.WithPublishAsyncMaxPending(4096))
	ctx := context.Background()
	if err := topology.Ensure(ctx, js, topology.Default()); err != nil {
		b.Fatal(err)
	}
	const sessions, each = 20_000, 5
	data := examples.Session(examples.SessionID)[0].Data
	for i := range sessions * each {
		sid := fmt.Sprintf("00000000-0000-4000-8000-%012d", i%sessions)
		if _, err := js.PublishAsync(acs.InboundPrefix+".default."+sid+".toolCallRequest", data); err != nil {
			b.Fatal(err)
		}
		if i%2048 == 2047 {
			<-js.PublishAsyncComplete()
		}
	}
	<-js.PublishAsyncComplete()
	hooks, err := js.Stream(ctx, acs.HooksStream)
	if err != nil {
		b.Fatal(err)
	}
	sid := fmt.Sprintf("00000000-0000-4000-8000-%012d", 99_999_999)
	if _, err := js.Publish(ctx, acs.InboundPrefix+".default."+sid+".sessionStart", data); err != nil {
		b.Fatal(err)
	}
	filter := acs.StoredFilter("default", sid, "*")
	b.Run("first envelope", func(b *testing.B) {
		for range b.N {
			if _, err := hooks.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(filter)); err != nil {
				b.Fatal(err)
			}
		}
	})
	// For comparison, the kind of read the newest-decision look-up is:
	// the last message of one literal subject.
	m, err := hooks.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(filter))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("last by subject", func(b *testing.B) {
		for range b.N {
			if _, err := hooks.GetLastMsgForSubject(ctx, m.Subject); err != nil {
				b.Fatal(err)
			}
		}
	})
}
