package hosthook

import "github.com/google/uuid"

// codexPlan maps a Codex event as the ACS Codex adapter does: PreToolUse
// is a toolCallRequest in the turn Codex names, its request id derived
// from tool_use_id under the session's UUID. PostToolUse, which the
// adapter does not send, is the call's toolCallResult: its output entered
// the context, and the session's taint and lineage should see it.
//
// Turns. A host configured with PreToolUse and PostToolUse only (as
// connect codex did before UserPromptSubmit) sends no turn boundaries:
// each new turn_id opens an implicit turn, taken for a user's (it ages
// the taint window). UserPromptSubmit, which Codex fires with the turn's
// turn_id for the prompt that starts a turn and for input the user adds to
// a running one, opens the turn as the Claude Code path does: a turnStart
// (user_message) whose id is Codex's turn_id, and a userMessage. Once a
// session has a turn opened so (Session.Declared), a turn_id no prompt
// opened is a turn the agent started itself — goal mode's hidden
// continuation prompt (codex-rs/core/src/goals.rs), a Stop hook's
// continuation — and opens as an agent_loop, which ages no window. A
// session that never saw UserPromptSubmit keeps its implicit turns: its
// windows would never age otherwise.
//
// A child agent's events (Codex's multi-agent threads: the root's
// session_id, agent_id naming the child, the child's own turn_id) carry
// none of the child's turns: the child's turns are not the session's.
// Taken for the root's, each would close the root's turn — the root's
// next call then named a turn that had ended (turn_id_mismatch, denied) —
// and age the root's window as a user's turn would. In the root's session
// a child's call is in the root's declared turn (a step without a turn id
// inside a declared turn is refused), or in none; it is judged by the
// session's window and taints it, as the root's calls do: what a child
// read reaches the root when its report does, whatever Codex hooks. Each
// is sent first in the child's own session (SubagentSession), in no turn,
// so that the child is judged by a window of its own too: the user's
// prompts to the root age the root's window, not the page the child still
// holds (that window closes by time only). A child's UserPromptSubmit (its
// input, which the root wrote) sends nothing.
func (e *Event) codexPlan(s Session, newID func() string) []Step {
	ns, err := uuid.Parse(e.Session)
	if err != nil {
		return nil
	}
	if e.Subagent != "" {
		if e.Name == UserPromptSubmit {
			return nil
		}
		turn := ""
		if s.Declared {
			turn = s.OpenTurn
		}
		steps := codexSteps(e, ns, turn, "")
		if child := e.SubagentSession(); child != "" {
			steps = append(codexSteps(e, uuid.MustParse(child), "", child), steps...)
		}
		return steps
	}
	var steps []Step
	switch {
	case e.Name == UserPromptSubmit && e.TurnID != "":
		if s.OpenTurn != e.TurnID {
			steps = codexTurn(e, s, "user_message", newID)
		}
		return append(steps, Step{Method: "steps/userMessage", RequestID: newID(), TurnID: e.TurnID, Payload: map[string]any{"content": []any{map[string]any{"type": "text", "value": e.Prompt}}}, Hook: e.Name})
	case s.Declared && e.TurnID != "" && e.TurnID != s.OpenTurn && (e.Name == PreToolUse || e.Name == PostToolUse):
		steps = codexTurn(e, s, "agent_loop", newID)
	}
	return append(steps, codexSteps(e, ns, e.TurnID, "")...)
}

// codexTurn ends the session's declared turn still open and opens Codex's
// turn_id as a turn triggered_by trigger (an implicit turn open ends when
// the core reads the turnStart).
func codexTurn(e *Event, s Session, trigger string, newID func() string) []Step {
	var steps []Step
	if s.Declared && s.OpenTurn != "" {
		steps = append(steps, Step{Method: "steps/turnEnd", RequestID: newID(), TurnID: s.OpenTurn,
			Payload: map[string]any{"turn_id": s.OpenTurn, "outcome": "completed"}, Hook: e.Name})
	}
	return append(steps, Step{Method: "steps/turnStart", RequestID: e.TurnID, TurnID: e.TurnID,
		Payload: map[string]any{"turn_id": e.TurnID, "triggered_by": trigger}, Hook: e.Name})
}

// codexSteps are an event's steps in a session (session "" the event's
// own; ns its UUID), their request ids derived from tool_use_id under ns.
func codexSteps(e *Event, ns uuid.UUID, turn, session string) []Step {
	id := func(kind string) string { return uuid.NewSHA1(ns, []byte("codex:"+kind+":"+e.ToolUseID)).String() }
	switch e.Name {
	case PreToolUse:
		return []Step{{Method: "steps/toolCallRequest", RequestID: id("tool_use"), TurnID: turn,
			Payload: map[string]any{"tool": map[string]any{"name": e.Tool}, "arguments": wrap(e.ToolInput)}, Hook: e.Name, Session: session}}
	case PostToolUse:
		outputs := []any{}
		if e.HasResponse && e.Response != nil {
			outputs = append(outputs, map[string]any{"value": bounded(e.Response)})
		}
		return []Step{{Method: "steps/toolCallResult", RequestID: id("tool_result"), TurnID: turn,
			Payload: map[string]any{"tool": map[string]any{"name": e.Tool}, "exit_status": "success", "outputs": outputs,
				"request_id_ref": id("tool_use")}, Hook: e.Name, Session: session}}
	}
	return nil
}
