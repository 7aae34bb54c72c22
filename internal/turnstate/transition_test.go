package turnstate_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/acs"
	"github.com/turnguard/turnguard/internal/turnstate"
)

// step builders: each returns a Step as a partition worker would after
// intake. Request ids are unique per call unless set.
type stepper struct{ n int }

func (s *stepper) step(method string) turnstate.Step {
	s.n++
	return turnstate.Step{Seq: uint64(s.n), Time: time.Unix(int64(1_700_000_000+s.n), 0).UTC(),
		Method: acs.LookupMethod(method), RequestID: fmt.Sprintf("req-%d", s.n), AgentID: "agent"}
}

func (s *stepper) sessionStart() turnstate.Step { return s.step("steps/sessionStart") }

func (s *stepper) sessionEnd() turnstate.Step {
	st := s.step("steps/sessionEnd")
	st.SessionEnd = &acs.SessionEndPayload{Reason: "completed"}
	return st
}

// turnStart opens turn id (= its request id, as the schema recommends).
func (s *stepper) turnStart(id, parent string, expected ...string) turnstate.Step {
	st := s.step("steps/turnStart")
	st.RequestID, st.TurnID = id, id
	st.TurnStart = &acs.TurnStartPayload{TurnID: id, TriggeredBy: "user_message", ParentTurnID: parent, ExpectedInputs: expected}
	return st
}

func (s *stepper) turnEnd(id string, steps, tools *int) turnstate.Step {
	st := s.step("steps/turnEnd")
	st.TurnID = id
	st.TurnEnd = &acs.TurnEndPayload{TurnID: id, Outcome: "completed", StepCount: steps, ToolCallCount: tools}
	return st
}

func (s *stepper) in(method, turn string) turnstate.Step {
	st := s.step(method)
	st.TurnID = turn
	return st
}

func ptr(n int) *int { return &n }

func with(st turnstate.Step, f func(*turnstate.Step)) turnstate.Step { f(&st); return st }

func TestApplyViolations(t *testing.T) {
	tests := []struct {
		name string
		// setup prepares the session; steps are applied in order and the
		// violations of the last one are compared.
		setup func(*turnstate.Session)
		steps func(s *stepper) []turnstate.Step
		want  []string
	}{
		{"clean turn", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.turnStart("T", ""), s.in("steps/userMessage", "T"),
				s.in("steps/toolCallRequest", "T"), s.turnEnd("T", ptr(2), ptr(1))}
		}, nil},
		{"turnStart without metadata.turn_id", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), with(s.turnStart("T", ""), func(st *turnstate.Step) { st.TurnID = "" })}
		}, []string{turnstate.TurnIDMissing}},
		{"step in an open turn without metadata.turn_id", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.turnStart("T", ""), s.in("steps/userMessage", "")}
		}, []string{turnstate.TurnIDMissing}},
		{"turnEnd without metadata.turn_id", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.turnStart("T", ""), with(s.turnEnd("T", nil, nil), func(st *turnstate.Step) { st.TurnID = "" })}
		}, []string{turnstate.TurnIDMissing}},
		{"turnStart metadata and payload turn ids differ", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), with(s.turnStart("T", ""), func(st *turnstate.Step) { st.TurnID = "U" })}
		}, []string{turnstate.TurnIDMismatch}},
		{"turnEnd metadata and payload turn ids differ", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.turnStart("T", ""), with(s.turnEnd("T", nil, nil), func(st *turnstate.Step) { st.TurnID = "U" })}
		}, []string{turnstate.TurnIDMismatch}},
		{"step names a turn that is not open", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.turnStart("T", ""), s.in("steps/userMessage", "U")}
		}, []string{turnstate.TurnIDMismatch}},
		{"step names a turn while none is open", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.in("steps/userMessage", "T")}
		}, []string{turnstate.TurnIDMismatch}},
		{"turn_id is not the request_id", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), with(s.turnStart("T", ""), func(st *turnstate.Step) { st.RequestID = "other" })}
		}, []string{turnstate.TurnIDNotRequestID}},
		{"turn_id reused while open", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.turnStart("T", ""), with(s.turnStart("T", ""), func(st *turnstate.Step) { st.RequestID = "T2" })}
		}, []string{turnstate.TurnIDNotRequestID, turnstate.TurnIDReused}},
		{"turn_id reused after it ended", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.turnStart("T", ""), s.turnEnd("T", nil, nil), with(s.turnStart("T", ""), func(st *turnstate.Step) { st.RequestID = "T2" })}
		}, []string{turnstate.TurnIDNotRequestID, turnstate.TurnIDReused}},
		{"parent_turn_id names an open turn", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.turnStart("P", ""), s.turnStart("C", "P")}
		}, nil},
		{"parent_turn_id names no open turn", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.turnStart("C", "P")}
		}, []string{turnstate.ParentTurnUnknown}},
		{"subagent's first turn names the spawning turn", func(ss *turnstate.Session) {
			ss.Parent = &turnstate.ParentLink{SessionID: "parent", TurnID: "P", RequestID: "r"}
		}, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.turnStart("C", "P")}
		}, nil},
		{"subagent's second turn names the spawning turn", func(ss *turnstate.Session) {
			ss.Parent = &turnstate.ParentLink{SessionID: "parent", TurnID: "P", RequestID: "r"}
		}, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.turnStart("C", "P"), s.turnEnd("C", nil, nil), s.turnStart("D", "P")}
		}, []string{turnstate.ParentTurnUnknown}},
		{"turnEnd of a turn that is not open", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.turnEnd("T", nil, nil)}
		}, []string{turnstate.TurnEndUnmatched}},
		{"step_count differs", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.turnStart("T", ""), s.in("steps/userMessage", "T"), s.turnEnd("T", ptr(2), nil)}
		}, []string{turnstate.TurnStepCountWrong}},
		{"tool_call_count differs", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.turnStart("T", ""), s.in("steps/toolCallRequest", "T"), s.turnEnd("T", ptr(1), ptr(0))}
		}, []string{turnstate.TurnStepCountWrong}},
		{"both counts differ", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.turnStart("T", ""), s.turnEnd("T", ptr(3), ptr(1))}
		}, []string{turnstate.TurnStepCountWrong, turnstate.TurnStepCountWrong}},
		{"step outside expected_inputs", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.turnStart("T", "", "userMessage"), s.in("steps/toolCallRequest", "T")}
		}, []string{turnstate.UnexpectedInput}},
		{"turn starts while another is open", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.turnStart("T", ""), s.turnStart("U", "")}
		}, []string{turnstate.TurnOverlap}},
		{"ending a turn ends its nested turns", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.turnStart("P", ""), s.turnStart("C", "P"), s.turnStart("G", "C"), s.turnEnd("P", nil, nil)}
		}, []string{turnstate.TurnLeftOpen, turnstate.TurnLeftOpen}},
		{"sessionEnd with a turn open", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.turnStart("T", ""), s.sessionEnd()}
		}, []string{turnstate.TurnLeftOpen}},
		{"too deeply nested", nil, func(s *stepper) []turnstate.Step {
			steps := []turnstate.Step{s.sessionStart(), s.turnStart("T0", "")}
			for i := 1; i <= turnstate.MaxOpenTurns; i++ {
				steps = append(steps, s.turnStart(fmt.Sprintf("T%d", i), fmt.Sprintf("T%d", i-1)))
			}
			return steps
		}, []string{turnstate.TurnDepthExceeded}},
		{"step after sessionEnd", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.sessionEnd(), s.in("steps/userMessage", "")}
		}, []string{turnstate.SessionClosed}},
		{"first envelope is not sessionStart", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.in("steps/userMessage", "")}
		}, []string{turnstate.SessionStartMissing}},
		{"second sessionStart", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.sessionStart()}
		}, []string{turnstate.SessionAlreadyOpened}},
		{"replayed request_id", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), with(s.in("steps/userMessage", ""), func(st *turnstate.Step) { st.RequestID = "req-1" })}
		}, []string{turnstate.RequestReplayed}},
		{"another agent on the session", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), with(s.in("steps/userMessage", ""), func(st *turnstate.Step) { st.AgentID = "mallory" })}
		}, []string{turnstate.AgentIDMismatch}},
	}
	covered := map[string]bool{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sess := turnstate.New("t", "s")
			if tc.setup != nil {
				tc.setup(sess)
			}
			steps := tc.steps(&stepper{})
			var got []string
			for i, st := range steps {
				r := sess.Apply(st)
				if i < len(steps)-1 {
					continue
				}
				for _, v := range r.Violations {
					got = append(got, v.Name)
					covered[v.Name] = true
					if v.Message == "" {
						t.Errorf("violation %s has no message", v.Name)
					}
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("violations %v, want %v", got, tc.want)
			}
		})
	}
	covered[turnstate.TurnDenied] = true // TestStepInsideDeniedTurn
	for _, k := range turnstate.Kinds() {
		if !covered[k.Name] {
			t.Errorf("violation %s is not exercised by any case", k.Name)
		}
	}
}

// A denied turnStart leaves its turn open, marked denied, so the turnEnd
// that still follows matches; a step run inside it anyway is reported.
func TestStepInsideDeniedTurn(t *testing.T) {
	sess := turnstate.New("t", "s")
	var s stepper
	sess.Apply(s.sessionStart())
	start := s.turnStart("T", "")
	sess.Apply(start)
	sess.RecordDecision(start, acs.Deny)
	r := sess.Apply(s.in("steps/userMessage", "T"))
	if len(r.Violations) != 1 || r.Violations[0].Name != turnstate.TurnDenied {
		t.Fatalf("violations %+v, want turn_denied", r.Violations)
	}
	if r = sess.Apply(s.turnEnd("T", ptr(1), nil)); len(r.Violations) != 0 || len(sess.OpenTurns) != 0 {
		t.Fatalf("turnEnd of the denied turn: %+v, open turns %d", r.Violations, len(sess.OpenTurns))
	}
	if sess.Decisions[acs.Deny] != 1 {
		t.Fatalf("decisions %v, want one deny", sess.Decisions)
	}
}

func TestSeverities(t *testing.T) {
	sess := turnstate.New("t", "s")
	var s stepper
	sess.Apply(s.sessionStart())
	r := sess.Apply(with(s.turnStart("T", ""), func(st *turnstate.Step) { st.RequestID = "x" }))
	if len(r.Violations) != 1 || r.Violations[0].Severity != turnstate.SeverityWarn || turnstate.HasError(r.Violations) {
		t.Fatalf("turn_id_not_request_id should be a single warning, got %+v", r.Violations)
	}
	r = sess.Apply(s.turnEnd("U", nil, nil))
	if !turnstate.HasError(r.Violations) {
		t.Fatalf("turn_end_unmatched should be an error, got %+v", r.Violations)
	}
}

func TestTurnAccounting(t *testing.T) {
	sess := turnstate.New("t", "s")
	var s stepper
	for _, st := range []turnstate.Step{s.sessionStart(), s.turnStart("A", ""), s.in("steps/userMessage", "A"),
		s.turnStart("B", "A"), s.in("steps/toolCallRequest", "B"), s.in("steps/toolCallRequest", "B"), s.in("steps/agentResponse", "A")} {
		sess.Apply(st)
	}
	if sess.TurnsStarted != 2 || len(sess.OpenTurns) != 2 {
		t.Fatalf("turns started %d, open %d; want 2 and 2", sess.TurnsStarted, len(sess.OpenTurns))
	}
	a, b := sess.OpenTurn("A"), sess.OpenTurn("B")
	if a.Steps != 2 || a.ToolCalls != 0 || b.Steps != 2 || b.ToolCalls != 2 || a.Index != 1 || b.Index != 2 || b.ParentTurnID != "A" {
		t.Fatalf("turn A %+v, turn B %+v", *a, *b)
	}
	r := sess.Apply(s.turnEnd("B", ptr(2), ptr(2)))
	if len(r.Violations) != 0 || r.Turn == nil || r.Turn.TurnID != "B" {
		t.Fatalf("ending B: %+v", r)
	}
	if sess.LastClosedTurn == nil || sess.LastClosedTurn.TurnID != "B" || sess.LastClosedTurn.EndSeq != 8 {
		t.Fatalf("last closed turn %+v", sess.LastClosedTurn)
	}
	if sess.Envelopes != 8 || sess.FirstSeq != 1 || sess.LastSeq != 8 || !sess.Applied(8) || sess.Applied(9) {
		t.Fatalf("bookkeeping: envelopes %d, seqs %d..%d", sess.Envelopes, sess.FirstSeq, sess.LastSeq)
	}
}

func TestSubagentStartSpawnsALinkedSession(t *testing.T) {
	sess := turnstate.New("acme", "parent")
	var s stepper
	sess.Apply(s.sessionStart())
	sess.Apply(s.turnStart("T", ""))
	st := s.in("steps/subagentStart", "T")
	st.SubagentStart = &acs.SubagentStartPayload{SubagentSessionID: "child"}
	r := sess.Apply(st)
	if r.Spawned == nil || r.Spawned.Key() != "acme.child" || r.Spawned.Parent == nil ||
		*r.Spawned.Parent != (turnstate.ParentLink{SessionID: "parent", TurnID: "T", RequestID: st.RequestID}) {
		t.Fatalf("spawned %+v", r.Spawned)
	}
}

func TestBoundedHistory(t *testing.T) {
	sess := turnstate.New("t", "s")
	var s stepper
	for range turnstate.MaxRecentRequestIDs + 50 {
		sess.Apply(s.in("steps/userMessage", ""))
	}
	if len(sess.RecentRequestIDs) != turnstate.MaxRecentRequestIDs {
		t.Fatalf("kept %d request ids, want %d", len(sess.RecentRequestIDs), turnstate.MaxRecentRequestIDs)
	}
	if last := sess.RecentRequestIDs[len(sess.RecentRequestIDs)-1]; last != fmt.Sprintf("req-%d", s.n) {
		t.Fatalf("newest request id %s, want req-%d", last, s.n)
	}
}

func TestCloneIsDeep(t *testing.T) {
	sess := turnstate.New("t", "s")
	var s stepper
	sess.Apply(s.sessionStart())
	sess.Apply(s.turnStart("T", "", "userMessage"))
	c := sess.Clone()
	c.Apply(s.in("steps/toolCallRequest", "T"))
	c.OpenTurns[0].ExpectedInputs[0] = "changed"
	if sess.OpenTurns[0].Steps != 0 || sess.Envelopes != 2 || sess.OpenTurns[0].ExpectedInputs[0] != "userMessage" || sess.Violations != nil {
		t.Fatalf("applying to the clone changed the original: %+v", sess)
	}
}
