package policy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// A condition that requires one hook, or a violation, is skipped where the
// envelope has neither, and only such a condition: skipping gives what
// evaluating gives, errors included.
func TestConditionGuards(t *testing.T) {
	tests := []struct {
		when       string
		hook       string // "": not guarded by a hook
		violations bool   // guarded by the envelope's violations
	}{
		{`hook == "toolCallResult" && "untrusted_source" in tool.classes`, "toolCallResult", false},
		{`"toolCallRequest" == hook && tool.name == "x"`, "toolCallRequest", false},
		{`tool.name == "x" && hook == "toolCallRequest"`, "toolCallRequest", false},
		{`(tool.name == "x" && (hook == "toolCallRequest" && true)) && !(tool.name == "y")`, "toolCallRequest", false},
		{`hook == "toolCallRequest" && payload.missing == 1`, "toolCallRequest", false},
		{`hook == "toolCallResult" && payload.missing == 1`, "toolCallResult", false},
		{`payload.missing == 1 && hook == "toolCallResult"`, "toolCallResult", false},
		{`hook == "toolCallRequest"`, "toolCallRequest", false},
		{`hook == "toolCallRequest" || tool.name == "x"`, "", false},
		{`!(hook == "toolCallResult") && tool.name == "x"`, "", false},
		{`hook != "toolCallResult" && tool.name == "x"`, "", false},
		{`hook == method && true`, "", false},
		{`[hook].exists(h, h == "toolCallRequest") && true`, "", false},
		{`["toolCallResult"].exists(hook, hook == "toolCallResult") && true`, "", false},
		{`(hook == "toolCallResult" ? true : false) && true`, "", false},
		{`true`, "", false},
		{`violations.exists(v, v.severity == "error")`, "", true},
		{`violations.exists(v, v.severity == "warn" && payload.missing == 1)`, "", true},
		{`payload.missing == 1 && violations.exists(v, v.severity == "warn")`, "", true},
		{`hook == "toolCallResult" && violations.exists(v, true)`, "toolCallResult", true},
		{`violations.all(v, v.severity == "error")`, "", false},
		{`!violations.all(v, v.severity != "error")`, "", false},
		{`violations.exists_one(v, v.severity == "error")`, "", false},
		{`violations.filter(v, v.severity == "error").size() == 0`, "", false},
		{`violations.exists(v, true) || true`, "", false},
		{`[].exists(v, true) || violations.size() == 0`, "", false},
		{`[violations].exists(v, true) && true`, "", false},
	}
	var src strings.Builder
	src.WriteString("apiVersion: turnguard/v1\nkind: RuleSet\nmetadata: {name: t}\nrules:\n")
	for i, tc := range tests {
		fmt.Fprintf(&src, "  - {id: R%d, title: r, severity: low, on: ['*'], when: '%s', decision: deny}\n", i, tc.when)
	}
	f, err := ParseFile("inline.yaml", []byte(src.String()))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := Compile([]*File{f})
	if err != nil {
		t.Fatal(err)
	}
	violation := turnstate.Violation{Name: "v", Severity: "warn", Message: "m"}
	var inputs []Input
	for _, method := range []string{"steps/toolCallRequest", "steps/toolCallResult"} {
		in := input(t, method)
		inputs = append(inputs, in)
		in.Violations = []turnstate.Violation{violation}
		inputs = append(inputs, in)
	}
	errs, skipped := 0, 0
	for i, tc := range tests {
		c := rs.Rules[i].when
		if got := map[bool]string{true: c.hook}[c.hookGuarded]; got != tc.hook || c.needsViolations != tc.violations {
			t.Errorf("%s: guarded by hook %q, by violations %v; want %q, %v", tc.when, got, c.needsViolations, tc.hook, tc.violations)
		}
		for _, in := range inputs {
			e := &evalCtx{set: rs, sess: turnstate.New("t", "s"), in: in, hook: ruleHook(*in.Spec)}
			got, gerr := e.eval(c)
			e = &evalCtx{set: rs, sess: turnstate.New("t", "s"), in: in, hook: ruleHook(*in.Spec)}
			want, werr := e.eval(&condition{prg: c.prg})
			if got != want || (gerr == nil) != (werr == nil) {
				t.Errorf("%s on %s with %d violations: %v, %v; evaluated, %v, %v", tc.when, e.hook, len(in.Violations), got, gerr, want, werr)
			}
			if werr != nil {
				errs++
			}
			if c.settledFalse(e) {
				skipped++
			}
		}
	}
	// The cases cover both: conditions that fail to evaluate, and ones
	// skipped whose other operand would fail.
	if errs == 0 || skipped == 0 {
		t.Fatalf("%d evaluation errors, %d skipped evaluations", errs, skipped)
	}
}

func input(t *testing.T, method string) Input {
	t.Helper()
	req := &acs.Request{JSONRPC: "2.0", Method: method, Params: acs.Params{RequestID: "r"}}
	return Input{Spec: acs.LookupMethod(method), Req: req, Payload: map[string]any{"tool": map[string]any{"name": "x"}},
		Seq: 1, Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}
