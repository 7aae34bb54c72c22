package stream_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
)

// recorder is a stream.Observer keeping every call.
type recorder struct {
	mu       sync.Mutex
	batched  int
	decided  map[string]int // hook/decision
	latency  []time.Duration
	refused  []string // reason
	codes    []acs.Code
	alerted  map[string]string // rule → severity
	denied   []string
	maxBatch int
}

func (r *recorder) Batch(size int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batched += size
	r.maxBatch = max(r.maxBatch, size)
}

func (r *recorder) Decided(hook, decision string, latency time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.decided[hook+"/"+decision]++
	r.latency = append(r.latency, latency)
}

func (r *recorder) Refused(code acs.Code, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refused = append(r.refused, reason)
	r.codes = append(r.codes, code)
}

func (r *recorder) Alerted(rule, severity string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.alerted[rule] = severity
}

func (r *recorder) Denied(rule string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.denied = append(r.denied, rule)
}

// TestObserver: the observer hears of every stored decision once, with its
// hook and decision, of the refusals with their code and reason, of the
// rules that alerted and denied, and of batches adding up to the
// envelopes processed.
func TestObserver(t *testing.T) {
	srv := natstest.RunServer(t)
	rec := &recorder{decided: map[string]int{}, alerted: map[string]string{}}
	cfg := testConfig()
	cfg.Observer = rec
	r := startProcessor(t, srv, cfg)
	js, err := jetstream.New(natstest.Connect(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sent := 0
	send := func(subject string, data []byte) {
		t.Helper()
		if _, err := js.Publish(ctx, subject, data); err != nil {
			t.Fatal(err)
		}
		sent++
	}
	allowed, denied := "0b1c2d3e-4f50-4a6b-8c7d-000000000001", "0b1c2d3e-4f50-4a6b-8c7d-000000000002"
	for _, e := range examples.Session(allowed) {
		send(e.Subject("default", allowed), examples.Stamp(e.Data, time.Now()))
	}
	for _, e := range examples.Taint(denied) {
		send(e.Subject("default", denied), examples.Stamp(e.Data, time.Now()))
	}
	send(acs.InboundSubject("default", "0b1c2d3e-4f50-4a6b-8c7d-000000000003", "turnStart"), []byte("not json"))

	testwait.CheckFor(t, waitFor, 10*time.Millisecond, func() error {
		if n := r.p.Stats().Processed.Load(); n < uint64(sent) {
			return fmt.Errorf("%d of %d envelopes processed", n, sent)
		}
		return nil
	})
	decisions := natstest.CountMsgs(t, js, acs.DecisionsStream)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	total := 0
	for _, n := range rec.decided {
		total += n
	}
	if total != decisions || len(rec.latency) != decisions {
		t.Errorf("%d decisions observed (%d latencies), %d stored: %v", total, len(rec.latency), decisions, rec.decided)
	}
	for _, want := range []string{"sessionStart/allow", "toolCallRequest/allow", "toolCallRequest/deny", "turnStart/error"} {
		if rec.decided[want] == 0 {
			t.Errorf("no %s among %v", want, rec.decided)
		}
	}
	for _, l := range rec.latency {
		if l < 0 || l > waitFor {
			t.Errorf("latency %v", l)
		}
	}
	if !slices.Equal(rec.refused, []string{acs.ReasonParseError}) || !slices.Equal(rec.codes, []acs.Code{acs.CodeParseError}) {
		t.Errorf("refusals %v %v, want one parse_error -32700", rec.refused, rec.codes)
	}
	if len(rec.denied) != 1 {
		t.Fatalf("denying rules %v, want one", rec.denied)
	}
	if sev, ok := rec.alerted[rec.denied[0]]; !ok || sev == "" {
		t.Errorf("the denying rule %s did not alert: %v", rec.denied[0], rec.alerted)
	}
	if rec.batched != sent || rec.maxBatch > cfg.BatchSize {
		t.Errorf("batches add up to %d envelopes (largest %d), want %d (at most %d each)", rec.batched, rec.maxBatch, sent, cfg.BatchSize)
	}
}
