package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/internal/statestore"
	"github.com/turnguard/turnguard/internal/traffic"
)

// reconcileReport compares what the streams and the state bucket hold for
// the run's tenant with what the generator says they must hold.
type reconcileReport struct {
	OK bool `json:"ok"`
	// Mismatches is the sum of every count below that must be zero.
	Mismatches        int `json:"mismatches"`
	DecisionsExpected int `json:"decisions_expected"`
	DecisionsRead     int `json:"decisions_read"`
	// Missing: published request ids without a decision; Duplicated: with
	// more than one; Wrong: whose decision differs from the expected one;
	// Unexpected: decisions for request ids the run did not publish.
	Missing    int `json:"decisions_missing"`
	Duplicated int `json:"decisions_duplicated"`
	Wrong      int `json:"decisions_wrong"`
	Unexpected int `json:"decisions_unexpected"`

	AlertsExpected   int            `json:"alerts_expected"`
	AlertsRead       int            `json:"alerts_read"`
	AlertsByRule     map[string]int `json:"alerts_by_rule"`
	AlertsMissing    int            `json:"alerts_missing"`
	AlertsDuplicated int            `json:"alerts_duplicated"`
	AlertsUnexpected int            `json:"alerts_unexpected"`

	StatesChecked   int `json:"states_checked"`
	StatesMissing   int `json:"states_missing"`
	StateMismatches int `json:"state_mismatches"`
	// Uncertain counts envelopes an interrupted run may or may not have
	// stored; either outcome is accepted for them.
	Uncertain int `json:"uncertain_envelopes"`

	Attempts        int      `json:"attempts"`
	Seconds         float64  `json:"seconds"`
	FirstMismatches []string `json:"first_mismatches,omitempty"`
}

const maxListed = 10

func (r *reconcileReport) note(format string, args ...any) {
	if len(r.FirstMismatches) < maxListed {
		r.FirstMismatches = append(r.FirstMismatches, fmt.Sprintf(format, args...))
	}
}

// expectation is what a run published, rebuilt from the generator.
type expectation struct {
	tenant string
	// byRequest holds the expected decision and alerts of every stored
	// envelope; uncertain the request ids that may or may not be stored.
	byRequest map[string]*traffic.Envelope
	uncertain map[string]*traffic.Envelope
	sessions  []expectedSession
	totals    traffic.Totals
}

type expectedSession struct {
	key string
	// states are the acceptable states: one, or two for an uncertain
	// last envelope.
	states []traffic.State
}

func expect(gen *traffic.Generator, records []record) *expectation {
	x := &expectation{tenant: gen.Tenant(), byRequest: map[string]*traffic.Envelope{}, uncertain: map[string]*traffic.Envelope{}}
	for _, rec := range records {
		s := gen.Session(rec.index)
		for k := range rec.published {
			x.byRequest[s.Envelopes[k].RequestID] = &s.Envelopes[k]
		}
		x.totals.Add(s.TotalsAfter(rec.published))
		es := expectedSession{key: s.Key()}
		if rec.published > 0 {
			es.states = append(es.states, s.StateAfter(rec.published))
		}
		if rec.uncertain && rec.published < len(s.Envelopes) {
			x.uncertain[s.Envelopes[rec.published].RequestID] = &s.Envelopes[rec.published]
			es.states = append(es.states, s.StateAfter(rec.published+1))
		}
		x.sessions = append(x.sessions, es)
	}
	return x
}

// reconcile checks the streams against x, re-reading for up to grace while
// they disagree: alerts and state writes trail a session's decision by a
// moment.
func reconcile(ctx context.Context, js jetstream.JetStream, x *expectation, grace time.Duration) (reconcileReport, error) {
	start := time.Now()
	deadline := start.Add(grace)
	for attempt := 1; ; attempt++ {
		r, err := reconcileOnce(ctx, js, x)
		r.Attempts = attempt
		r.Seconds = time.Since(start).Seconds()
		if err != nil || r.OK || !time.Now().Before(deadline) {
			return r, err
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

type seen struct {
	decisions []string
	alerts    map[string]int
}

// reconcileOnce reads every decision and alert of the tenant and the
// sessions' states, and compares them with what x expects.
func reconcileOnce(ctx context.Context, js jetstream.JetStream, x *expectation) (reconcileReport, error) {
	r := reconcileReport{DecisionsExpected: len(x.byRequest), AlertsExpected: x.totals.AlertCount(), AlertsByRule: map[string]int{}, Uncertain: len(x.uncertain)}
	got, err := readOutcomes(ctx, js, x.tenant, &r)
	if err != nil {
		return r, err
	}
	for _, rid := range slices.Sorted(maps.Keys(x.byRequest)) {
		e := x.byRequest[rid]
		s := got[rid]
		switch {
		case s == nil:
			r.Missing++
			r.note("%s %s (%s): no decision", e.Hook, rid, e.MsgID)
		case len(s.decisions) > 1:
			r.Duplicated++
			r.note("%s %s: %d decisions %v", e.Hook, rid, len(s.decisions), s.decisions)
		case s.decisions[0] != string(e.Decision):
			r.Wrong++
			r.note("%s %s: decision %s, want %s", e.Hook, rid, s.decisions[0], e.Decision)
		}
		checkAlerts(&r, rid, e, s)
	}
	checkUnexpected(&r, x, got)
	if err := checkStates(ctx, js, x, &r); err != nil {
		return r, err
	}
	r.Mismatches = r.Missing + r.Duplicated + r.Wrong + r.Unexpected + r.AlertsMissing + r.AlertsDuplicated + r.AlertsUnexpected + r.StatesMissing + r.StateMismatches
	r.OK = r.Mismatches == 0
	return r, nil
}

// readOutcomes reads the tenant's decisions and alerts, by request id; an
// alert for an envelope without a decision is counted unexpected in r.
func readOutcomes(ctx context.Context, js jetstream.JetStream, tenant string, r *reconcileReport) (map[string]*seen, error) {
	got := map[string]*seen{}
	bySeq := map[string]string{}
	n, err := readAll(ctx, js, acs.DecisionsStream, acs.DecisionsPrefix+"."+tenant+".>", func(m jetstream.Msg) {
		rid := m.Headers().Get(acs.HdrRequestID)
		s := got[rid]
		if s == nil {
			s = &seen{}
			got[rid] = s
		}
		s.decisions = append(s.decisions, m.Headers().Get(acs.HdrDecision))
		bySeq[m.Headers().Get(acs.HdrStreamSeq)] = rid
	})
	if err != nil {
		return nil, err
	}
	r.DecisionsRead = n
	n, err = readAll(ctx, js, acs.AlertsStream, acs.AlertsPrefix+"."+tenant+".>", func(m jetstream.Msg) {
		rule := m.Headers().Get(acs.HdrRuleID)
		r.AlertsByRule[rule]++
		rid, ok := bySeq[m.Headers().Get(acs.HdrStreamSeq)]
		if !ok {
			r.AlertsUnexpected++
			r.note("alert %s %s for inbound seq %s, which has no decision", m.Headers().Get(acs.HdrMsgID), rule, m.Headers().Get(acs.HdrStreamSeq))
			return
		}
		s := got[rid]
		if s.alerts == nil {
			s.alerts = map[string]int{}
		}
		s.alerts[rule]++
	})
	if err != nil {
		return nil, err
	}
	r.AlertsRead = n
	return got, nil
}

// checkUnexpected counts decisions for requests the run did not publish,
// and checks those for envelopes whose publication was uncertain.
func checkUnexpected(r *reconcileReport, x *expectation, got map[string]*seen) {
	for _, rid := range slices.Sorted(maps.Keys(got)) {
		if _, ok := x.byRequest[rid]; ok {
			continue
		}
		s := got[rid]
		e, maybe := x.uncertain[rid]
		switch {
		case !maybe:
			r.Unexpected += len(s.decisions)
			r.note("decision(s) %v for request %q, which the run did not publish", s.decisions, rid)
		case len(s.decisions) > 1:
			r.Duplicated++
			r.note("%s %s (uncertain): %d decisions", e.Hook, rid, len(s.decisions))
		case s.decisions[0] != string(e.Decision):
			r.Wrong++
			r.note("%s %s (uncertain): decision %s, want %s", e.Hook, rid, s.decisions[0], e.Decision)
		default:
			checkAlerts(r, rid, e, s)
		}
	}
}

func checkAlerts(r *reconcileReport, rid string, e *traffic.Envelope, s *seen) {
	var have map[string]int
	if s != nil {
		have = s.alerts
	}
	for _, rule := range e.Alerts {
		switch n := have[rule]; {
		case n == 0:
			r.AlertsMissing++
			r.note("%s %s: no %s alert", e.Hook, rid, rule)
		case n > 1:
			r.AlertsDuplicated += n - 1
			r.note("%s %s: %d %s alerts", e.Hook, rid, n, rule)
		}
	}
	for rule, n := range have {
		if !slices.Contains(e.Alerts, rule) {
			r.AlertsUnexpected += n
			r.note("%s %s: unexpected %s alert", e.Hook, rid, rule)
		}
	}
}

// checkStates reads every state of the tenant from the bucket in one pass
// (a watch on <tenant>.*) and compares the run's sessions with it.
func checkStates(ctx context.Context, js jetstream.JetStream, x *expectation, r *reconcileReport) error {
	kv, err := js.KeyValue(ctx, acs.StateBucket)
	if err != nil {
		return fmt.Errorf("open bucket %s: %w", acs.StateBucket, err)
	}
	w, err := kv.Watch(ctx, x.tenant+".*", jetstream.IgnoreDeletes())
	if err != nil {
		return fmt.Errorf("watch %s: %w", acs.StateBucket, err)
	}
	defer func() { _ = w.Stop() }()
	values := map[string][]byte{}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("state watch ended early")
			}
			if e == nil {
				return compareStates(x, values, r)
			}
			values[e.Key()] = e.Value()
		}
	}
}

func compareStates(x *expectation, values map[string][]byte, r *reconcileReport) error {
	for _, es := range x.sessions {
		if len(es.states) == 0 {
			continue
		}
		r.StatesChecked++
		raw, ok := values[es.key]
		if !ok {
			r.StatesMissing++
			r.note("state %s: missing", es.key)
			continue
		}
		// Read without verifying: loadgen holds no state key, and only
		// compares counters.
		var got turnstate.Session
		rec, err := statestore.RecordJSON(raw)
		if err == nil {
			err = json.Unmarshal(rec, &got)
		}
		if err != nil {
			r.StateMismatches++
			r.note("state %s: %v", es.key, err)
			continue
		}
		var errs []error
		for _, want := range es.states {
			err := want.Check(&got)
			if err == nil {
				errs = nil
				break
			}
			errs = append(errs, err)
		}
		if len(errs) > 0 {
			r.StateMismatches++
			r.note("state %s: %v", es.key, errors.Join(errs...))
		}
	}
	return nil
}

// readAll reads every message of a stream under filter with an ordered
// consumer and returns how many it read.
func readAll(ctx context.Context, js jetstream.JetStream, name, filter string, each func(jetstream.Msg)) (int, error) {
	s, err := js.Stream(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", name, err)
	}
	// An ordered consumer cannot say how much it will deliver before it
	// delivered something, so the stream says whether there is anything.
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return 0, fmt.Errorf("stream %s info: %w", name, err)
	}
	if len(info.State.Subjects) == 0 {
		return 0, nil
	}
	c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", name, err)
	}
	it, err := c.Messages(jetstream.PullMaxMessages(4096))
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", name, err)
	}
	defer it.Stop()
	n := 0
	for {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return n, fmt.Errorf("read %s after %d messages: %w", name, n, err)
		}
		each(m)
		n++
		md, err := m.Metadata()
		if err != nil {
			return n, fmt.Errorf("read %s: %w", name, err)
		}
		if md.NumPending == 0 {
			return n, nil
		}
	}
}
