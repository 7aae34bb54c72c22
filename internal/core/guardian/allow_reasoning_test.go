package guardian_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/ruletest"
	"github.com/turnguard/turnguard/internal/scenario"
	rulepack "github.com/turnguard/turnguard/rules"
)

// reasoningRules adds to the default pack a shadow rule, an alert-only rule
// and an allow rule, each hit by a tool of its own name.
const reasoningRules = `apiVersion: turnguard/v1
kind: RuleSet
metadata: {name: reasoning}
rules:
  - {id: T-SHADOW, title: shadow, severity: low, mode: shadow, on: [toolCallRequest], when: 'tool.name == "rm"', decision: deny, message: "rm is risky"}
  - {id: T-NOTE, title: note, severity: low, on: [toolCallRequest], when: 'tool.name == "note"', decision: none, message: "note was called"}
  - {id: T-OK, title: ok, severity: low, on: [toolCallRequest], when: 'tool.name == "ok"', decision: allow, message: "ok is always fine"}
`

// Claude Code and Cursor feed result.reasoning to the model: a plain allow
// (no rule hit, no finding above info level) carries none, and says in
// policy_data.turnguard.outcome that nothing matched. An allow that
// carries information keeps its reasoning.
func TestAllowReasoning(t *testing.T) {
	def, err := rulepack.DefaultSet()
	if err != nil {
		t.Fatal(err)
	}
	extra := filepath.Join(t.TempDir(), "reasoning.yaml")
	if err := os.WriteFile(extra, []byte(reasoningRules), 0o644); err != nil {
		t.Fatal(err)
	}
	withExtra, err := rulepack.Load(rulepack.DefaultPath, extra)
	if err != nil {
		t.Fatal(err)
	}
	const opening = `
      - {hook: sessionStart}
      - {hook: turnStart, turn: t1, payload: {triggered_by: user_message}}
`
	tests := []struct {
		name  string
		rules *policy.Set
		// steps follow a sessionStart unless they start with one; the
		// last step's decision is checked.
		steps string
		// reasoning is "" for none, else a substring it must contain.
		reasoning string
		decision  acs.Disposition
		plain     bool
	}{
		{"sessionStart", def, `
      - {hook: sessionStart}`, "", acs.Allow, true},
		{"a benign tool call", def, opening + `
      - {hook: toolCallRequest, turn: t1, payload: {tool: {name: Bash}, arguments: {command: {value: "ls -la"}}}}`, "", acs.Allow, true},
		{"an implicit turn (info-level finding)", def, `
      - {hook: sessionStart}
      - {hook: toolCallRequest, metadata: {turn_id: codex-1}, payload: {tool: {name: Bash}, arguments: {command: {value: "ls"}}}}`,
			"", acs.Allow, true},
		{"a warning-level finding", def, `
      - {hook: sessionStart}
      - {hook: turnStart, turn: t1, turn_id: my-own-id, payload: {triggered_by: user_message}}`,
			"allowed with protocol findings: turn_id \"my-own-id\" is not the envelope's request_id", acs.Allow, false},
		{"a deny on an audit-only hook is recorded", def, opening + `
      - {hook: turnEnd, metadata: {turn_id: nope}, payload: {turn_id: nope, outcome: completed}}`,
			"recorded, turnEnd cannot return deny: ACS protocol violation: turn_end_unmatched", acs.Allow, false},
		{"a shadow hit", withExtra, opening + `
      - {hook: toolCallRequest, turn: t1, payload: {tool: {name: rm}, arguments: {}}}`,
			"allowed; shadow rule T-SHADOW would deny: rm is risky", acs.Allow, false},
		{"an alert-only hit", withExtra, opening + `
      - {hook: toolCallRequest, turn: t1, payload: {tool: {name: note}, arguments: {}}}`,
			"allowed; note was called", acs.Allow, false},
		{"an allow rule", withExtra, opening + `
      - {hook: toolCallRequest, turn: t1, payload: {tool: {name: ok}, arguments: {}}}`,
			"ok is always fine", acs.Allow, false},
		{"a deny", def, opening + `
      - {hook: toolCallResult, turn: t1, payload: {tool: {name: WebFetch}, exit_status: success, outputs: [{value: "run this"}]}}
      - {hook: toolCallRequest, turn: t1, payload: {tool: {name: Bash}, arguments: {command: {value: "sh"}}}}`,
			"Blocked Bash: untrusted content entered the session 0 turn(s) ago", acs.Deny, false},
	}
	v := newValidator(t)
	g := guardian.New(v, guardian.Config{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var sc scenario.Scenario
			if err := yaml.Unmarshal([]byte("name: reasoning\nsteps:"+tc.steps), &sc); err != nil {
				t.Fatal(err)
			}
			if err := sc.Prepare(false); err != nil {
				t.Fatal(err)
			}
			run := ruletest.Run(g, tc.rules, &sc)
			if len(run.Failures) > 0 {
				t.Fatal(run.Failures)
			}
			for _, out := range run.Outcomes {
				checkResponse(t, v, out.Response)
			}
			res := run.Outcomes[len(run.Outcomes)-1].Response.Result
			if res.Decision != tc.decision {
				t.Fatalf("decision %s, want %s", res.Decision, tc.decision)
			}
			switch {
			case tc.reasoning == "" && res.Reasoning != "":
				t.Errorf("reasoning %q, want none", res.Reasoning)
			case !strings.Contains(res.Reasoning, tc.reasoning) || res.Reasoning == "" && tc.reasoning != "":
				t.Errorf("reasoning %q, want it to contain %q", res.Reasoning, tc.reasoning)
			}
			td, _ := res.PolicyData["turnguard"].(map[string]any)
			if got := td["outcome"] == guardian.OutcomeNoRuleMatched; got != tc.plain {
				t.Errorf("policy_data.turnguard %v: outcome %s is %v, want %v", td, guardian.OutcomeNoRuleMatched, got, tc.plain)
			}
			if rs, _ := td["ruleset"].(map[string]any); tc.plain && rs["name"] != tc.rules.Name {
				t.Errorf("policy_data.turnguard.ruleset %v, want the rule set that decided", td["ruleset"])
			}
		})
	}
}
