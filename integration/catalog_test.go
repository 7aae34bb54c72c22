package integration

import (
	"slices"
	"strings"
	"testing"
)

// TestReadNamedToolsThatAct (issue 23, finding 6): a Claude Code session
// over POST /acs, tainted by a WebFetch result, then calls whose names read
// but which act — an MCP getter whose verb is merge, Grep with ripgrep's
// preprocessor, Read with a command line to run, Read carrying the
// capability process.spawn — each denied by a taint guard, while the reads
// next to them (Grep with its ordinary arguments, an MCP getter, Read
// carrying filesystem.read) are allowed. Before, all of them were allowed.
func TestReadNamedToolsThatAct(t *testing.T) {
	g := startGuardian(t, nil, false, "--skew-window", "5m")
	g.ep.tokenInURL = true
	a := claudeCode(false)
	// The probes go after the second turn's Read, inside the window the
	// WebFetch result opened in the first turn.
	i := slices.IndexFunc(a.steps, func(s adapterStep) bool { return strings.HasPrefix(s.hook, "PreToolUse Read") })
	if i < 0 {
		t.Fatal("the Claude Code session has no Read step")
	}
	meta := a.steps[i].env.meta()
	call := func(hook, toolUse, payload, decision string) adapterStep {
		var check func(*testing.T, reply)
		if decision == "deny" {
			check = taintGuardDenied
		}
		return adapterStep{hook, envelopeFor("steps/toolCallRequest", uuid5(namespaceURL, "claude-code:tool_use:"+toolUse), meta, obj(payload)), decision, check}
	}
	a.steps = slices.Insert(a.steps, i+1,
		call("PreToolUse mcp__github__get_and_merge_pull_request → deny", "toolu_10",
			`{"tool":{"name":"mcp__github__get_and_merge_pull_request"},"arguments":{"owner":{"value":"acme"},"repo":{"value":"widgets"},"pullNumber":{"value":7}}}`, "deny"),
		call("PreToolUse Grep with pre → deny", "toolu_11",
			`{"tool":{"name":"Grep"},"arguments":{"pattern":{"value":"TODO"},"pre":{"value":"/tmp/x.sh"}}}`, "deny"),
		call("PreToolUse Read with a raw_command → deny", "toolu_12",
			`{"tool":{"name":"Read"},"arguments":{"file_path":{"value":"x"}},"raw_command":"cat x | sh"}`, "deny"),
		call("PreToolUse Read carrying process.spawn → deny", "toolu_13",
			`{"tool":{"name":"Read"},"capability":"process.spawn","arguments":{"file_path":{"value":"x"}}}`, "deny"),
		call("PreToolUse Grep → allow", "toolu_14",
			`{"tool":{"name":"Grep"},"arguments":{"pattern":{"value":"TODO"},"path":{"value":"src"},"glob":{"value":"*.go"},"output_mode":{"value":"content"},"-C":{"value":2}}}`, "allow"),
		call("PreToolUse mcp__github__get_pull_request → allow", "toolu_15",
			`{"tool":{"name":"mcp__github__get_pull_request"},"arguments":{"owner":{"value":"acme"},"repo":{"value":"widgets"},"pullNumber":{"value":7}}}`, "allow"),
		call("PreToolUse Read carrying filesystem.read → allow", "toolu_16",
			`{"tool":{"name":"Read"},"capability":"filesystem.read","arguments":{"file_path":{"value":"README.md"}}}`, "allow"),
	)
	runAdapter(t, g.acsClient, a, false)
}

// taintGuardDenied checks a deny by one of the default pack's taint guards.
func taintGuardDenied(t *testing.T, r reply) {
	t.Helper()
	if codes := r.strList("result.reason_codes"); !slices.Contains(codes, "untrusted_into_consequential") {
		t.Errorf("reason_codes %q lack untrusted_into_consequential: %s", codes, r)
	}
	refs, _ := r.at("result.policy_references").([]any)
	if !slices.ContainsFunc(refs, func(ref any) bool {
		m, _ := ref.(map[string]any)
		id, _ := m["rule_id"].(string)
		return strings.HasPrefix(id, "TG-TAINT-")
	}) {
		t.Errorf("policy_references cite no taint guard: %s", r)
	}
}
