package policy_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/internal/scenario"
	rulepack "github.com/turnguard/turnguard/rules"
	"github.com/turnguard/turnguard/schema"
)

// BenchmarkEvaluateDefaultPack measures rule evaluation alone — taint
// updates, every rule of the hook, message rendering on hits — per
// envelope, with the default pack, over the taint-window scenario (web
// content with provenance, a denied consequential call, allowed calls).
// Parsing, validation and turn transitions are done before the timer.
func BenchmarkEvaluateDefaultPack(b *testing.B) {
	rs, err := rulepack.DefaultSet()
	if err != nil {
		b.Fatal(err)
	}
	sc, err := scenario.Load(filepath.Join("..", "..", "..", "testdata", "scenarios", "taint-window.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	built, err := sc.Build()
	if err != nil {
		b.Fatal(err)
	}
	type step struct {
		in    policy.Input
		state *turnstate.Session
	}
	var steps []step
	sess := turnstate.New(sc.Tenant, sc.SessionID("main"))
	for i, m := range built.Messages {
		var req acs.Request
		if err := json.Unmarshal(m.Data, &req); err != nil {
			b.Fatal(err)
		}
		doc, err := schema.Decode(m.Data)
		if err != nil {
			b.Fatal(err)
		}
		payload := doc.(map[string]any)["params"].(map[string]any)["payload"]
		spec := acs.LookupMethod(req.Method)
		ts, err := time.Parse(time.RFC3339Nano, req.Params.Timestamp)
		if err != nil {
			b.Fatal(err)
		}
		st := turnstate.Step{Seq: uint64(i + 1), Time: ts, Method: spec, RequestID: req.Params.RequestID, AgentID: req.Params.Metadata.AgentID, TurnID: req.Params.Metadata.TurnID}
		_ = json.Unmarshal(req.Params.Payload, &st.TurnStart)
		if spec.Method != "steps/turnStart" {
			st.TurnStart = nil
		}
		if spec.Method == "steps/turnEnd" {
			st.TurnEnd = &acs.TurnEndPayload{}
			_ = json.Unmarshal(req.Params.Payload, st.TurnEnd)
		}
		if spec.Method == "steps/sessionEnd" {
			continue // keep the session open for repeated rounds
		}
		applied := sess.Apply(st)
		in := policy.Input{Spec: spec, Req: &req, Payload: payload, Seq: st.Seq, Time: ts, Violations: applied.Violations}
		steps = append(steps, step{in: in, state: sess.Clone()})
		// A turn counts toward the window once a work step in it is let
		// through (turnstate.Work): record the scenario's decision, as the
		// guardian records the one it takes.
		if d := m.Expect.Decision; d != "" {
			sess.RecordDecision(st, acs.Disposition(d))
		}
	}
	// The rule state (taints, counters, provenance memory) flows from step
	// to step as in a live session and starts afresh every round.
	var carried turnstate.Session
	guardHits := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		s := steps[i%len(steps)]
		if i%len(steps) == 0 {
			carried = turnstate.Session{}
		}
		s.state.Taints, s.state.Counters, s.state.Provenance, s.state.RuleHits = carried.Taints, carried.Counters, carried.Provenance, carried.RuleHits
		for _, h := range rs.Evaluate(s.state, nil, s.in).Hits {
			if h.Rule.ID == "TG-TAINT-001" {
				guardHits++
			}
		}
		carried.Taints, carried.Counters, carried.Provenance, carried.RuleHits = s.state.Taints, s.state.Counters, s.state.Provenance, s.state.RuleHits
	}
	b.StopTimer()
	if rounds := b.N / len(steps); rounds > 0 && (guardHits < rounds || guardHits > rounds+1) {
		b.Fatalf("the taint guard hit %d times in %d rounds; want once a round", guardHits, rounds)
	}
}
