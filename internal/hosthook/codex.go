package hosthook

import "github.com/google/uuid"

// codexPlan maps a Codex event as the ACS Codex adapter does: PreToolUse
// is a toolCallRequest in the turn Codex names (the session's turns are
// implicit: Codex sends no turn boundaries), its request id derived from
// tool_use_id under the session's UUID. PostToolUse, which the adapter
// does not send, is the call's toolCallResult: its output entered the
// context, and the session's taint and lineage should see it. Nothing
// else is sent.
func (e *Event) codexPlan() []Step {
	ns, err := uuid.Parse(e.Session)
	if err != nil {
		return nil
	}
	id := func(kind string) string { return uuid.NewSHA1(ns, []byte("codex:"+kind+":"+e.ToolUseID)).String() }
	switch e.Name {
	case PreToolUse:
		return []Step{{Method: "steps/toolCallRequest", RequestID: id("tool_use"), TurnID: e.TurnID,
			Payload: map[string]any{"tool": map[string]any{"name": e.Tool}, "arguments": wrap(e.ToolInput)}, Hook: e.Name}}
	case PostToolUse:
		outputs := []any{}
		if e.HasResponse && e.Response != nil {
			outputs = append(outputs, map[string]any{"value": bounded(e.Response)})
		}
		return []Step{{Method: "steps/toolCallResult", RequestID: id("tool_result"), TurnID: e.TurnID,
			Payload: map[string]any{"tool": map[string]any{"name": e.Tool}, "exit_status": "success", "outputs": outputs,
				"request_id_ref": id("tool_use")}, Hook: e.Name}}
	}
	return nil
}
