// Package ruletest runs scenarios — the test cases rule files carry and the
// files under testdata/scenarios — through the pure decision core, exactly
// as a processor on a fresh stream would see them.
package ruletest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/scenario"
	"github.com/turnguard/turnguard/schema"
)

// Result is the outcome of one test case.
type Result struct {
	File     string
	Pos      policy.Pos
	Name     string
	Failures []string
	// Outcomes are the core's outcomes, one per step.
	Outcomes []guardian.Outcome
}

// Passed reports whether the case passed.
func (r Result) Passed() bool { return len(r.Failures) == 0 }

// Case is a test case a rule file carries, read.
type Case struct {
	File string
	Pos  policy.Pos
	Spec *scenario.Scenario
}

// Cases reads the test cases a rule set's files carry, in the scenario
// format (the engine keeps them as written). A case that does not read,
// with unknown fields or steps that do not build, is a diagnostic at its
// position in its file.
func Cases(rs *policy.Set) ([]Case, policy.Diagnostics) {
	var out []Case
	var diags policy.Diagnostics
	// Each file's tests, read once; nil for a file whose tests do not read
	// (its diagnostic is given once, at its first case).
	read := map[string][]scenario.Scenario{}
	for _, tc := range rs.Tests {
		tests, ok := read[tc.File]
		if !ok {
			var err error
			if tests, err = fileTests(tc.Source); err != nil {
				diags = append(diags, policy.Diagnostic{File: tc.File, Pos: tc.Pos, Msg: "tests: " + err.Error()})
			}
			read[tc.File] = tests
		}
		if tc.Index >= len(tests) {
			continue
		}
		sc := &tests[tc.Index]
		if err := sc.Prepare(false); err != nil {
			diags = append(diags, policy.Diagnostic{File: tc.File, Pos: tc.Pos, Msg: fmt.Sprintf("test %q: %v", sc.Name, err)})
			continue
		}
		if _, err := sc.Build(); err != nil {
			diags = append(diags, policy.Diagnostic{File: tc.File, Pos: tc.Pos, Msg: fmt.Sprintf("test %q: %v", sc.Name, err)})
			continue
		}
		out = append(out, Case{File: tc.File, Pos: tc.Pos, Spec: sc})
	}
	return out, diags
}

// fileTests decodes a rule file's tests strictly (unknown fields are
// errors, lines are the file's); the rest of the file is the engine's,
// already checked.
func fileTests(src []byte) ([]scenario.Scenario, error) {
	var f struct {
		APIVersion yaml.Node           `yaml:"apiVersion"`
		Kind       yaml.Node           `yaml:"kind"`
		Metadata   yaml.Node           `yaml:"metadata"`
		Lists      yaml.Node           `yaml:"lists"`
		Macros     yaml.Node           `yaml:"macros"`
		Tools      yaml.Node           `yaml:"tools"`
		Taints     yaml.Node           `yaml:"taints"`
		Rules      yaml.Node           `yaml:"rules"`
		Overrides  yaml.Node           `yaml:"overrides"`
		Tests      []scenario.Scenario `yaml:"tests"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, err
	}
	return f.Tests, nil
}

// RunSet runs every test case a rule set's files carry against that set;
// a case that does not read fails.
func RunSet(g *guardian.Guardian, rs *policy.Set) []Result {
	cases, diags := Cases(rs)
	var out []Result
	for _, d := range diags {
		out = append(out, Result{File: d.File, Pos: d.Pos, Name: "(unreadable)", Failures: []string{d.Msg}})
	}
	for _, tc := range cases {
		r := Run(g, rs, tc.Spec)
		r.File, r.Pos = tc.File, tc.Pos
		out = append(out, r)
	}
	return out
}

// Run runs one scenario: stream sequence = position in the scenario, the
// states kept the way the KV bucket keeps them.
func Run(g *guardian.Guardian, rs *policy.Set, sc *scenario.Scenario) Result {
	res := Result{Name: sc.Name}
	built, err := sc.Build()
	if err != nil {
		res.Failures = append(res.Failures, err.Error())
		return res
	}
	mem := guardian.NewMemory()
	for i, m := range built.Messages {
		msg := guardian.Message{Subject: m.Subject, Data: m.Data, Seq: uint64(i + 1), Time: sc.Start.Add(time.Duration(i) * time.Second)}
		out := Decide(g, rs, mem, msg)
		res.Outcomes = append(res.Outcomes, out)
		if err := m.Expect.Check(Observe(out)); err != nil {
			res.Failures = append(res.Failures, fmt.Sprintf("step %d (%s): %v%s", i+1, hookOf(m.Subject), err, explain(out)))
		}
	}
	for _, want := range built.States {
		got, ok := mem.Sessions[acs.SessionKey(want.Tenant, want.SessionID)]
		if !ok {
			res.Failures = append(res.Failures, fmt.Sprintf("session %s has no state", want.Alias))
			continue
		}
		raw, _ := json.Marshal(got)
		if err := scenario.CheckState(want.Alias, raw, want.Fields); err != nil {
			res.Failures = append(res.Failures, err.Error())
		}
	}
	return res
}

// Decide routes a message the way the stream and a partition worker do.
func Decide(g *guardian.Guardian, rs *policy.Set, mem *guardian.Memory, msg guardian.Message) guardian.Outcome {
	route, err := acs.ParseInbound(msg.Subject)
	if err != nil {
		return g.Unroutable(err)
	}
	return mem.Decide(g, rs, route, msg)
}

// Observe describes an outcome in the scenario's terms.
func Observe(out guardian.Outcome) scenario.Observed {
	o := scenario.Observed{Decision: "none", DeadLetter: out.Refusal != nil, Rules: []string{}, Alerts: []string{}, Shadow: []string{}}
	if out.Refusal != nil {
		o.Code = int(out.Refusal.Code)
	}
	for _, v := range out.Violations {
		o.Violations = append(o.Violations, v.Name)
	}
	for _, h := range out.Hits {
		if h.Rule.Mode == policy.Shadow {
			o.Shadow = append(o.Shadow, h.Rule.ID)
		} else {
			o.Rules = append(o.Rules, h.Rule.ID)
		}
	}
	for _, a := range out.Alerts {
		o.Alerts = append(o.Alerts, a.RuleID)
	}
	switch r := out.Response; {
	case r == nil:
	case r.Error != nil:
		o.Decision, o.Code = "error", r.Error.Code
	default:
		o.Decision, o.ReasonCodes, o.Cited = string(r.Result.Decision), r.Result.ReasonCodes, r.Result.CitedProvenanceIDs
	}
	return o
}

// explain is what a failing step got, as a rule author needs it: the
// decision's reasoning, reason codes, violations and rule errors, or the
// refusal.
func explain(out guardian.Outcome) string {
	var parts []string
	if out.Refusal != nil {
		parts = append(parts, fmt.Sprintf("refused %d %s: %s", out.Refusal.Code, out.Refusal.Reason, out.Refusal.Message))
		for _, v := range out.Refusal.Violations {
			parts = append(parts, fmt.Sprintf("  %s: %s", v.Pointer, v.Message))
		}
	}
	if r := out.Response; r != nil && r.Error != nil {
		parts = append(parts, fmt.Sprintf("error %d: %s", r.Error.Code, r.Error.Message))
	} else if r != nil && r.Result != nil {
		if len(r.Result.ReasonCodes) > 0 {
			parts = append(parts, "reason_codes "+strings.Join(r.Result.ReasonCodes, ", "))
		}
		if r.Result.Reasoning != "" {
			parts = append(parts, fmt.Sprintf("reasoning %q", r.Result.Reasoning))
		}
	}
	for _, v := range out.Violations {
		parts = append(parts, fmt.Sprintf("violation %s: %s", v.Name, v.Message))
	}
	if len(parts) == 0 {
		return ""
	}
	return "\n        got: " + strings.Join(parts, "\n             ")
}

// Problem is a test case's step whose envelope or payload does not match
// the ACS schemas: the core would refuse it or answer payload_invalid,
// which is seldom what the case means to test.
type Problem struct {
	File string
	Pos  policy.Pos
	Case string
	Step int
	Hook string
	Err  error
}

func (p Problem) String() string {
	return fmt.Sprintf("%s:%d: test %q, step %d (%s): %v", p.File, p.Pos.Line, p.Case, p.Step, p.Hook, p.Err)
}

// CheckPayloads validates every step of the set's test cases against the
// ACS schemas, as the core will: a case that means to test bad input says
// so by expecting it (a refusal code, a dead letter, an error, or the
// reason code payload_invalid or envelope_invalid) and is not checked.
func CheckPayloads(v *schema.Validator, rs *policy.Set) []Problem {
	var out []Problem
	cases, _ := Cases(rs)
	for _, tc := range cases {
		built, err := tc.Spec.Build()
		if err != nil {
			out = append(out, Problem{File: tc.File, Pos: tc.Pos, Case: tc.Spec.Name, Err: err})
			continue
		}
		for i, m := range built.Messages {
			e := m.Expect
			if e.Code != 0 || e.DeadLetter || e.Decision == "error" || e.Decision == "none" ||
				slices.Contains(e.ReasonCodes, acs.ReasonPayloadInvalid) || slices.Contains(e.ReasonCodes, acs.ReasonEnvelopeInvalid) {
				continue
			}
			var doc map[string]any
			if err := json.Unmarshal(m.Data, &doc); err != nil {
				out = append(out, Problem{tc.File, tc.Pos, tc.Spec.Name, i + 1, hookOf(m.Subject), err})
				continue
			}
			if err := v.ValidateRequest(doc); err != nil {
				out = append(out, Problem{tc.File, tc.Pos, tc.Spec.Name, i + 1, hookOf(m.Subject), err})
				continue
			}
			method, _ := doc["method"].(string)
			params, _ := doc["params"].(map[string]any)
			if err := v.ValidatePayload(method, params["payload"]); err != nil {
				out = append(out, Problem{tc.File, tc.Pos, tc.Spec.Name, i + 1, hookOf(m.Subject), err})
			}
		}
	}
	return out
}

func hookOf(subject string) string {
	if r, err := acs.ParseInbound(subject); err == nil {
		return r.Hook
	}
	return subject
}
