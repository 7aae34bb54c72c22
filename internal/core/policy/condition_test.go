package policy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// A condition that requires one hook is skipped on the others, and only
// such a condition: skipping gives what evaluating gives, errors included.
func TestHookGuard(t *testing.T) {
	tests := []struct {
		when string
		hook string // "": not guarded
	}{
		{`hook == "toolCallResult" && "untrusted_source" in tool.classes`, "toolCallResult"},
		{`"toolCallRequest" == hook && tool.name == "x"`, "toolCallRequest"},
		{`tool.name == "x" && hook == "toolCallRequest"`, "toolCallRequest"},
		{`(tool.name == "x" && (hook == "toolCallRequest" && true)) && !(tool.name == "y")`, "toolCallRequest"},
		{`hook == "toolCallRequest" && payload.missing == 1`, "toolCallRequest"},
		{`hook == "toolCallResult" && payload.missing == 1`, "toolCallResult"},
		{`payload.missing == 1 && hook == "toolCallResult"`, "toolCallResult"},
		{`hook == "toolCallRequest"`, "toolCallRequest"},
		{`hook == "toolCallRequest" || tool.name == "x"`, ""},
		{`!(hook == "toolCallResult") && tool.name == "x"`, ""},
		{`hook != "toolCallResult" && tool.name == "x"`, ""},
		{`hook == method && true`, ""},
		{`[hook].exists(h, h == "toolCallRequest") && true`, ""},
		{`["toolCallResult"].exists(hook, hook == "toolCallResult") && true`, ""},
		{`(hook == "toolCallResult" ? true : false) && true`, ""},
		{`true`, ""},
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
	inputs := []Input{input(t, "steps/toolCallRequest"), input(t, "steps/toolCallResult")}
	errs, skipped := 0, 0
	for i, tc := range tests {
		c := rs.Rules[i].when
		if got := map[bool]string{true: c.hook}[c.hookGuarded]; got != tc.hook {
			t.Errorf("%s: guarded by hook %q, want %q", tc.when, got, tc.hook)
		}
		for _, in := range inputs {
			e := &evalCtx{set: rs, sess: turnstate.New("t", "s"), in: in, hook: ruleHook(*in.Spec)}
			got, gerr := e.eval(c)
			e = &evalCtx{set: rs, sess: turnstate.New("t", "s"), in: in, hook: ruleHook(*in.Spec)}
			want, werr := e.eval(&condition{prg: c.prg})
			if got != want || (gerr == nil) != (werr == nil) {
				t.Errorf("%s on %s: %v, %v; evaluated, %v, %v", tc.when, e.hook, got, gerr, want, werr)
			}
			if werr != nil {
				errs++
			}
			if c.hookGuarded && c.hook != e.hook {
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
