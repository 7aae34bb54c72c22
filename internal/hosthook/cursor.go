package hosthook

import (
	"cmp"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
)

// Cursor's hook events (hook_event_name), as the ACS Cursor adapter maps
// them (adapters/cursor/mapping.md, checked there against Cursor's hooks
// documentation).
const (
	CursorSessionStart         = "sessionStart"
	CursorSessionEnd           = "sessionEnd"
	CursorStop                 = "stop"
	CursorBeforeSubmitPrompt   = "beforeSubmitPrompt"
	CursorPreToolUse           = "preToolUse"
	CursorPostToolUse          = "postToolUse"
	CursorPostToolUseFailure   = "postToolUseFailure"
	CursorBeforeShellExecution = "beforeShellExecution"
	CursorAfterShellExecution  = "afterShellExecution"
	CursorBeforeMCPExecution   = "beforeMCPExecution"
	CursorAfterMCPExecution    = "afterMCPExecution"
	CursorAfterFileEdit        = "afterFileEdit"
	CursorAfterTabFileEdit     = "afterTabFileEdit"
	CursorAfterAgentResponse   = "afterAgentResponse"
	CursorAfterAgentThought    = "afterAgentThought"
)

// CursorMCPServer is the server part of the name an MCP tool's call is
// sent under from Cursor: mcp__cursor__<tool>.
const CursorMCPServer = "cursor"

// cursorToolName is the name a Cursor tool's call is sent under. Cursor
// names an MCP tool MCP:<tool> in its tool hooks and <tool> in its MCP
// hooks, with no server in either (preToolUse carries none): both become
// mcp__cursor__<tool>, so that the catalog's MCP classes (mcp__*__get*
// read-only, mcp__*__send* addressed, every answer untrusted) see them,
// and no server can name a tool to match a trusted entry of a server the
// catalog names (mcp__ide__getDiagnostics).
func cursorToolName(event, tool string) string {
	if rest, ok := strings.CutPrefix(tool, "MCP:"); ok {
		return "mcp__" + CursorMCPServer + "__" + rest
	}
	if event == CursorBeforeMCPExecution || event == CursorAfterMCPExecution {
		return "mcp__" + CursorMCPServer + "__" + tool
	}
	return tool
}

// cursorPlan maps a Cursor event as the ACS Cursor adapter does, reading
// the session's state where the adapter keeps a file: a prompt opens a
// turn and stop ends it; preToolUse, beforeShellExecution and
// beforeMCPExecution are toolCallRequests, and their after-events
// toolCallResults. Not sent, as the adapter does not send them or cannot
// honestly: subagentStart (the Task tool's preToolUse is the call, and the
// subagent's steps arrive in this conversation), subagentStop, preCompact
// (no entry list), the read gates, workspaceOpen.
func (e *Event) cursorPlan(s Session, newID func() string) []Step {
	f := e.fields
	p := &planner{e: e, s: s, newID: newID}
	str := func(key string) string { v, _ := f[key].(string); return v }
	result := func(tool string, status string, outputs []any, ref string) {
		payload := map[string]any{"tool": map[string]any{"name": tool}, "exit_status": status, "outputs": outputs}
		if d, ok := f["duration"].(json.Number); ok {
			if ms, err := d.Float64(); err == nil && ms >= 0 && ms < 1e15 {
				payload["duration_ms"] = int64(ms)
			}
		}
		if ref != "" {
			payload["request_id_ref"] = ref
		}
		p.inTurn()
		p.add("steps/toolCallResult", newID(), payload)
	}
	switch e.Name {
	case CursorSessionStart:
		if p.s.Closed {
			// A chat opened again keeps its conversation_id: its
			// sessionStart reopens the session, which keeps what
			// tainted it (as Claude Code's resume).
			p.s.Started = false
		}
		p.start(e.sessionStartPayload())
	case CursorSessionEnd:
		reason := map[string]string{"aborted": "cancelled", "error": "error",
			"window_close": "abandoned", "user_close": "abandoned"}[strings.ToLower(str("reason"))]
		if reason == "" {
			reason = "completed"
		}
		p.end(reason)
	case CursorStop:
		outcome := map[string]string{"aborted": "interrupted", "error": "error"}[strings.ToLower(str("status"))]
		if outcome == "" {
			outcome = "completed"
		}
		p.endTurn(outcome)
	case CursorBeforeSubmitPrompt:
		p.prompt(e.Prompt, cursorAttachments(f, newID)...)
	case CursorPreToolUse:
		p.inTurn()
		p.add("steps/toolCallRequest", e.callID("tool_use", newID), map[string]any{"tool": map[string]any{"name": e.Tool}, "arguments": wrap(objectOf(f["tool_input"]))})
	case CursorBeforeShellExecution:
		p.inTurn()
		p.add("steps/toolCallRequest", newID(), map[string]any{"tool": map[string]any{"name": "Shell"}, "arguments": wrap(map[string]any{"command": str("command")})})
	case CursorBeforeMCPExecution:
		p.inTurn()
		tool := map[string]any{"name": e.Tool}
		if provider := cmp.Or(str("url"), str("command")); provider != "" {
			tool["provider"] = provider
		}
		p.add("steps/toolCallRequest", newID(), map[string]any{"tool": tool, "arguments": wrap(objectOf(f["tool_input"]))})
	case CursorPostToolUse:
		parsed := parseJSONText(f["tool_output"])
		status := "success"
		if m, ok := parsed.(map[string]any); ok {
			if code, ok := m["exitCode"].(json.Number); ok && code.String() != "0" {
				status = "failure"
			}
		}
		result(e.Tool, status, outputsOf(parsed), e.toolUseRef())
	case CursorPostToolUseFailure:
		status := map[string]string{"timeout": "timeout", "permission_denied": "blocked"}[strings.ToLower(str("failure_type"))]
		if status == "" {
			status = "failure"
		}
		result(e.Tool, status, outputsOf(cmp.Or(str("error_message"), "(no error message)")), e.toolUseRef())
	case CursorAfterShellExecution:
		result("Shell", "success", outputsOf(f["output"]), "")
	case CursorAfterMCPExecution:
		// An MCP server's answer is what others wrote: its outputs say
		// so themselves — ACS provenance origin tool_output, untrusted
		// (§7.2) — as well as the catalog's mcp__* class.
		outputs := outputsOf(parseJSONText(f["result_json"]))
		for _, o := range outputs {
			o.(map[string]any)["provenance"] = map[string]any{"provenance_id": newID(), "origin": "tool_output", "source_id": e.Tool}
		}
		result(e.Tool, "success", outputs, "")
	case CursorAfterFileEdit, CursorAfterTabFileEdit:
		if e.Name == CursorAfterTabFileEdit {
			// A Tab completion is the user typing, not the agent going
			// on after its stop.
			p.inTurnAs("user_message")
		}
		out := map[string]any{"file_path": str("file_path")}
		if edits, ok := f["edits"].([]any); ok && len(edits) > 0 {
			out["edits"] = edits
		}
		result("Edit", "success", outputsOf(out), "")
	case CursorAfterAgentResponse, CursorAfterAgentThought:
		p.respond(str("text"))
	}
	return p.steps
}

// cursorAnswer is Cursor's answer to a decision: permission on the gates,
// continue on the prompt, additional_context on postToolUse, nothing on
// the rest. An allowed gate says allow, as the adapter answers: Cursor's
// permission hooks expect one. An ask is answered deny: Cursor accepts ask
// on preToolUse without enforcing it, and runs a beforeShellExecution's
// ask unprompted in its Auto-review mode, which a hook cannot see — an
// approval it may skip would let the call run (fail closed).
func (e *Event) cursorAnswer(decision, reason string) map[string]any {
	switch e.Name {
	case CursorPreToolUse, CursorBeforeShellExecution, CursorBeforeMCPExecution:
		switch decision {
		case "allow", "":
			return map[string]any{"permission": "allow"}
		case "ask", "defer":
			reason += " (turnguard would ask you; Cursor may not enforce an ask, so the call is refused)"
			return map[string]any{"permission": "deny", "user_message": reason, "agent_message": reason}
		default:
			return map[string]any{"permission": "deny", "user_message": reason, "agent_message": reason}
		}
	case CursorBeforeSubmitPrompt:
		if decision == "allow" || decision == "" {
			return map[string]any{"continue": true}
		}
		return map[string]any{"continue": false, "user_message": reason}
	case CursorPostToolUse:
		if decision == "allow" || decision == "" {
			return nil
		}
		return map[string]any{"additional_context": "turnguard did not allow this result: " + reason}
	}
	return nil
}

// objectOf is a tool input as an object: itself, or its JSON text parsed
// (Cursor's MCP hooks send it stringified); anything else is one argument,
// raw_params, so that it is not dropped.
func objectOf(v any) map[string]any {
	switch x := parseJSONText(v).(type) {
	case map[string]any:
		return x
	case nil:
		return map[string]any{}
	default:
		return map[string]any{"raw_params": x}
	}
}

// parseJSONText parses a JSON-stringified value; a string that is not
// JSON, and anything else, is returned as it is.
func parseJSONText(v any) any {
	s, ok := v.(string)
	if !ok {
		return v
	}
	out, err := decodeOne([]byte(s))
	if err != nil {
		return s
	}
	return out
}

// outputsOf is a result's outputs: none for nil, each item of a list, or
// the one value, each within MaxOutputBytes.
func outputsOf(v any) []any {
	switch x := v.(type) {
	case nil:
		return []any{}
	case []any:
		out := make([]any, 0, len(x))
		for _, item := range x {
			out = append(out, map[string]any{"value": bounded(item)})
		}
		return out
	default:
		return []any{map[string]any{"value": bounded(x)}}
	}
}

// Bounds on the attachments of a prompt mapped.
const (
	maxAttachments     = 64
	maxAttachmentBytes = 4096
)

// cursorAttachments are the files a Cursor prompt attaches (attachments
// of type file, and the rules it applies, type rule), as ACS file parts of
// the userMessage, their value the path. One inside a workspace root is
// the user's own, as a Read of it is (provenance user_input) — unless its
// path names a file a fetch of the session wrote or a repository it
// cloned, which the core's remembered files set the label of again (a
// rule under a clone's .cursor/rules, Cursor applying it when the clone's
// files are in play; curl -o .cursor/rules/x.mdc); one from elsewhere — a
// download, a mail's attachment saved — carries no label, so the default
// pack's attached-file source takes what it says for content, not the
// user's words. A rule's relative path is the first workspace root's.
// Cursor sends the path alone; what the file says reaches the model, not
// the hook.
func cursorAttachments(f map[string]any, newID func() string) []any {
	list, _ := f["attachments"].([]any)
	var roots []string
	if rs, ok := f["workspace_roots"].([]any); ok {
		for _, r := range rs {
			if s, ok := r.(string); ok && s != "" {
				roots = append(roots, slashed(s))
			}
		}
	}
	var parts []any
	for i, a := range list {
		if len(parts) == maxAttachments {
			// The rest are not listed; unlabelled, they count as
			// content (fail closed).
			parts[len(parts)-1] = map[string]any{"type": "file", "value": fmt.Sprintf("(%d more attachments)", len(list)-i+1)}
			break
		}
		m, ok := a.(map[string]any)
		if !ok || m["type"] != "file" && m["type"] != "rule" {
			continue
		}
		p, _ := m["file_path"].(string)
		if p == "" {
			p, _ = m["filePath"].(string)
		}
		if p == "" || len(p) > maxAttachmentBytes {
			continue
		}
		if m["type"] == "rule" && !path.IsAbs(slashed(p)) && !isWindowsAbs(p) && len(roots) > 0 {
			p = path.Join(roots[0], slashed(p))
		}
		part := map[string]any{"type": "file", "value": p}
		if sp := slashed(p); slices.ContainsFunc(roots, func(r string) bool { return under(sp, r) }) {
			part["provenance"] = userInput(newID)
		}
		parts = append(parts, part)
	}
	return parts
}

// isWindowsAbs reports whether p is a Windows path from a drive's root.
func isWindowsAbs(p string) bool {
	return len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/')
}

// under reports whether the slashed path p is root or lies in it.
func under(p, root string) bool {
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/")
}

// userInput is the provenance of a part that is the user's own.
func userInput(newID func() string) map[string]any {
	return map[string]any{"provenance_id": newID(), "origin": "user_input"}
}

// slashed is a path cleaned, with Windows separators as '/'.
func slashed(p string) string {
	return path.Clean(strings.ReplaceAll(p, "\\", "/"))
}
