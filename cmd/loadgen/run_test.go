package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/natsconn"
	"github.com/turnguard/turnguard/internal/testkit/syncbuf"
	"github.com/turnguard/turnguard/internal/traffic"
)

// runJSON runs loadgen with args, which must exit 0, and decodes its --json
// report; it returns the report and what the run wrote to standard output
// and standard error.
func runJSON[R any](t *testing.T, ctx context.Context, args ...string) (rep R, stdout, stderr string) {
	t.Helper()
	var out bytes.Buffer
	// The runs log from their publishers' goroutines.
	var errOut syncbuf.Buffer
	if code := run(ctx, args, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut.String(), out.String())
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, out.String())
	}
	return rep, out.String(), errOut.String()
}

// A short run against the embedded target: every envelope decided, exactly
// the expected denies and alerts, and a clean reconciliation; the text
// report says so too.
func TestRunReport(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, out, _ := runJSON[runReport](t, ctx, "run", "--duration", "10s", "--sessions", "300", "--max-envelopes", "6000", "--partitions", "4", "--seed", "7",
		"--baseline-messages", "20000", "--baseline-time", "500ms", "--json")
	c := rep.Reconcile
	if !c.OK || c.Mismatches != 0 || c.DecisionsRead != int(rep.Published) || c.DecisionsExpected != int(rep.Published) || c.StatesChecked != rep.SessionsStarted {
		t.Fatalf("reconcile %+v for %d published", c, rep.Published)
	}
	if rep.Published == 0 || rep.Observed.Decisions != rep.Published || rep.Expected.Decisions != rep.Published {
		t.Fatalf("published %d, observed %+v, expected %+v", rep.Published, rep.Observed, rep.Expected)
	}
	if rep.Expected.Denies == 0 || rep.Observed.Denies != rep.Expected.Denies ||
		rep.Expected.Alerts == 0 || rep.Observed.Alerts != rep.Expected.Alerts || c.AlertsRead != int(rep.Expected.Alerts) ||
		rep.Observed.AlertsByRule[traffic.RuleTaint] != rep.Expected.AlertsByRule[traffic.RuleTaint] {
		t.Fatalf("denies/alerts observed %+v, expected %+v, read %d", rep.Observed, rep.Expected, c.AlertsRead)
	}
	if rep.Latency.Count != rep.Published || rep.Latency.P50 <= 0 || rep.DecidedRate <= 0 || rep.PublishRate <= 0 {
		t.Fatalf("latency %+v, rates %.0f/%.0f", rep.Latency, rep.PublishRate, rep.DecidedRate)
	}
	if b := rep.Baseline; b == nil || b.Messages == 0 || b.PublishRate <= 0 || b.ConsumeRate <= 0 || b.DecidedVsConsume <= 0 ||
		b.PipelineMessages == 0 || b.PipelinePartitions != 4 || b.PipelineBatch != 256 || b.PipelineRate <= 0 || b.DecidedVsPipeline <= 0 {
		t.Fatalf("baseline %+v", rep.Baseline)
	}
	for _, field := range []string{`"pipeline_per_s"`, `"decided_vs_pipeline"`} {
		if !strings.Contains(out, field) {
			t.Errorf("JSON lacks %s:\n%s", field, out)
		}
	}
	if !strings.HasPrefix(rep.Tenant, "lg-7-") {
		t.Errorf("tenant %q", rep.Tenant)
	}
}

// The baselines measure the pipeline floor and leave nothing behind: no
// scratch stream (the consumers go with them) and no scratch bucket.
func TestRunPipelineFloor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tg, err := connect(natsconn.Target{})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.close()
	o := runOptions{duration: 5 * time.Second, sessions: 50, maxEnvelopes: 1000, seed: 5, tenant: "floor-test", settle: 20 * time.Second, grace: time.Second,
		partitions: 4, processors: 1, baseline: true, baselineMax: 5000, baselineFor: 2 * time.Second, replicas: 1}
	rep, _, err := executeRun(ctx, tg, o, zerolog.Nop(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	b := rep.Baseline
	if b == nil || b.PipelineMessages == 0 || b.PipelineRate <= 0 || b.DecidedVsPipeline <= 0 || !rep.Reconcile.OK {
		t.Fatalf("baseline %+v, reconcile %+v", b, rep.Reconcile)
	}
	var text bytes.Buffer
	printRun(&text, rep)
	if !strings.Contains(text.String(), "floor      ") || !strings.Contains(text.String(), "of the pipeline floor)") {
		t.Errorf("text report lacks the floor:\n%s", text.String())
	}

	js, err := jetstream.New(tg.nc)
	if err != nil {
		t.Fatal(err)
	}
	streams := js.StreamNames(ctx)
	var names []string
	for name := range streams.Name() {
		names = append(names, name)
	}
	if err := streams.Err(); err != nil {
		t.Fatal(err)
	}
	buckets := js.KeyValueStoreNames(ctx)
	for name := range buckets.Name() {
		names = append(names, "bucket "+name)
	}
	if err := buckets.Error(); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(names, acs.HooksStream) {
		t.Fatalf("streams and buckets %v lack %s: the listing is wrong", names, acs.HooksStream)
	}
	for _, name := range names {
		if strings.Contains(name, pipelineScratchPrefix) || strings.Contains(name, "LOADGEN_") {
			t.Errorf("scratch asset %s left behind (all: %v)", name, names)
		}
	}
}

// The text report of a run bounded by its envelope count (the duration only
// guards a slow machine), without baseline.
func TestRunText(t *testing.T) {
	var out bytes.Buffer
	// The run logs from its publishers' goroutines.
	var errOut syncbuf.Buffer
	args := []string{"run", "--duration", "20s", "--sessions", "50", "--max-envelopes", "1000", "--partitions", "2", "--baseline=false", "--tenant", "text-test"}
	if code := run(context.Background(), args, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut.String(), out.String())
	}
	for _, want := range []string{"tenant text-test", "published  1000 envelopes", "reconcile  OK", "decisions 1000 read / 1000 expected: 0 missing"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "baseline ") {
		t.Errorf("--baseline=false still measured a baseline:\n%s", out.String())
	}
}

// --backlog publishes first and only then starts the processors — here two
// instances sharing the partitions, without receipts — which decide the
// whole backlog exactly.
func TestRunBacklogWithTwoProcessors(t *testing.T) {
	rep, _, stderr := runJSON[runReport](t, context.Background(), "run", "--backlog", "--processors", "2", "--no-receipts", "--duration", "20s", "--sessions", "50",
		"--max-envelopes", "1500", "--partitions", "4", "--baseline=false", "--json")
	if !rep.Backlog || rep.Processors != 2 || !rep.Reconcile.OK || rep.Reconcile.DecisionsRead != 1500 || rep.DecidedRate <= 0 {
		t.Fatalf("report %+v", rep)
	}
	if !strings.Contains(stderr, "starting 2 processor(s) on the backlog") {
		t.Errorf("the processors did not start after publishing:\n%s", stderr)
	}
	// What publishing cost is reported apart from what deciding did.
	if p := rep.PublishProcess; p == nil || (runtime.GOOS == "linux" && (p.CPUBusy <= 0 || p.CPUBusy > 1 || p.CPUMicrosPer <= 0)) || rep.Process == nil {
		t.Errorf("publish_process %+v, process %+v", rep.PublishProcess, rep.Process)
	}
	var errOut syncbuf.Buffer
	code := run(context.Background(), []string{"run", "--nats-url", "nats://127.0.0.1:1", "--backlog"}, io.Discard, &errOut)
	if code == 0 || !strings.Contains(errOut.String(), "for the embedded target") {
		t.Errorf("--backlog with --nats-url: exit %d, %s", code, errOut.String())
	}
}

// Reconciliation notices a decision missing from ACS_DECISIONS and one
// decided twice (a second decision message for the same request under
// another Nats-Msg-Id), and reports them in its first mismatches.
func TestReconcileDetects(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tg, err := connect(natsconn.Target{})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.close()
	o := runOptions{duration: 5 * time.Second, sessions: 20, maxEnvelopes: 1200, seed: 3, tenant: "reconcile-test", settle: 20 * time.Second, grace: time.Second,
		partitions: 2, processors: 1}
	rep, lr, err := executeRun(ctx, tg, o, zerolog.Nop(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Reconcile.OK {
		t.Fatalf("clean run does not reconcile: %+v", rep.Reconcile)
	}

	// Two completed sessions: the last decision (sessionEnd, no alert) of
	// the first disappears, the second gets one decision twice.
	var done []*traffic.Session
	for _, r := range lr.records {
		if s := lr.gen.Session(r.index); r.published == len(s.Envelopes) {
			done = append(done, s)
		}
	}
	if len(done) < 2 {
		t.Fatalf("only %d sessions completed", len(done))
	}
	decisions, err := lr.js.Stream(ctx, acs.DecisionsStream)
	if err != nil {
		t.Fatal(err)
	}
	last, err := decisions.GetLastMsgForSubject(ctx, acs.DecisionSubject(o.tenant, done[0].ID))
	if err != nil {
		t.Fatal(err)
	}
	if err := decisions.DeleteMsg(ctx, last.Sequence); err != nil {
		t.Fatal(err)
	}
	twice := done[1].Envelopes[2]
	fake := nats.NewMsg(acs.DecisionSubject(o.tenant, done[1].ID))
	fake.Header.Set(acs.HdrMsgID, "fake-decision-1")
	fake.Header.Set(acs.HdrRequestID, twice.RequestID)
	fake.Header.Set(acs.HdrDecision, string(twice.Decision))
	fake.Data = []byte(`{}`)
	if _, err := lr.js.PublishMsg(ctx, fake); err != nil {
		t.Fatal(err)
	}

	got, err := reconcile(ctx, lr.js, expect(lr.gen, lr.records), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got.OK || got.Missing != 1 || got.Duplicated != 1 || got.Wrong != 0 || got.Unexpected != 0 || got.Mismatches != 2 {
		t.Fatalf("reconcile %+v", got)
	}
	listed := strings.Join(got.FirstMismatches, "\n")
	if !strings.Contains(listed, last.Header.Get(acs.HdrRequestID)+" (") || !strings.Contains(listed, twice.RequestID+": 2 decisions") {
		t.Fatalf("mismatches listed:\n%s", listed)
	}
}

// --await-decisions closes the loop: every envelope decided before its
// session's next is published, the run reconciles, and the report names
// the decided rate the live capacity, with the process's allocations per
// decided envelope.
func TestRunClosedLoop(t *testing.T) {
	rep, _, _ := runJSON[runReport](t, context.Background(), "run", "--await-decisions", "--duration", "20s", "--sessions", "40", "--max-envelopes", "1200", "--partitions", "2",
		"--baseline=false", "--json")
	if rep.Mode != modeClosed || !rep.Reconcile.OK || rep.Reconcile.DecisionsRead != 1200 || rep.Observed.Decisions != 1200 {
		t.Fatalf("mode %q, %d observed, reconcile %+v", rep.Mode, rep.Observed.Decisions, rep.Reconcile)
	}
	if rep.LiveCapacity <= 0 || rep.LiveCapacity != rep.DecidedRate || rep.AwaitTimeouts != 0 {
		t.Fatalf("live capacity %.0f, decided %.0f/s, %d waits timed out", rep.LiveCapacity, rep.DecidedRate, rep.AwaitTimeouts)
	}
	if rep.AllocsPerEnvelope <= 0 || rep.BytesPerEnvelope <= 0 {
		t.Fatalf("allocations per envelope %.1f, %.0f B", rep.AllocsPerEnvelope, rep.BytesPerEnvelope)
	}
	if p := rep.Process; p == nil || (runtime.GOOS == "linux" && (p.CPUBusy <= 0 || p.CPUBusy > 1 || p.CPUMicrosPer <= 0)) || p.GCShare < 0 || p.GCShare > 1 {
		t.Fatalf("the process's use: %+v", p)
	}
	var text bytes.Buffer
	printRun(&text, &rep)
	for _, want := range []string{"closed loop", ", the live capacity", "allocations", "of the CPU"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
}

// A slot waiting for a decision that never comes goes on after its bound
// and counts the wait; a decision arriving after that is not taken for
// the next envelope's.
func TestAwaitDecisionTimeout(t *testing.T) {
	obs := newObserver()
	l := &loader{obs: obs, log: zerolog.Nop(), awaitDecision: 20 * time.Millisecond}
	decided := make(chan struct{}, 1)
	timer := time.NewTimer(l.awaitDecision)
	defer timer.Stop()
	decision := func(rid string) *nats.Msg {
		m := nats.NewMsg("acs.decisions.t.s")
		m.Header.Set(acs.HdrRequestID, rid)
		return m
	}

	obs.expect("r1", time.Now(), decided)
	obs.onDecision(decision("r1"))
	if !l.awaitDecisionOf(context.Background(), "r1", decided, timer) || l.awaitTimeouts.Load() != 0 {
		t.Fatalf("decided request: %d timeouts", l.awaitTimeouts.Load())
	}

	obs.expect("r2", time.Now(), decided)
	if !l.awaitDecisionOf(context.Background(), "r2", decided, timer) || l.awaitTimeouts.Load() != 1 {
		t.Fatalf("undecided request: %d timeouts", l.awaitTimeouts.Load())
	}
	obs.onDecision(decision("r2"))
	if len(decided) != 0 || len(obs.awaited) != 0 {
		t.Fatalf("a late decision was signalled: %d pending, %d awaited", len(decided), len(obs.awaited))
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	obs.expect("r3", time.Now(), decided)
	if l.awaitDecisionOf(ctx, "r3", decided, timer) || len(obs.awaited) != 0 {
		t.Fatalf("an ended context went on waiting, or left %d awaited", len(obs.awaited))
	}
}

// loadgen curve: the live capacity, a small backlog, and two steps at
// fractions of the live capacity, every run reconciled.
func TestCurve(t *testing.T) {
	rep, _, stderr := runJSON[curveReport](t, context.Background(), "curve", "--duration", "1s", "--step-duration", "1s", "--points", "0.25,0.5", "--backlog-envelopes", "1000",
		"--sessions", "20", "--partitions", "2", "--no-receipts", "--json")
	if !rep.Reconciled || rep.Live == nil || rep.Live.Mode != modeClosed || rep.LiveCapacity <= 0 || rep.LiveCapacity != rep.Live.LiveCapacity {
		t.Fatalf("live %+v", rep.Live)
	}
	if rep.Backlog == nil || rep.Backlog.Mode != modeBacklog || rep.Backlog.Reconcile.DecisionsRead != 1000 || rep.BacklogCapacity <= 0 || rep.LiveVsBacklog <= 0 {
		t.Fatalf("backlog %+v, live vs backlog %.3f", rep.Backlog, rep.LiveVsBacklog)
	}
	if len(rep.Steps) != 2 {
		t.Fatalf("%d steps", len(rep.Steps))
	}
	for i, s := range rep.Steps {
		if want := []float64{0.25, 0.5}[i] * rep.LiveCapacity; s.Rate != want || !s.Reconciled || s.Published == 0 ||
			s.Latency.Count != s.Published || s.Latency.P99 <= 0 || s.DecidedRate <= 0 || s.AllocsPerEnvelope <= 0 || s.Process == nil {
			t.Errorf("step %d (rate want %.0f): %+v", i+1, want, s)
		}
	}
	if !strings.Contains(stderr, "curve: step 2/2") {
		t.Errorf("no progress on stderr:\n%s", stderr)
	}
	var text bytes.Buffer
	printCurve(&text, &rep)
	want := []string{"live capacity", "backlog capacity", "fraction", "    0.50 "}
	if runtime.GOOS == "linux" {
		// getrusage: what an envelope cost live, deciding a backlog, and
		// publishing it.
		want = append(want, "µs per envelope (generating, publishing and deciding it)", "µs per envelope deciding", "publishing it first took")
	}
	for _, want := range want {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
}

func TestRunFlags(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--sessions", "0"},
		{"run", "--tenant", "a.b", "--baseline=false"},
		{"run", "extra"},
		{"run", "--await-decisions", "--rate", "100"},
		{"run", "--await-decisions", "--backlog"},
		{"curve", "--points", "0.5,x"},
		{"curve", "--points", "0"},
		{"curve", "--step-duration", "0"},
	} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, &out, &errOut); code != 1 {
			t.Errorf("%v: exit %d, want 1", args, code)
		}
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"run", "-h"}, &out, &errOut); code != 0 || !strings.Contains(errOut.String(), "decisions_missing") {
		t.Errorf("-h: exit %d, help:\n%s", code, errOut.String())
	}
}
