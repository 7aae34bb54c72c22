package turnstate

import (
	"fmt"
	"slices"
	"time"

	"github.com/turnguard/turnguard/internal/core/acs"
)

// Step is what the state machine needs to know about one valid envelope.
// Exactly the payload pointer matching Method is set for turnStart, turnEnd,
// subagentStart and sessionEnd.
type Step struct {
	Seq       uint64
	Time      time.Time
	Method    *acs.MethodSpec
	RequestID string
	AgentID   string
	// Caller is who published the envelope (Session.Caller).
	Caller string
	// TurnID and ParentTurnID are the envelope's metadata values.
	TurnID       string
	ParentTurnID string

	TurnStart     *acs.TurnStartPayload
	TurnEnd       *acs.TurnEndPayload
	SubagentStart *acs.SubagentStartPayload
	SessionEnd    *acs.SessionEndPayload
}

// Result is what applying one step did.
type Result struct {
	Violations []Violation
	// Turn is a copy of the turn the step belongs to after the step (the
	// turn it opened, closed, or was counted in), or nil.
	Turn *Turn
	// Spawned is the initial state of a subagent session announced by
	// subagentStart, linked to this session's spawning turn.
	Spawned *Session
}

func (r *Result) add(name, format string, args ...any) {
	r.Violations = append(r.Violations, Violation{Name: name, Severity: severityOf(name), Message: fmt.Sprintf(format, args...)})
}

// Apply applies one envelope to the session and reports the protocol
// violations it found. It is pure: no clock, no I/O. Callers skip envelopes
// for which Applied(seq) is true before calling it.
func (s *Session) Apply(st Step) Result {
	var r Result
	first := s.Envelopes == 0
	if first {
		s.FirstSeq, s.FirstTime = st.Seq, st.Time
	}
	s.Envelopes++
	if s.Caller == "" {
		s.Caller = st.Caller
	}
	s.LastSeq = st.Seq
	if st.Time.After(s.LastTime) {
		s.LastTime = st.Time
	}
	defer s.count(&r)

	if slices.Contains(s.RecentRequestIDs, st.RequestID) {
		r.add(RequestReplayed, "request_id %s was already seen in this session", st.RequestID)
		return r
	}
	s.RecentRequestIDs = remember(s.RecentRequestIDs, st.RequestID, MaxRecentRequestIDs)
	reopened := false
	if s.Status == StatusClosed {
		if st.Method.Method != "steps/sessionStart" {
			r.add(SessionClosed, "%s after sessionEnd", st.Method.Method)
			return r
		}
		// The host resumed the conversation under its id (Claude Code's
		// --resume), with what it said and read back in the model's
		// context: the session goes on with its taints, lineage and
		// counts. Refused, the host's every call was; started afresh, it
		// would have forgotten the page it read.
		r.add(SessionReopened, "sessionStart after sessionEnd (reason %q): the session is resumed", s.EndReason)
		s.Status, s.EndReason, reopened = StatusOpen, "", true
	}
	switch {
	case s.AgentID == "":
		s.AgentID = st.AgentID
	case st.AgentID != s.AgentID:
		r.add(AgentIDMismatch, "agent_id %q, but the session belongs to %q", st.AgentID, s.AgentID)
	}
	if first && st.Method.Method != "steps/sessionStart" {
		r.add(SessionStartMissing, "the session's first envelope is %s, not steps/sessionStart", st.Method.Method)
	}

	switch {
	case st.SessionEnd != nil:
		s.endSession(st, &r)
	case st.Method.Method == "steps/sessionStart":
		if s.Started && !reopened {
			r.add(SessionAlreadyStarted, "the session already has a sessionStart")
		}
		s.Started = true
	case st.TurnStart != nil:
		s.startTurn(st, &r)
	case st.TurnEnd != nil:
		s.endTurn(st, &r)
	case st.Method.Scope == acs.TurnStep:
		s.countStep(st, &r)
	}
	if p := st.SubagentStart; p != nil && p.SubagentSessionID != s.SessionID {
		r.Spawned = New(s.Tenant, p.SubagentSessionID)
		r.Spawned.Parent = &ParentLink{SessionID: s.SessionID, TurnID: st.TurnID, RequestID: st.RequestID}
		r.Spawned.Caller = s.Caller
	}
	return r
}

// RecordDecision records the decision taken on an applied step. A denied
// turnStart leaves its turn open but marked denied, so that the turnEnd the
// framework still sends (outcome denied_at_start) matches it, and any step
// run inside it anyway is reported.
//
// It is also where a turn comes to count toward windows (see Work): the
// first work step turnguard lets through in an open turn makes that turn's
// index the session's turn count. Turns are counted here, after the
// decision, and not when they open, because everything that opens a turn —
// a turnStart, a step naming a fresh turn id, a turnStart nested in
// another turn — is the agent's to send at will: were those counted, a
// client could age a taint out of its window with turns that did nothing,
// or with steps it knows will be denied (issue 23, finding 4).
func (s *Session) RecordDecision(st Step, d acs.Disposition) {
	if s.Decisions == nil {
		s.Decisions = map[acs.Disposition]uint64{}
	}
	s.Decisions[d]++
	if d == acs.Deny && st.TurnStart != nil {
		if t := s.OpenTurn(st.TurnStart.TurnID); t != nil && t.StartSeq == st.Seq {
			t.Denied = true
		}
	}
	if (d == acs.Allow || d == acs.Modify) && st.TurnID != "" && Work(st.Method) {
		if t := s.OpenTurn(st.TurnID); t != nil && t.Index > s.TurnsStarted && !s.insideDenied(t) {
			s.TurnsStarted = t.Index
			s.WindowTurns = max(s.WindowTurns, t.WindowIndex)
		}
	}
}

// insideDenied reports whether t, or a turn it is nested in, was denied at
// its turnStart: a denied turn does not count, whatever nests in it.
func (s *Session) insideDenied(t *Turn) bool {
	for range MaxOpenTurns + 1 {
		if t.Denied {
			return true
		}
		if t.ParentTurnID == "" {
			return false
		}
		if t = s.OpenTurn(t.ParentTurnID); t == nil {
			return false
		}
	}
	return true
}

// Work reports whether a step of this method, let through, makes its turn
// count toward windows measured in turns: a hook through which the agent,
// or its user, does or sees something, and which turnguard could have
// denied. The others do not count, because a client can send them to no
// effect: turnStart and turnEnd only frame a turn; subagentStop,
// skillUnload and postCompact cannot be denied (a free envelope);
// preCompact is the framework's housekeeping; agbom reports an inventory.
func Work(m *acs.MethodSpec) bool {
	switch m.Method {
	case "steps/userMessage", "steps/agentResponse", "steps/knowledgeRetrieval", "steps/memoryContextRetrieval",
		"steps/memoryStore", "steps/toolCallRequest", "steps/toolCallResult", "steps/subagentStart",
		"steps/skillRegister", "steps/skillLoad":
		return true
	}
	return false
}

func (s *Session) count(r *Result) {
	if len(r.Violations) == 0 {
		return
	}
	if s.Violations == nil {
		s.Violations = map[string]uint64{}
	}
	for _, v := range r.Violations {
		s.Violations[v.Name]++
	}
}

func (s *Session) startTurn(st Step, r *Result) {
	p := st.TurnStart
	checkTurnIDs(st, p.TurnID, r)
	if p.TurnID != st.RequestID {
		r.add(TurnIDNotRequestID, "turn_id %q is not the envelope's request_id %s", p.TurnID, st.RequestID)
	}
	// A framework that sends turnStart after all ends the turn it never
	// announced: the implicit turn gives way to the declared one rather
	// than overlapping it — unless the new turn nests inside it.
	if !s.explicitTurnOpen() {
		s.closeImplicitTurns(st, p.ParentTurnID)
	}
	if s.OpenTurn(p.TurnID) != nil {
		r.add(TurnIDReused, "turn %q is already open", p.TurnID)
		return
	}
	if slices.Contains(s.RecentTurnIDs, p.TurnID) {
		r.add(TurnIDReused, "turn %q was already used in this session", p.TurnID)
	}
	// A turn's index is the count it brings the session to once it does
	// some work (RecordDecision); a nested turn is part of the turn it
	// nests in and shares its index, so nesting adds nothing to a count.
	index, window := s.TurnsStarted+1, s.WindowTurns+1
	if ContinuesWork(p.TriggeredBy) {
		window = s.WindowTurns
	}
	switch {
	case p.ParentTurnID != "":
		spawnedBy := len(s.RecentTurnIDs) == 0 && s.Parent != nil && s.Parent.TurnID == p.ParentTurnID
		if pt := s.OpenTurn(p.ParentTurnID); pt != nil {
			index, window = pt.Index, pt.WindowIndex
		} else if !spawnedBy {
			r.add(ParentTurnUnknown, "parent_turn_id %q names no open turn", p.ParentTurnID)
		}
	case len(s.OpenTurns) > 0:
		r.add(TurnOverlap, "turn %q starts while turn %q is open and names no parent_turn_id", p.TurnID, s.OpenTurns[len(s.OpenTurns)-1].TurnID)
	}
	if len(s.OpenTurns) >= MaxOpenTurns {
		r.add(TurnDepthExceeded, "turn %q would be open turn number %d; at most %d may be open", p.TurnID, len(s.OpenTurns)+1, MaxOpenTurns)
		return
	}
	s.OpenTurns = append(s.OpenTurns, Turn{
		TurnID: p.TurnID, Index: index, WindowIndex: window, ParentTurnID: p.ParentTurnID, TriggeredBy: p.TriggeredBy,
		ExpectedInputs: p.ExpectedInputs, StartSeq: st.Seq, StartTime: st.Time,
	})
	s.RecentTurnIDs = remember(s.RecentTurnIDs, p.TurnID, MaxRecentTurnIDs)
	t := s.OpenTurns[len(s.OpenTurns)-1]
	r.Turn = &t
}

// ContinuesWork reports whether a turn opened with this triggered_by goes
// on with the agent's own work — a Stop hook's continuation directive
// (auto_continuation), the agent's loop (agent_loop), a subagent's return
// (subagent_return) — rather than bringing the session something new: a
// user's message, a schedule, an outside event. Such a turn counts as a
// turn (its index, per-turn limits) but does not age taint windows: it
// shares the window index of the turn it continues (Session.WindowTurns).
func ContinuesWork(triggeredBy string) bool {
	switch triggeredBy {
	case "auto_continuation", "agent_loop", "subagent_return":
		return true
	}
	return false
}

// checkTurnIDs checks that a turnStart or turnEnd carries metadata.turn_id
// and that it equals the payload's turn_id.
func checkTurnIDs(st Step, payloadTurnID string, r *Result) {
	switch st.TurnID {
	case "":
		r.add(TurnIDMissing, "%s carries no metadata.turn_id (the payload says %q)", st.Method.Hook, payloadTurnID)
	case payloadTurnID:
	default:
		r.add(TurnIDMismatch, "%s metadata.turn_id %q differs from payload turn_id %q", st.Method.Hook, st.TurnID, payloadTurnID)
	}
}

func (s *Session) endTurn(st Step, r *Result) {
	p := st.TurnEnd
	checkTurnIDs(st, p.TurnID, r)
	i := s.openTurnIndex(p.TurnID)
	if i < 0 {
		r.add(TurnEndUnmatched, "turnEnd names turn %q, which is not open", p.TurnID)
		return
	}
	t := s.OpenTurns[i]
	if p.StepCount != nil && *p.StepCount != t.Steps {
		r.add(TurnStepCountMismatch, "turn %q: step_count %d, turnguard saw %d steps", t.TurnID, *p.StepCount, t.Steps)
	}
	if p.ToolCallCount != nil && *p.ToolCallCount != t.ToolCalls {
		r.add(TurnStepCountMismatch, "turn %q: tool_call_count %d, turnguard saw %d tool calls", t.TurnID, *p.ToolCallCount, t.ToolCalls)
	}
	// The turn ends, and with it every open turn nested inside it.
	closing := map[string]bool{t.TurnID: true}
	kept := make([]Turn, 0, len(s.OpenTurns))
	for _, o := range s.OpenTurns {
		switch {
		case o.TurnID == t.TurnID:
		case closing[o.ParentTurnID]:
			closing[o.TurnID] = true
			r.add(TurnLeftOpen, "turn %q was still open when its enclosing turn %q ended", o.TurnID, t.TurnID)
		default:
			kept = append(kept, o)
		}
	}
	s.OpenTurns = kept
	s.LastClosedTurn = closedTurn(t, p.Outcome, st)
	r.Turn = &t
}

func closedTurn(t Turn, outcome string, st Step) *ClosedTurn {
	return &ClosedTurn{TurnID: t.TurnID, Index: t.Index, Outcome: outcome, Steps: t.Steps, ToolCalls: t.ToolCalls,
		EndSeq: st.Seq, EndTime: st.Time, Implicit: t.Implicit}
}

func (s *Session) countStep(st Step, r *Result) {
	explicit := s.explicitTurnOpen()
	switch {
	case st.TurnID == "":
		// Only a framework that declared the open turn is at fault for a
		// step it did not attribute to it; an implicit turn was never
		// declared.
		if explicit {
			r.add(TurnIDMissing, "%s inside open turn %q carries no metadata.turn_id", st.Method.Hook, s.OpenTurns[len(s.OpenTurns)-1].TurnID)
		}
		return
	case s.OpenTurn(st.TurnID) != nil:
	case slices.Contains(s.RecentTurnIDs, st.TurnID):
		r.add(TurnIDMismatch, "metadata.turn_id %q names a turn that already ended", st.TurnID)
		return
	case explicit:
		r.add(TurnIDMismatch, "metadata.turn_id %q names no open turn", st.TurnID)
		return
	default:
		s.openImplicitTurn(st, r)
	}
	t := s.OpenTurn(st.TurnID)
	t.Steps++
	if st.Method.Method == "steps/toolCallRequest" {
		t.ToolCalls++
	}
	if t.Denied {
		r.add(TurnDenied, "%s inside turn %q, whose turnStart was denied", st.Method.Hook, t.TurnID)
	}
	if len(t.ExpectedInputs) > 0 && !slices.Contains(t.ExpectedInputs, st.Method.Hook) {
		r.add(UnexpectedInput, "%s is not among turn %q's expected_inputs %v", st.Method.Hook, t.TurnID, t.ExpectedInputs)
	}
	c := *t
	r.Turn = &c
}

// openImplicitTurn opens the turn a step names when no turnStart did: a
// framework that never sends turnStart (the Codex adapter sends only its
// own turn id in each step's metadata) still gets turns, so taint windows
// and per-turn limits count its turns as they count declared ones. The
// step names a new turn id and no declared turn is open; the implicit turn
// it names replaces the previous one, which nobody will end.
func (s *Session) openImplicitTurn(st Step, r *Result) {
	s.closeImplicitTurns(st, "")
	s.OpenTurns = append(s.OpenTurns, Turn{TurnID: st.TurnID, Index: s.TurnsStarted + 1, WindowIndex: s.WindowTurns + 1, StartSeq: st.Seq, StartTime: st.Time, Implicit: true})
	s.RecentTurnIDs = remember(s.RecentTurnIDs, st.TurnID, MaxRecentTurnIDs)
	r.add(TurnImplicit, "%s opened turn %q implicitly: no turnStart announced it", st.Method.Hook, st.TurnID)
}

// closeImplicitTurns ends the open implicit turns but keep, without a
// violation: the framework never declared them, so it cannot have left
// them open.
func (s *Session) closeImplicitTurns(st Step, keep string) {
	kept := s.OpenTurns[:0]
	for _, o := range s.OpenTurns {
		if o.Implicit && o.TurnID != keep {
			s.LastClosedTurn = closedTurn(o, "", st)
			continue
		}
		kept = append(kept, o)
	}
	s.OpenTurns = kept
}

// explicitTurnOpen reports whether a turn opened by turnStart is open.
func (s *Session) explicitTurnOpen() bool {
	return slices.ContainsFunc(s.OpenTurns, func(t Turn) bool { return !t.Implicit })
}

func (s *Session) endSession(st Step, r *Result) {
	for _, o := range s.OpenTurns {
		if !o.Implicit {
			r.add(TurnLeftOpen, "turn %q was still open at sessionEnd", o.TurnID)
		}
	}
	s.OpenTurns = s.OpenTurns[:0]
	s.Status = StatusClosed
	s.EndReason = st.SessionEnd.EffectiveReason()
}

// remember appends id to a bounded most-recent-last list.
func remember(list []string, id string, limit int) []string {
	list = append(list, id)
	if len(list) > limit {
		list = slices.Delete(list, 0, len(list)-limit)
	}
	return list
}
