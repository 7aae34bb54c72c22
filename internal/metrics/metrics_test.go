package metrics

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/stream"
)

// fakeSource is a processor as the metrics see it.
type fakeSource struct {
	stats    stream.Stats
	status   stream.Status
	backlogs []stream.Backlog
}

func (f *fakeSource) Stats() *stream.Stats                      { return &f.stats }
func (f *fakeSource) Status() stream.Status                     { return f.status }
func (f *fakeSource) Backlogs(context.Context) []stream.Backlog { return f.backlogs }

// healthy is a running processor owning partitions 0 and 2 of 4, and the
// consumer of malformed subjects.
func healthy() *fakeSource {
	f := &fakeSource{status: stream.Status{Running: true, Partitions: 4, StuckAfter: 10 * time.Second, Consumers: []stream.ConsumerStatus{
		{Consumer: "turnguard-p000", Partition: 0},
		{Consumer: "turnguard-p002", Partition: 2},
		{Consumer: "turnguard-unrouted", Partition: -1},
	}}, backlogs: []stream.Backlog{
		{Consumer: "turnguard-p000", Partition: 0, Pending: 7, AckPending: 2},
		{Consumer: "turnguard-p002", Partition: 2},
	}}
	f.stats.Processed.Add(42)
	f.stats.DeadLettered.Add(3)
	f.stats.MembersRejected.Add(1)
	return f
}

func scrape(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, err := io.ReadAll(rec.Result().Body)
	if err != nil {
		t.Fatal(err)
	}
	return rec.Code, string(body)
}

func TestCollectorValues(t *testing.T) {
	stuck := healthy()
	stuck.status.Consumers[1].Failing, stuck.status.Consumers[1].Stuck, stuck.status.Consumers[1].Why = 12*time.Second, true, "consumer gone"
	stopped := healthy()
	stopped.status.Running, stopped.status.Consumers = false, nil
	for _, tc := range []struct {
		name      string
		src       *fakeSource
		connected bool
		want      string
		names     []string
	}{
		{"ready", healthy(), true, `
# HELP turnguard_envelopes_processed_total Inbound envelopes whose effects were made durable and that were acknowledged, redeliveries included.
# TYPE turnguard_envelopes_processed_total counter
turnguard_envelopes_processed_total 42
# HELP turnguard_dead_letters_total Refusals sent to ACS_DLQ (a retried batch may count one twice; the stream keeps one).
# TYPE turnguard_dead_letters_total counter
turnguard_dead_letters_total 3
# HELP turnguard_members_rejected_total Records of the member bucket left out of the member set because they did not verify (fake members).
# TYPE turnguard_members_rejected_total counter
turnguard_members_rejected_total 1
# HELP turnguard_ready 1 when the processor is ready (what GET /readyz answers 200 to): consuming, connected, no owned consumer stuck; else 0.
# TYPE turnguard_ready gauge
turnguard_ready 1
# HELP turnguard_partitions Partitions of ACS_HOOKS in the topology, across all instances.
# TYPE turnguard_partitions gauge
turnguard_partitions 4
# HELP turnguard_partitions_owned Partitions assigned to this instance now.
# TYPE turnguard_partitions_owned gauge
turnguard_partitions_owned 2
# HELP turnguard_consumers_stuck Consumers this instance owns that have been failing for at least the stuck threshold (partitions and the consumer of malformed subjects); readiness fails while it is above 0.
# TYPE turnguard_consumers_stuck gauge
turnguard_consumers_stuck 0
# HELP turnguard_consumer_pending_messages Messages of an owned consumer not yet delivered, as the server counts them at scrape time.
# TYPE turnguard_consumer_pending_messages gauge
turnguard_consumer_pending_messages{consumer="turnguard-p000"} 7
turnguard_consumer_pending_messages{consumer="turnguard-p002"} 0
# HELP turnguard_consumer_ack_pending_messages Messages of an owned consumer delivered and not yet acknowledged, as the server counts them at scrape time.
# TYPE turnguard_consumer_ack_pending_messages gauge
turnguard_consumer_ack_pending_messages{consumer="turnguard-p000"} 2
turnguard_consumer_ack_pending_messages{consumer="turnguard-p002"} 0
# HELP turnguard_rules_info The rule set in force: always 1, with its name and revision as labels.
# TYPE turnguard_rules_info gauge
turnguard_rules_info{revision="sha256:0123456789abcdef",ruleset="test"} 1
`, []string{"turnguard_envelopes_processed_total", "turnguard_dead_letters_total", "turnguard_members_rejected_total", "turnguard_ready",
			"turnguard_partitions", "turnguard_partitions_owned", "turnguard_consumers_stuck", "turnguard_consumer_pending_messages",
			"turnguard_consumer_ack_pending_messages", "turnguard_rules_info"}},
		{"a partition stuck", stuck, true, `
# HELP turnguard_ready 1 when the processor is ready (what GET /readyz answers 200 to): consuming, connected, no owned consumer stuck; else 0.
# TYPE turnguard_ready gauge
turnguard_ready 0
# HELP turnguard_consumers_stuck Consumers this instance owns that have been failing for at least the stuck threshold (partitions and the consumer of malformed subjects); readiness fails while it is above 0.
# TYPE turnguard_consumers_stuck gauge
turnguard_consumers_stuck 1
# HELP turnguard_consumer_failing_seconds How long an owned consumer's current failure streak has lasted (0: healthy).
# TYPE turnguard_consumer_failing_seconds gauge
turnguard_consumer_failing_seconds{consumer="turnguard-p000"} 0
turnguard_consumer_failing_seconds{consumer="turnguard-p002"} 12
turnguard_consumer_failing_seconds{consumer="turnguard-unrouted"} 0
`, []string{"turnguard_ready", "turnguard_consumers_stuck", "turnguard_consumer_failing_seconds"}},
		{"disconnected", healthy(), false, `
# HELP turnguard_ready 1 when the processor is ready (what GET /readyz answers 200 to): consuming, connected, no owned consumer stuck; else 0.
# TYPE turnguard_ready gauge
turnguard_ready 0
# HELP turnguard_nats_connected 1 while the processor's NATS connection is up, else 0.
# TYPE turnguard_nats_connected gauge
turnguard_nats_connected 0
`, []string{"turnguard_ready", "turnguard_nats_connected"}},
		{"stopped: no backlogs asked", stopped, true, `
# HELP turnguard_ready 1 when the processor is ready (what GET /readyz answers 200 to): consuming, connected, no owned consumer stuck; else 0.
# TYPE turnguard_ready gauge
turnguard_ready 0
# HELP turnguard_partitions_owned Partitions assigned to this instance now.
# TYPE turnguard_partitions_owned gauge
turnguard_partitions_owned 0
`, []string{"turnguard_ready", "turnguard_partitions_owned", "turnguard_consumer_pending_messages"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := policy.NewSource(&policy.Set{Name: "test", Revision: "sha256:0123456789abcdef"})
			c := newCollector(tc.src, Options{Rules: rs, Connected: func() bool { return tc.connected }, BacklogTimeout: time.Second})
			if err := testutil.CollectAndCompare(c, strings.NewReader(tc.want), tc.names...); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestMetricNames checks the names, types and help strings against
// Prometheus' conventions (promlint).
func TestMetricNames(t *testing.T) {
	m := New()
	rs := policy.NewSource(&policy.Set{Name: "test", Revision: "sha256:0123456789abcdef"})
	if err := m.Attach(healthy(), Options{Rules: rs, Connected: func() bool { return true }}); err != nil {
		t.Fatal(err)
	}
	problems, err := testutil.GatherAndLint(m.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, Namespace+"_") {
			t.Errorf("%s: %s", p.Metric, p.Text)
		}
	}
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, metric := range mf.GetMetric() {
			for _, l := range metric.GetLabel() {
				switch l.GetName() {
				case "consumer", "ruleset", "revision", "hook", "decision", "code", "reason", "rule", "severity", "result":
				default:
					if strings.HasPrefix(mf.GetName(), Namespace+"_") {
						t.Errorf("%s has label %q: turnguard's labels are bounded (consumer, ruleset, revision, hook, decision, code, reason, rule, severity, result)", mf.GetName(), l.GetName())
					}
				}
			}
		}
	}
}

func TestHandler(t *testing.T) {
	m := New()
	h := m.Handler()
	if code, body := scrape(t, h, "/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("/healthz before the processor: %d %q", code, body)
	}
	if code, body := scrape(t, h, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "starting") {
		t.Fatalf("/readyz before the processor: %d %q", code, body)
	}
	// The observer's histograms and the reload counts are there from the
	// start; nothing read from a processor is.
	if code, body := scrape(t, h, "/metrics"); code != http.StatusOK || !strings.Contains(body, "go_goroutines") || strings.Contains(body, "turnguard_ready") ||
		strings.Contains(body, "turnguard_envelopes_processed_total") {
		t.Fatalf("/metrics before the processor: %d\n%s", code, body)
	}

	src := healthy()
	connected := true
	if err := m.Attach(src, Options{Connected: func() bool { return connected }}); err != nil {
		t.Fatal(err)
	}
	if err := m.Attach(src, Options{}); err == nil {
		t.Fatal("a second Attach succeeded")
	}
	for _, tc := range []struct {
		name     string
		change   func()
		wantCode int
		wantBody string
	}{
		{"ready", func() {}, http.StatusOK, "ready\n"},
		{"stuck", func() {
			src.status.Consumers[0].Stuck, src.status.Consumers[0].Failing, src.status.Consumers[0].Why = true, 11*time.Second, "consumer gone"
		}, http.StatusServiceUnavailable, "1 partition(s) stuck: turnguard-p000 failing for 11s: consumer gone\n"},
		{"disconnected", func() { connected = false }, http.StatusServiceUnavailable, "not connected to NATS\n"},
		{"stopped", func() { connected, src.status.Running = true, false }, http.StatusServiceUnavailable, "the processor is not consuming\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.change()
			if code, body := scrape(t, h, "/readyz"); code != tc.wantCode || body != tc.wantBody {
				t.Fatalf("/readyz: %d %q, want %d %q", code, body, tc.wantCode, tc.wantBody)
			}
		})
	}
	if code, body := scrape(t, h, "/metrics"); code != http.StatusOK || !strings.Contains(body, "turnguard_envelopes_processed_total 42") ||
		!strings.Contains(body, "process_") {
		t.Fatalf("/metrics: %d\n%s", code, body)
	}
	if code, _ := scrape(t, h, "/nothing"); code != http.StatusNotFound {
		t.Fatalf("/nothing: %d", code)
	}
}
