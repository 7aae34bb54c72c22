package rules_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/acs"
	"github.com/turnguard/turnguard/internal/rules"
	"github.com/turnguard/turnguard/internal/turnstate"
)

func compile(t *testing.T, src string) *rules.Set {
	t.Helper()
	f, err := rules.ParseFile("inline.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := rules.Compile([]*rules.File{f})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func toolCall(t *testing.T, seq uint64, at time.Time, partition int) rules.Input {
	t.Helper()
	var req acs.Request
	raw := `{"jsonrpc":"2.0","method":"steps/toolCallRequest","id":1,"params":{"acs_version":"0.1.0","request_id":"r","timestamp":"x","metadata":{"agent_id":"a","session_id":"s"},"payload":{"tool":{"name":"x"},"arguments":{}}}}`
	if err := json.Unmarshal([]byte(raw), &req); err != nil {
		t.Fatal(err)
	}
	return rules.Input{Spec: acs.LookupMethod("steps/toolCallRequest"), Req: &req, Payload: map[string]any{"tool": map[string]any{"name": "x"}},
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
