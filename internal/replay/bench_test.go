package replay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/replay"
	"github.com/turnguard/turnguard/internal/testkit/guardiantest"
)

// benchSessions sessions of the README's example session (8 envelopes
// each) make the history the replay benchmarks read: the workload of
// stream's BenchmarkProcessorBacklog, so the two compare.
const benchSessions = 2500

func recordBenchHistory(b *testing.B) *recorder {
	b.Helper()
	rec := newRecorder(b, guardiantest.DefaultRules(b))
	for i := range benchSessions {
		session := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		for _, e := range examples.Session(session) {
			rec.publish(e.Subject("default", session), e.Data)
		}
	}
	rec.finish()
	return rec
}

// BenchmarkReplayRun measures `replay run` over a recorded history: every
// envelope read from ACS_HOOKS, decided again, and compared with its
// recorded decision read from ACS_DECISIONS. The metric is envelopes
// re-evaluated per second, wall time, everything included.
func BenchmarkReplayRun(b *testing.B) {
	rec := recordBenchHistory(b)
	src := rec.source()
	g, rs := rec.guardian(), guardiantest.DefaultRules(b)
	r := wholeRange(b, src)
	total := int(r.To - r.From + 1)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		rep, err := replay.BackTest(context.Background(), src, g, rs, r, replay.Selection{Tenant: "default"}, replay.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Compared != total || rep.Differs() {
			b.Fatalf("compared %d of %d, %d changes", rep.Compared, total, len(rep.Changes))
		}
	}
	b.ReportMetric(float64(total*b.N)/time.Since(start).Seconds(), "envelopes/s")
}
