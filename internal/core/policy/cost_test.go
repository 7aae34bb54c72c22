package policy_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// TestConditionCostLimit: a condition whose evaluation costs more than
// policy.MaxConditionCost is stopped and reported as an evaluation error
// (which --on-rule-error decides), the same way on every run; a cheap
// condition on the same input is unaffected.
func TestConditionCostLimit(t *testing.T) {
	items := make([]any, 100_000)
	for i := range items {
		items[i] = int64(i)
	}
	scan := func(n int) string {
		var or []string
		for i := range n {
			or = append(or, "payload.items.exists(x, x == -"+string(rune('1'+i))+")")
		}
		return strings.Join(or, " || ")
	}
	tests := []struct {
		name    string
		when    string
		wantErr bool
	}{
		{"eight scans of a 100,000-item list", scan(8), true},
		{"one scan", `payload.items.exists(x, x == 99999)`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := compile(t, `apiVersion: turnguard/v1
kind: RuleSet
metadata: {name: t}
rules:
  - {id: R, title: r, severity: low, on: [toolCallRequest], when: '`+tc.when+`', decision: deny}
`)
			in := toolCall(t, 1, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 0)
			in.Payload = map[string]any{"tool": map[string]any{"name": "x"}, "items": items}
			var first string
			for range 2 {
				res := rs.Evaluate(turnstate.New("t", "s"), nil, in)
				if got := len(res.Errors) == 1; got != tc.wantErr {
					t.Fatalf("errors %+v, hits %d; want an error %v", res.Errors, len(res.Hits), tc.wantErr)
				}
				if !tc.wantErr {
					if len(res.Hits) != 1 {
						t.Fatalf("hits %+v", res.Hits)
					}
					return
				}
				msg := res.Errors[0].Error()
				if !strings.Contains(msg, "cost") || res.Errors[0].Rule == nil || res.Errors[0].Rule.ID != "R" {
					t.Fatalf("error %q, want the rule's cost limit", msg)
				}
				if first != "" && msg != first {
					t.Fatalf("not deterministic: %q then %q", first, msg)
				}
				first = msg
			}
		})
	}
}

// TestSuperlinearConditionRefused: a condition whose estimated cost grows
// faster than the envelope is refused when the rules are compiled (rules
// check, start, reload), at the condition's file:line:col.
func TestSuperlinearConditionRefused(t *testing.T) {
	f, err := policy.ParseFile("cost.yaml", []byte(`apiVersion: turnguard/v1
kind: RuleSet
metadata: {name: t}
rules:
  - id: R
    title: r
    severity: low
    on: [toolCallRequest]
    when: 'payload.items.all(x, payload.items.all(y, x != y || true))'
    decision: deny
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = policy.Compile([]*policy.File{f})
	var ds policy.Diagnostics
	if !errors.As(err, &ds) || len(ds) != 1 {
		t.Fatalf("compiled: %v", err)
	}
	if got := ds[0].String(); !strings.HasPrefix(got, "cost.yaml:9:11: ") || !strings.Contains(got, "grows faster than the envelope") {
		t.Fatalf("diagnostic %q", got)
	}
}
