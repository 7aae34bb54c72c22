package stream_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/natstest"
	"github.com/turnguard/turnguard/internal/stream"
)

// BenchmarkProcessorBacklog measures end-to-end processing on an embedded
// server: b.N envelopes (the example session, over many sessions) are put in
// ACS_HOOKS first, then a processor with the default configuration decides
// them all. ns/op is the wall time per decided envelope, publishing excluded.
func BenchmarkProcessorBacklog(b *testing.B) {
	files, _ := filepath.Glob("../../examples/session/[0-9][0-9]-*.json")
	var bodies []string
	var hooks []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		bodies = append(bodies, string(raw))
		hooks = append(hooks, strings.TrimSuffix(filepath.Base(f)[3:], ".json"))
	}
	const sid = "7f3c2a9e-4b1d-4e8a-9c6f-2d5e8a1b3c70"
	srv := natstest.RunServer(b)
	nc := natstest.Connect(b, srv)
	js, _ := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	ctx := context.Background()
	if err := stream.Ensure(ctx, js, stream.DefaultTopology()); err != nil {
		b.Fatal(err)
	}
	for i := range b.N {
		session := fmt.Sprintf("00000000-0000-4000-8000-%012d", i/len(bodies))
		k := i % len(bodies)
		if _, err := js.PublishAsync("acs.hooks.default."+session+"."+hooks[k], []byte(strings.ReplaceAll(bodies[k], sid, session))); err != nil {
			b.Fatal(err)
		}
	}
	<-js.PublishAsyncComplete()
	b.ResetTimer()
	start := time.Now()
	r := startProcessor(b, srv, stream.DefaultConfig())
	for countMsgs(b, js, stream.DecisionsStream) < b.N {
		time.Sleep(2 * time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	r.stop()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "envelopes/s")
}
