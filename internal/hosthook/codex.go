package hosthook

import "github.com/google/uuid"

// codexPlan maps a Codex event as the ACS Codex adapter does: PreToolUse
// is a toolCallRequest in the turn Codex names (the session's turns are
// implicit: Codex sends no turn boundaries), its request id derived from
// tool_use_id under the session's UUID. PostToolUse, which the adapter
// does not send, is the call's toolCallResult: its output entered the
// context, and the session's taint and lineage should see it. Nothing
// else is sent.
//
// A child agent's events (Codex's multi-agent threads: the root's
// session_id, agent_id naming the child, the child's own turn_id) carry no
// turn: the child's turns are not the session's. Taken for the root's,
// each would close the root's turn — the root's next call then named a
// turn that had ended (turn_id_mismatch, denied) — and age the root's
// window as a user's turn would. Outside any turn, a child's call is
// judged by the session's window and taints it, as the root's calls do:
// what a child read reaches the root when its report does, whatever
// Codex hooks. Each is sent first in the child's own session
// (SubagentSession), in no turn either, so that the child is judged by a
// window of its own too: the user's prompts to the root age the root's
// window, not the page the child still holds (that window closes by time
// only).
func (e *Event) codexPlan() []Step {
	ns, err := uuid.Parse(e.Session)
	if err != nil {
		return nil
	}
	turn := e.TurnID
	if e.Subagent != "" {
		turn = ""
	}
	steps := codexSteps(e, ns, turn, "")
	if child := e.SubagentSession(); child != "" {
		steps = append(codexSteps(e, uuid.MustParse(child), "", child), steps...)
	}
	return steps
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
