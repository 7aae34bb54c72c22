package traffic

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// action is one thing a turn does besides opening and closing.
type action int

const (
	// actBenign is a read-only tool call and its result.
	actBenign action = iota
	// actTaint is a call whose result brings untrusted content in.
	actTaint
	// actConsequential is a consequential call (and its result when it is
	// allowed; a denied call is not run).
	actConsequential
	// actNested is a nested agent_loop turn with one or two benign calls.
	actNested
	// actSubagent spawns a subagent and records its stop.
	actSubagent
)

type turnPlan struct {
	trigger string
	user    bool
	actions []action
	// pause is envelope time skipped before the turn starts.
	pause time.Duration
}

// turnRec is an open turn as the model tracks it.
type turnRec struct {
	id    string
	index int
	// window is the turn's index among the turns that age windows: a
	// turn continuing the agent's work shares the one before it
	// (turnstate.ContinuesWork).
	window    int
	steps     int
	toolCalls int
	denied    bool
}

type anchor struct {
	turn int
	at   time.Time
}

// builder emits one session's envelopes and runs the model of the default
// pack beside it.
type builder struct {
	rng *rand.Rand
	now time.Time
	s   *Session

	turnsStarted int
	windowTurns  int
	open         []*turnRec
	// autoRun counts consecutive auto_continuation turnStarts (TG-CONT-001).
	autoRun int
	// taint is the newest untrusted input (TG-TAINT-001's anchor).
	taint *anchor
	// userProv is the provenance id of the newest user message; agent
	// generated values derive from it, so they stay trusted.
	userProv string
	provN    int
}

func (b *builder) plan() {
	r := b.rng.IntN(100)
	n := 2 + b.rng.IntN(6)
	var turns []turnPlan
	switch {
	case r < 35:
		b.s.Kind = Clean
		for i := range n {
			turns = append(turns, b.turn(i, true))
		}
	case r < 90:
		b.s.Kind = Taint
		gap := b.rng.IntN(6)
		var pause time.Duration
		if r >= 80 {
			b.s.Kind = TaintExpired
			gap = 1 + b.rng.IntN(2)
			pause = taintDuration + time.Duration(1+b.rng.IntN(29))*time.Minute
		}
		b.s.Gap = gap
		at := b.rng.IntN(n)
		n = max(n, at+gap+1+b.rng.IntN(2))
		for i := range n {
			turns = append(turns, b.turn(i, false))
		}
		turns[at].actions = insert(b.rng, turns[at].actions, actTaint)
		if gap == 0 {
			turns[at].actions = append(turns[at].actions, actConsequential)
		} else {
			turns[at+gap].actions = insert(b.rng, turns[at+gap].actions, actConsequential)
			turns[at+gap].pause = pause
		}
	default:
		b.s.Kind = Runaway
		turns = append(turns, b.turn(0, false))
		for range maxAutoRun + 1 {
			p := turnPlan{trigger: "auto_continuation"}
			if b.rng.IntN(2) == 0 {
				p.actions = []action{actBenign}
			}
			turns = append(turns, p)
		}
		turns = append(turns, turnPlan{trigger: "user_message", user: true, actions: []action{actBenign}})
	}

	b.sessionStart()
	for _, t := range turns {
		b.runTurn(t, nil)
	}
	b.sessionEnd()
}

// turn plans top-level turn i: the first is always opened by a user
// message (it gives the session's provenance its trusted root).
func (b *builder) turn(i int, consequential bool) turnPlan {
	p := turnPlan{trigger: "user_message", user: true}
	if i > 0 {
		switch r := b.rng.IntN(20); {
		case r < 2:
			p = turnPlan{trigger: "agent_loop"}
		case r < 4:
			p = turnPlan{trigger: "scheduled"}
		case r < 5:
			p = turnPlan{trigger: "external_event"}
		}
	}
	for range b.rng.IntN(4) {
		a := actBenign
		switch r := b.rng.IntN(20); {
		case r < 4 && consequential:
			a = actConsequential
		case r < 6:
			a = actNested
		case r < 7:
			a = actSubagent
		}
		p.actions = append(p.actions, a)
	}
	return p
}

func insert(rng *rand.Rand, as []action, a action) []action {
	i := rng.IntN(len(as) + 1)
	out := make([]action, 0, len(as)+1)
	out = append(out, as[:i]...)
	out = append(out, a)
	return append(out, as[i:]...)
}

func (b *builder) runTurn(p turnPlan, parent *turnRec) {
	b.now = b.now.Add(p.pause)
	t := b.turnStart(p.trigger, parent)
	if t.denied {
		b.turnEnd(t, "denied_at_start")
		return
	}
	if p.user {
		b.userMessage(t)
	}
	for _, a := range p.actions {
		switch a {
		case actBenign:
			b.toolCall(t, pick(b.rng, benignTools), false)
		case actTaint:
			b.toolCall(t, b.taintTool(), true)
		case actConsequential:
			b.toolCall(t, pick(b.rng, consequentialTools), false)
		case actNested:
			inner := turnPlan{trigger: "agent_loop", actions: []action{actBenign}}
			if b.rng.IntN(2) == 0 {
				inner.actions = append(inner.actions, actBenign)
			}
			b.runTurn(inner, t)
		case actSubagent:
			b.subagent(t)
		}
	}
	b.agentResponse(t)
	b.turnEnd(t, "completed")
}

// next advances envelope time by 1–3 s and returns a fresh request id.
// Turns therefore take at least 3 s, far from TG-RATE-002's 30 a minute.
func (b *builder) next() string {
	b.now = b.now.Add(time.Duration(1+b.rng.IntN(3)) * time.Second)
	return b.uuid()
}

func (b *builder) emit(method, rid string, t *turnRec, payload map[string]any, d acs.Disposition, alerts ...string) {
	// A turn counts once a work step in it is let through
	// (turnstate.RecordDecision); the generated turns that are not denied
	// at their start all do some.
	if t != nil && !t.denied && d == acs.Allow && turnstate.Work(acs.LookupMethod(method)) && t.index > b.turnsStarted {
		b.turnsStarted = t.index
		b.windowTurns = max(b.windowTurns, t.window)
	}
	env := wireEnvelope{JSONRPC: "2.0", Method: method, ID: rid, Params: wireParams{
		ACSVersion: acs.Version, RequestID: rid, Timestamp: b.now.UTC().Format(time.RFC3339),
		Metadata: wireMetadata{AgentID: b.s.AgentID, SessionID: b.s.ID}, Payload: payload,
	}}
	if t != nil {
		env.Params.Metadata.TurnID = t.id
	}
	data, err := json.Marshal(env)
	if err != nil {
		panic(fmt.Sprintf("traffic: encode %s: %v", method, err)) // plain maps and strings always encode
	}
	hook := acs.HookToken(method)
	b.s.Envelopes = append(b.s.Envelopes, Envelope{
		Subject: acs.InboundSubject(b.s.Tenant, b.s.ID, hook), Hook: hook, Data: data,
		RequestID: rid, MsgID: b.s.ID + ":" + rid, Decision: d, Alerts: alerts,
		turnsStarted: b.turnsStarted, openTurns: len(b.open),
	})
}

type wireEnvelope struct {
	JSONRPC string     `json:"jsonrpc"`
	Method  string     `json:"method"`
	ID      string     `json:"id"`
	Params  wireParams `json:"params"`
}

type wireParams struct {
	ACSVersion string       `json:"acs_version"`
	RequestID  string       `json:"request_id"`
	Timestamp  string       `json:"timestamp"`
	Metadata   wireMetadata `json:"metadata"`
	Payload    any          `json:"payload"`
}

type wireMetadata struct {
	AgentID   string `json:"agent_id"`
	SessionID string `json:"session_id"`
	TurnID    string `json:"turn_id,omitempty"`
}

func (b *builder) sessionStart() {
	rid := b.next()
	p := map[string]any{"policy_mode": "enforce", "platform_context": map[string]any{"framework": "loadgen", "model": pick(b.rng, models)}}
	b.emit("steps/sessionStart", rid, nil, p, acs.Allow)
}

func (b *builder) sessionEnd() {
	rid := b.next()
	b.emit("steps/sessionEnd", rid, nil, map[string]any{"reason": "completed"}, acs.Allow)
}

func (b *builder) turnStart(trigger string, parent *turnRec) *turnRec {
	rid := b.next()
	// A nested turn shares its enclosing turn's index; a new top-level
	// turn gets the next one, which it takes once it does some work.
	t := &turnRec{id: rid, index: b.turnsStarted + 1, window: b.windowTurns + 1}
	if turnstate.ContinuesWork(trigger) && b.windowTurns > 0 {
		t.window = b.windowTurns
	}
	if parent != nil {
		t.index, t.window = parent.index, parent.window
	}
	b.open = append(b.open, t)
	p := map[string]any{"turn_id": rid, "triggered_by": trigger}
	if parent != nil {
		p["parent_turn_id"] = parent.id
	}
	// TG-CONT-001 counts turnStarts opened by auto_continuation in a row;
	// any other turnStart ends the run.
	if trigger == "auto_continuation" {
		b.autoRun++
	} else {
		b.autoRun = 0
	}
	if b.autoRun > maxAutoRun {
		// A denied turn does not count: the next turn gets its index
		// (turnstate.RecordDecision).
		t.denied = true
		b.emit("steps/turnStart", rid, t, p, acs.Deny, RuleContinuation)
		return t
	}
	b.emit("steps/turnStart", rid, t, p, acs.Allow)
	return t
}

func (b *builder) turnEnd(t *turnRec, outcome string) {
	rid := b.next()
	b.open = b.open[:len(b.open)-1]
	p := map[string]any{"turn_id": t.id, "outcome": outcome, "step_count": t.steps, "tool_call_count": t.toolCalls}
	b.emit("steps/turnEnd", rid, t, p, acs.Allow)
}

func (b *builder) prov(origin string, derived bool) map[string]any {
	b.provN++
	p := map[string]any{"provenance_id": fmt.Sprintf("p-%d", b.provN), "origin": origin}
	if derived {
		p["derived_from"] = []string{b.userProv}
	}
	return p
}

func (b *builder) userMessage(t *turnRec) {
	rid := b.next()
	t.steps++
	c := map[string]any{"type": "text", "value": pick(b.rng, prompts)}
	if b.s.Provenance {
		pv := b.prov("user_input", false)
		b.userProv = pv["provenance_id"].(string)
		c["provenance"] = pv
	}
	b.emit("steps/userMessage", rid, t, map[string]any{"content": []any{c}}, acs.Allow)
}

func (b *builder) agentResponse(t *turnRec) {
	rid := b.next()
	t.steps++
	c := map[string]any{"type": "text", "value": pick(b.rng, responses)}
	if b.s.Provenance && b.userProv != "" {
		c["provenance"] = b.prov("agent_generated", true)
	}
	b.emit("steps/agentResponse", rid, t, map[string]any{"content": []any{c}}, acs.Allow)
}

// subagent emits a subagentStart and its subagentStop. TG-TAINT-004: a
// spawn inside the taint window is denied, and the framework reports the
// subagent denied_at_spawn.
func (b *builder) subagent(t *turnRec) {
	child := b.uuid()
	rid := b.next()
	t.steps++
	start := map[string]any{
		"subagent_session_id": child, "parent_session_id": b.s.ID, "parent_step_id": t.id, "intent_derivation": "inherit_subset",
	}
	outcome := "completed"
	if b.inWindow(t) {
		b.emit("steps/subagentStart", rid, t, start, acs.Deny, RuleTaintActing)
		outcome = "denied_at_spawn"
	} else {
		b.emit("steps/subagentStart", rid, t, start, acs.Allow)
	}
	rid = b.next()
	t.steps++
	b.emit("steps/subagentStop", rid, t, map[string]any{"subagent_session_id": child, "outcome": outcome}, acs.Allow)
}

// inWindow reports whether a step of turn t now lies in the taint window:
// the anchor's turn or the next two that age windows (an enclosing turn
// older than the anchor counts as the anchor's; a continuation ages
// none), and within 30 minutes of it.
func (b *builder) inWindow(t *turnRec) bool {
	return b.taint != nil && max(t.window-b.taint.turn, 0) <= taintTurns && b.now.Sub(b.taint.at) <= taintDuration
}

// toolCall emits a toolCallRequest and, unless it is denied, its result;
// taints says the result brings untrusted content in.
func (b *builder) toolCall(t *turnRec, tool toolSpec, taints bool) {
	rid := b.next()
	t.steps++
	t.toolCalls++
	args := map[string]any{}
	for _, arg := range tool.args {
		a := map[string]any{"value": arg.value}
		if b.s.Provenance {
			// An addressed call's values are the model's own: derived
			// from nothing the session saw, so no adapter declares a
			// lineage for them (a derived_from naming the user's message
			// could name one the session no longer remembers: asked).
			a["provenance"] = b.prov("agent_generated", !tool.addressed)
		}
		args[arg.name] = a
	}
	p := map[string]any{"tool": map[string]any{"name": tool.name}, "arguments": args}
	if tool.capability != "" {
		p["capability"] = tool.capability
	}
	// TG-TAINT-001: a consequential call in the anchor's turn or the next
	// two (an enclosing turn older than the anchor counts as the anchor's),
	// and within 30 minutes of it, is denied; TG-TAINT-002 (fail closed):
	// so is any other call of a tool not classed read_only. An addressed
	// tool is judged by its values instead (TG-TAINT-005/006), and none of
	// its values came from untrusted content: allowed.
	if b.inWindow(t) && !tool.addressed {
		switch {
		case tool.consequential:
			b.emit("steps/toolCallRequest", rid, t, p, acs.Deny, RuleTaint)
			return
		case !tool.readOnly:
			b.emit("steps/toolCallRequest", rid, t, p, acs.Deny, RuleTaintFailClosed)
			return
		}
	}
	b.emit("steps/toolCallRequest", rid, t, p, acs.Allow)

	res := b.next()
	t.steps++
	out := map[string]any{"value": tool.output}
	if taints {
		if b.s.Provenance {
			pv := b.prov(tool.origin, false)
			if tool.source != "" {
				pv["source_id"] = tool.source
			}
			out["provenance"] = pv
		}
		b.taint = &anchor{turn: max(t.window, b.windowTurns), at: b.now}
	}
	b.emit("steps/toolCallResult", res, t, map[string]any{
		"tool": map[string]any{"name": tool.name}, "exit_status": "success", "request_id_ref": rid,
		"outputs": []any{out}, "duration_ms": 20 + b.rng.IntN(900),
	}, acs.Allow)
}

// taintTool picks a tool whose result taints: with provenance, any tool
// whose output carries an untrusted origin; without, a tool the default
// catalog classes untrusted_source.
func (b *builder) taintTool() toolSpec {
	if b.s.Provenance {
		return pick(b.rng, provenanceTaintTools)
	}
	return pick(b.rng, catalogTaintTools)
}

func pick[T any](rng *rand.Rand, from []T) T { return from[rng.IntN(len(from))] }
