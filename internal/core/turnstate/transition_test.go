package turnstate_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
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

// allowed applies st and records an allow, as the guardian does for a step
// the rules let through: turns count toward windows only then.
func allowed(sess *turnstate.Session, st turnstate.Step) turnstate.Result {
	r := sess.Apply(st)
	sess.RecordDecision(st, acs.Allow)
	return r
}

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
		{"step names a new turn while none is open", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.in("steps/userMessage", "T")}
		}, []string{turnstate.TurnImplicit}},
		{"step names a turn that ended while none is open", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.turnStart("T", ""), s.turnEnd("T", nil, nil), s.in("steps/userMessage", "T")}
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
		}, []string{turnstate.TurnStepCountMismatch}},
		{"tool_call_count differs", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.turnStart("T", ""), s.in("steps/toolCallRequest", "T"), s.turnEnd("T", ptr(1), ptr(0))}
		}, []string{turnstate.TurnStepCountMismatch}},
		{"both counts differ", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.turnStart("T", ""), s.turnEnd("T", ptr(3), ptr(1))}
		}, []string{turnstate.TurnStepCountMismatch, turnstate.TurnStepCountMismatch}},
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
		{"sessionStart after sessionEnd reopens the session", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.sessionEnd(), s.sessionStart()}
		}, []string{turnstate.SessionReopened}},
		{"a step of a reopened session", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.sessionEnd(), s.sessionStart(), s.in("steps/userMessage", "")}
		}, nil},
		{"first envelope is not sessionStart", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.in("steps/userMessage", "")}
		}, []string{turnstate.SessionStartMissing}},
		{"second sessionStart", nil, func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.sessionStart()}
		}, []string{turnstate.SessionAlreadyStarted}},
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
		allowed(sess, st)
	}
	// B nests in A: it is part of A's turn and shares its index.
	if sess.TurnsStarted != 1 || len(sess.OpenTurns) != 2 {
		t.Fatalf("turns started %d, open %d; want 1 and 2", sess.TurnsStarted, len(sess.OpenTurns))
	}
	a, b := sess.OpenTurn("A"), sess.OpenTurn("B")
	if a.Steps != 2 || a.ToolCalls != 0 || b.Steps != 2 || b.ToolCalls != 2 || a.Index != 1 || b.Index != 1 || b.ParentTurnID != "A" {
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

// Adopt links a session begun before its spawn was applied, with the
// parent's live taints anchored at the child's newest turn and envelope;
// a linked session, another caller's, or the parent itself is left alone.
func TestAdopt(t *testing.T) {
	spawned := func() *turnstate.Session {
		sp := turnstate.New("acme", "child")
		sp.Parent = &turnstate.ParentLink{SessionID: "parent", TurnID: "T", RequestID: "spawn-1"}
		sp.Caller = "nats:A"
		hit := turnstate.TaintHit{Seq: 7, Hook: "toolCallResult", Tool: "WebFetch", Session: "parent", Time: time.Unix(1_700_000_500, 0).UTC()}
		sp.Taints = map[string]*turnstate.Taint{"untrusted_content": {First: hit, Last: hit, Hits: 1}}
		return sp
	}
	child := func(caller string, linked bool) *turnstate.Session {
		c := turnstate.New("acme", "child")
		c.Caller, c.TurnsStarted, c.Envelopes = caller, 3, 11
		c.LastTime = time.Unix(1_700_000_900, 0).UTC()
		// Its own hit, newer than the spawn: its window must not shrink.
		own := turnstate.TaintHit{Seq: 10, Hook: "toolCallResult", Tool: "WebFetch", Turn: 2, Step: 9, Time: time.Unix(1_700_001_000, 0).UTC()}
		c.Taints = map[string]*turnstate.Taint{"untrusted_content": {First: own, Last: own, Hits: 1}}
		c.OpenTurns = []turnstate.Turn{{TurnID: "c4", Index: 4}}
		if linked {
			c.Parent = &turnstate.ParentLink{SessionID: "other"}
		}
		return c
	}
	for _, tc := range []struct {
		name  string
		child *turnstate.Session
		want  bool
		// parent the child is linked to after: a linked child keeps its
		// link, and gets the spawner's taints all the same.
		parent string
	}{
		{"unlinked, same caller", child("nats:A", false), true, "parent"},
		{"unlinked, caller not bound yet", child("", false), false, ""},
		{"linked already", child("nats:A", true), true, "other"},
		{"another caller's", child("nats:B", false), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.child.Clone()
			if got := tc.child.Adopt(spawned()); got != tc.want {
				t.Fatalf("Adopt: %v, want %v", got, tc.want)
			}
			if !tc.want {
				if tc.child.Parent != nil && *tc.child.Parent != *before.Parent || tc.child.Taints["untrusted_content"].Hits != 1 {
					t.Errorf("changed a session it did not adopt: %+v", tc.child)
				}
				return
			}
			if tc.child.Parent == nil || tc.child.Parent.SessionID != tc.parent || tc.child.Caller != "nats:A" {
				t.Errorf("link %+v, caller %q", tc.child.Parent, tc.child.Caller)
			}
			taint := tc.child.Taints["untrusted_content"]
			if taint == nil || taint.Last.Turn != 4 || taint.Last.Step != 11 || taint.Last.Session != "parent" || taint.Last.Tool != "WebFetch" ||
				!taint.Last.Time.Equal(time.Unix(1_700_001_000, 0)) || taint.Hits != 2 || taint.First.Seq != 10 {
				t.Errorf("taint %+v, want the child's own first hit, and the parent's evidence anchored at turn 4, step 11 and the child's newest time", taint)
			}
		})
	}
	self := turnstate.New("acme", "parent")
	if self.Adopt(spawned()) {
		t.Error("a session adopted itself")
	}
	// Adopted, then the same spawn applied again (a batch decided again):
	// nothing more changes.
	again := child("nats:A", false)
	again.Adopt(spawned())
	before := again.Clone()
	if again.Adopt(spawned()) || again.Taints["untrusted_content"].Hits != before.Taints["untrusted_content"].Hits {
		t.Errorf("the same spawn adopted twice: hits %d, want %d", again.Taints["untrusted_content"].Hits, before.Taints["untrusted_content"].Hits)
	}
	// Made by an earlier spawn of the same parent and never started: the
	// newest spawn takes it whole — its link (the turn the subagent's
	// first turn names) and its taints, none if the parent is clean now.
	unstarted := turnstate.New("acme", "child")
	unstarted.Caller = "nats:A"
	unstarted.Parent = &turnstate.ParentLink{SessionID: "parent", TurnID: "T0", RequestID: "spawn-0"}
	unstarted.Taints = spawned().Taints
	clean := spawned()
	clean.Parent.TurnID, clean.Parent.RequestID, clean.Taints = "T4", "spawn-4", nil
	if !unstarted.Adopt(clean) || unstarted.Parent.TurnID != "T4" || unstarted.Parent.RequestID != "spawn-4" || len(unstarted.Taints) != 0 {
		t.Errorf("a never-started child spawned again: link %+v, taints %v; want the newest spawn's", unstarted.Parent, unstarted.Taints)
	}
	if unstarted.Adopt(clean) {
		t.Error("the same spawn applied again to a never-started child changed it")
	}
}

// Spawned: a child linked to the parent or remembered by it, or a sibling
// (linked to the parent's own parent), and of the parent's caller (or of
// none yet); never another caller's session named in a subagentStart.
func TestSpawned(t *testing.T) {
	parent := turnstate.New("acme", "parent")
	parent.Caller = "nats:A"
	parent.Parent = &turnstate.ParentLink{SessionID: "root"}
	parent.RememberSubagent("remembered")
	for _, tc := range []struct {
		name, id, caller, linked string
		want                     bool
	}{
		{"linked", "linked", "nats:A", "parent", true},
		{"remembered", "remembered", "nats:A", "", true},
		{"remembered, not bound yet", "remembered", "", "", true},
		{"remembered, another caller's", "remembered", "nats:B", "", false},
		{"linked, another caller's", "linked", "nats:B", "parent", false},
		{"a sibling", "sibling", "nats:A", "root", true},
		{"a sibling, another caller's", "sibling", "nats:B", "root", false},
		{"itself, as its parent's child", "parent", "nats:A", "root", false},
		{"another tree's", "stranger", "nats:A", "elsewhere", false},
		{"neither", "stranger", "nats:A", "", false},
	} {
		child := turnstate.New("acme", tc.id)
		child.Caller = tc.caller
		if tc.linked != "" {
			child.Parent = &turnstate.ParentLink{SessionID: tc.linked}
		}
		if got := parent.Spawned(child); got != tc.want {
			t.Errorf("%s: Spawned %v, want %v", tc.name, got, tc.want)
		}
	}
	// A root session has no siblings.
	root := turnstate.New("acme", "root")
	other := turnstate.New("acme", "other")
	if root.Spawned(other) {
		t.Error("a root took an unlinked session for its own")
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

// Implicit turns: a framework that never sends turnStart (the Codex
// adapter) names its turns only in each step's metadata.turn_id. The first
// step naming a new turn opens it implicitly, the next new one replaces it,
// and they count as turns like declared ones.
func TestImplicitTurns(t *testing.T) {
	const (
		req  = "steps/toolCallRequest"
		res  = "steps/toolCallResult"
		none = ""
	)
	tests := []struct {
		name  string
		steps func(s *stepper) []turnstate.Step
		// want are the violations of every step, in order.
		want [][]string
		// open describes the open turns at the end: id#index, with a
		// trailing * when implicit; turns is TurnsStarted.
		open  []string
		turns int
	}{
		{"a Codex session: no sessionStart, no turnStart, one turn id per user turn", func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.in(req, "A"), s.in(res, "A"), s.in(req, "A"), s.in(req, "B"), s.in(res, "B"), s.in(req, "C")}
		}, [][]string{{turnstate.SessionStartMissing, turnstate.TurnImplicit}, nil, nil, {turnstate.TurnImplicit}, nil, {turnstate.TurnImplicit}},
			[]string{"C#3*"}, 3},
		{"with sessionStart, the first step only opens the turn", func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.in(req, "A")}
		}, [][]string{nil, {turnstate.TurnImplicit}}, []string{"A#1*"}, 1},
		{"a step naming an implicit turn that was replaced is a mismatch, not a new turn", func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.in(req, "A"), s.in(req, "B"), s.in(res, "A")}
		}, [][]string{nil, {turnstate.TurnImplicit}, {turnstate.TurnImplicit}, {turnstate.TurnIDMismatch}}, []string{"B#2*"}, 2},
		{"a turnEnd naming the implicit turn ends it", func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.in(req, "A"), s.in(res, "A"), s.turnEnd("A", ptr(2), ptr(1)), s.in(req, "B")}
		}, [][]string{nil, {turnstate.TurnImplicit}, nil, nil, {turnstate.TurnImplicit}}, []string{"B#2*"}, 2},
		{"a turnStart replaces the implicit turn without turn_overlap", func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.in(req, "A"), s.turnStart("T", ""), s.in(req, "T")}
		}, [][]string{nil, {turnstate.TurnImplicit}, nil, nil}, []string{"T#2"}, 2},
		{"a turnStart naming the implicit turn as parent nests inside it, sharing its index", func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.in(req, "A"), s.turnStart("T", "A"), s.in(req, "T"), s.in(res, "A")}
		}, [][]string{nil, {turnstate.TurnImplicit}, nil, nil, nil}, []string{"A#1*", "T#1"}, 1},
		{"with a declared turn open, a new turn id is a mismatch (and the turn, with no work, does not count)", func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.turnStart("T", ""), s.in(req, "A")}
		}, [][]string{nil, nil, {turnstate.TurnIDMismatch}}, []string{"T#1"}, 0},
		{"with a declared turn nested in an implicit one, a new turn id is a mismatch", func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.in(req, "A"), s.turnStart("T", "A"), s.in(req, "B")}
		}, [][]string{nil, {turnstate.TurnImplicit}, nil, {turnstate.TurnIDMismatch}}, []string{"A#1*", "T#1"}, 1},
		{"after the declared turn ends, turns may be implicit again (the empty declared turn did not count)", func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.turnStart("T", ""), s.turnEnd("T", nil, nil), s.in(req, "A")}
		}, [][]string{nil, nil, nil, {turnstate.TurnImplicit}}, []string{"A#1*"}, 1},
		{"a step without turn_id is not faulted in an implicit turn", func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.in(req, "A"), s.in(res, none)}
		}, [][]string{nil, {turnstate.TurnImplicit}, nil}, []string{"A#1*"}, 1},
		{"a step without turn_id opens no turn", func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.in(req, none)}
		}, [][]string{nil, nil}, []string{}, 0},
		{"a turnStart reusing an implicit turn's id", func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.in(req, "A"), s.turnStart("A", "")}
		}, [][]string{nil, {turnstate.TurnImplicit}, {turnstate.TurnIDReused}}, []string{"A#2"}, 1},
		{"sessionEnd ends the implicit turn without turn_left_open", func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.in(req, "A"), s.sessionEnd()}
		}, [][]string{{turnstate.SessionStartMissing, turnstate.TurnImplicit}, nil}, []string{}, 1},
		{"a declared turn nested in an implicit one is still reported at sessionEnd", func(s *stepper) []turnstate.Step {
			return []turnstate.Step{s.sessionStart(), s.in(req, "A"), s.turnStart("T", "A"), s.sessionEnd()}
		}, [][]string{nil, {turnstate.TurnImplicit}, nil, {turnstate.TurnLeftOpen}}, []string{}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sess := turnstate.New("t", "s")
			steps := tc.steps(&stepper{})
			if len(steps) != len(tc.want) {
				t.Fatalf("%d steps, %d expectations", len(steps), len(tc.want))
			}
			for i, st := range steps {
				r := allowed(sess, st)
				var got []string
				for _, v := range r.Violations {
					got = append(got, v.Name)
				}
				if !slices.Equal(got, tc.want[i]) {
					t.Errorf("step %d (%s %q): violations %v, want %v", i+1, st.Method.Hook, st.TurnID, got, tc.want[i])
				}
				if st.TurnID != "" && st.TurnStart == nil && st.SessionEnd == nil && !turnstate.HasError(r.Violations) &&
					(r.Turn == nil || r.Turn.TurnID != st.TurnID) {
					t.Errorf("step %d: counted in %+v, want turn %q", i+1, r.Turn, st.TurnID)
				}
			}
			open := []string{}
			for _, o := range sess.OpenTurns {
				d := fmt.Sprintf("%s#%d", o.TurnID, o.Index)
				if o.Implicit {
					d += "*"
				}
				open = append(open, d)
			}
			if !slices.Equal(open, tc.open) || sess.TurnsStarted != tc.turns {
				t.Errorf("open turns %v, turns started %d; want %v and %d", open, sess.TurnsStarted, tc.open, tc.turns)
			}
		})
	}
}

// An implicit turn counts its steps and tool calls like a declared one, and
// the turn it replaces is recorded as the last closed turn.
func TestImplicitTurnAccounting(t *testing.T) {
	sess := turnstate.New("t", "s")
	var s stepper
	for _, st := range []turnstate.Step{s.in("steps/toolCallRequest", "A"), s.in("steps/toolCallResult", "A"), s.in("steps/toolCallRequest", "A")} {
		allowed(sess, st)
	}
	a := sess.OpenTurn("A")
	if a == nil || !a.Implicit || a.Index != 1 || a.Steps != 3 || a.ToolCalls != 2 || a.StartSeq != 1 || a.TriggeredBy != "" {
		t.Fatalf("turn A %+v", a)
	}
	next := s.in("steps/toolCallRequest", "B")
	if r := allowed(sess, next); r.Turn == nil || r.Turn.TurnID != "B" || r.Turn.Index != 2 || r.Turn.Steps != 1 || !r.Turn.Implicit {
		t.Fatalf("opening B: %+v", r.Turn)
	}
	want := turnstate.ClosedTurn{TurnID: "A", Index: 1, Steps: 3, ToolCalls: 2, EndSeq: next.Seq, EndTime: next.Time, Implicit: true}
	if sess.LastClosedTurn == nil || *sess.LastClosedTurn != want {
		t.Fatalf("last closed turn %+v, want %+v", sess.LastClosedTurn, want)
	}
	if sess.CurrentTurn("B") != 2 || sess.CurrentTurn("") != 2 {
		t.Fatalf("current turn of B %d, of no turn id %d; want 2", sess.CurrentTurn("B"), sess.CurrentTurn(""))
	}
	if sess.Violations[turnstate.TurnImplicit] != 2 {
		t.Fatalf("violation counters %v", sess.Violations)
	}
}

// turn_implicit is information, not a warning: the default pack alerts on
// every warning, and a Codex session opens every turn this way.
func TestImplicitTurnIsInfo(t *testing.T) {
	sess := turnstate.New("t", "s")
	var s stepper
	sess.Apply(s.sessionStart())
	r := sess.Apply(s.in("steps/toolCallRequest", "A"))
	if len(r.Violations) != 1 || r.Violations[0].Severity != turnstate.SeverityInfo || r.Violations[0].Message == "" {
		t.Fatalf("violations %+v, want one info-level turn_implicit", r.Violations)
	}
}

// A denied turnStart does not count as a turn: the next turn gets its
// index. Counted, denied turnStarts (a reused turn id) would age a taint
// out of its window without the agent running a turn.
func TestDeniedTurnStartDoesNotCount(t *testing.T) {
	sess := turnstate.New("t", "s")
	var s stepper
	sess.Apply(s.sessionStart())
	allowed(sess, s.turnStart("A", ""))
	allowed(sess, s.in("steps/userMessage", "A"))
	sess.Apply(s.turnEnd("A", nil, nil))
	for _, rid := range []string{"A2", "A3"} {
		// turn_id_reused, which the default pack denies.
		again := with(s.turnStart("A", ""), func(st *turnstate.Step) { st.RequestID = rid })
		if r := sess.Apply(again); !slices.ContainsFunc(r.Violations, func(v turnstate.Violation) bool { return v.Name == turnstate.TurnIDReused }) {
			t.Fatalf("violations %+v, want turn_id_reused", r.Violations)
		}
		sess.RecordDecision(again, acs.Deny)
		// A rule pack that lets steps inside a denied turn through still
		// does not make the denied turn count.
		allowed(sess, s.in("steps/userMessage", "A"))
		if sess.TurnsStarted != 1 {
			t.Fatalf("turns started %d after a denied turnStart, want 1", sess.TurnsStarted)
		}
		sess.Apply(s.turnEnd("A", nil, nil))
	}
	next := s.turnStart("B", "")
	r := sess.Apply(next)
	if r.Turn == nil || r.Turn.Index != 2 || sess.CurrentTurn("B") != 2 {
		t.Fatalf("turn after two denied turnStarts: %+v, want index 2", r.Turn)
	}
}

// Issue 23, finding 4: what a client can send at will does not age a
// window. Each case runs its steps after a turn 1 that did some work and
// reports the turn count and the index the last step is decided in; a
// window anchored in turn 1 is aged by the difference.
func TestWindowsTheAgentCannotAge(t *testing.T) {
	const (
		req = "steps/toolCallRequest"
		msg = "steps/userMessage"
	)
	type decided struct {
		st turnstate.Step
		d  acs.Disposition
	}
	tests := []struct {
		name  string
		steps func(s *stepper) []decided
		// turns is TurnsStarted at the end; current the index the last
		// step was decided in.
		turns, current int
	}{
		{"denied steps naming fresh turn ids open no counted turns", func(s *stepper) []decided {
			return []decided{{s.in(req, "c2"), acs.Deny}, {s.in(req, "c3"), acs.Deny}, {s.in(req, "c4"), acs.Deny}}
		}, 1, 2},
		{"empty turnStart/turnEnd pairs do not count", func(s *stepper) []decided {
			return []decided{{s.turnStart("t2", ""), acs.Allow}, {s.turnEnd("t2", nil, nil), acs.Allow},
				{s.turnStart("t3", ""), acs.Allow}, {s.turnEnd("t3", nil, nil), acs.Allow},
				{s.turnStart("t4", ""), acs.Allow}, {s.in(req, "t4"), acs.Deny}}
		}, 1, 2},
		{"turns with only free envelopes (audit-only, housekeeping) do not count", func(s *stepper) []decided {
			return []decided{{s.turnStart("t2", ""), acs.Allow}, {s.in("steps/skillUnload", "t2"), acs.Allow}, {s.in("steps/postCompact", "t2"), acs.Allow},
				{s.in("steps/preCompact", "t2"), acs.Allow}, {s.in("steps/subagentStop", "t2"), acs.Allow}, {s.in("agbom/snapshot", "t2"), acs.Allow},
				{s.turnEnd("t2", nil, nil), acs.Allow}, {s.turnStart("t3", ""), acs.Allow}, {s.in(req, "t3"), acs.Deny}}
		}, 1, 2},
		{"turns with only asked steps do not count", func(s *stepper) []decided {
			return []decided{{s.turnStart("t2", ""), acs.Allow}, {s.in(req, "t2"), acs.Ask}, {s.turnEnd("t2", nil, nil), acs.Allow},
				{s.turnStart("t3", ""), acs.Allow}, {s.in(req, "t3"), acs.Deny}}
		}, 1, 2},
		{"nested turns share their enclosing turn's index", func(s *stepper) []decided {
			return []decided{{s.turnStart("t2", ""), acs.Allow}, {s.in(msg, "t2"), acs.Allow},
				{s.turnStart("t3", "t2"), acs.Allow}, {s.in(msg, "t3"), acs.Allow},
				{s.turnStart("t4", "t3"), acs.Allow}, {s.in(msg, "t4"), acs.Allow},
				{s.turnStart("t5", "t4"), acs.Allow}, {s.in(req, "t5"), acs.Deny}}
		}, 2, 2},
		{"a turn nested in a denied turn does not count", func(s *stepper) []decided {
			return []decided{{s.turnStart("t2", ""), acs.Deny}, {s.turnStart("t3", "t2"), acs.Allow}, {s.in(msg, "t3"), acs.Allow},
				{s.turnEnd("t2", nil, nil), acs.Allow}, {s.turnStart("t4", ""), acs.Allow}, {s.in(req, "t4"), acs.Deny}}
		}, 1, 2},
		{"turns that did work count, declared or implicit", func(s *stepper) []decided {
			return []decided{{s.in(req, "c2"), acs.Allow}, {s.in(req, "c3"), acs.Allow}, {s.in(req, "c4"), acs.Allow}}
		}, 4, 4},
		{"a denied step does not count its turn, a later allowed one in it does", func(s *stepper) []decided {
			return []decided{{s.in(req, "c2"), acs.Deny}, {s.in(req, "c2"), acs.Allow}, {s.in(req, "c3"), acs.Deny}}
		}, 2, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sess := turnstate.New("t", "s")
			s := &stepper{}
			allowed(sess, s.in(req, "c1"))
			if sess.TurnsStarted != 1 {
				t.Fatalf("turn 1 did work, turns %d", sess.TurnsStarted)
			}
			steps := tc.steps(s)
			current := 0
			for _, d := range steps {
				sess.Apply(d.st)
				current = sess.CurrentTurn(d.st.TurnID)
				sess.RecordDecision(d.st, d.d)
			}
			if sess.TurnsStarted != tc.turns || current != tc.current {
				t.Errorf("turns %d, last step in turn %d; want %d and %d", sess.TurnsStarted, current, tc.turns, tc.current)
			}
		})
	}
}
