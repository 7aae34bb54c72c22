package scenario_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/scenario"
)

func TestLoadRejectsBrokenFiles(t *testing.T) {
	for file, want := range map[string]string{
		"unknown-field.yaml":      "field verdict not found",
		"bad-decision.yaml":       `expect.decision "maybe"`,
		"missing.yaml":            "no such file",
		"undeclared-session.yaml": "", // loads; fails to build
	} {
		_, err := scenario.Load(filepath.Join("testdata", file))
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v", file, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one mentioning %q", file, err, want)
		}
	}
	for file, want := range map[string]string{
		"undeclared-session.yaml": `session "other" is not declared`,
		"unstarted-turn.yaml":     `turn "t9" was not started`,
	} {
		sc, err := scenario.Load(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sc.Build(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: build error %v, want one mentioning %q", file, err, want)
		}
	}
}

func TestBuildIsDeterministicAndLinksIDs(t *testing.T) {
	sc, err := scenario.Load(filepath.Join("..", "..", "testdata", "scenarios", "subagent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := sc.Build()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := sc.Build()
	for i := range a.Messages {
		if string(a.Messages[i].Data) != string(b.Messages[i].Data) || a.Messages[i].Subject != b.Messages[i].Subject {
			t.Fatalf("step %d builds differently twice", i+1)
		}
	}
	var spawn struct {
		Params struct {
			RequestID string `json:"request_id"`
			Metadata  struct {
				TurnID string `json:"turn_id"`
			} `json:"metadata"`
			Payload map[string]string `json:"payload"`
		} `json:"params"`
	}
	if err := json.Unmarshal(a.Messages[2].Data, &spawn); err != nil {
		t.Fatal(err)
	}
	if spawn.Params.Payload["subagent_session_id"] != sc.SessionID("child") || spawn.Params.Payload["parent_session_id"] != sc.SessionID("main") ||
		spawn.Params.Metadata.TurnID == "" || spawn.Params.Payload["parent_step_id"] != spawn.Params.Metadata.TurnID {
		t.Fatalf("references not expanded: %+v", spawn.Params)
	}
	if a.Messages[3].SessionID != sc.SessionID("child") || !strings.Contains(a.Messages[3].Subject, sc.SessionID("child")) {
		t.Fatalf("child step routed to %s", a.Messages[3].Subject)
	}
	if len(a.States) != 2 || a.States[0].Alias != "child" || a.States[0].Fields["parent"].(map[string]any)["request_id"] != spawn.Params.RequestID {
		t.Fatalf("expected states not expanded: %+v", a.States)
	}
}

func expectation(t *testing.T, strict bool, e scenario.Expect) scenario.Expect {
	t.Helper()
	sc := scenario.Scenario{Name: "x", Steps: []scenario.Step{{Hook: "turnStart", Expect: e}}}
	if err := sc.Prepare(strict); err != nil {
		t.Fatal(err)
	}
	return sc.Steps[0].Expect
}

func TestCheck(t *testing.T) {
	e := expectation(t, true, scenario.Expect{Decision: "deny", Violations: []string{"turn_id_missing"}, ReasonCodes: []string{"turn_id_missing"}})
	if err := e.Check(scenario.Observed{Decision: "deny", Violations: []string{"turn_id_missing"}, ReasonCodes: []string{"turn_id_missing"}}); err != nil {
		t.Fatal(err)
	}
	err := e.Check(scenario.Observed{Decision: "allow", DeadLetter: true})
	for _, want := range []string{"decision allow, want deny", "want [turn_id_missing]", "dead-lettered true, want false"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("mismatch report %v lacks %q", err, want)
		}
	}
	// A lenient expectation (a rule file's test) checks only what it states.
	l := expectation(t, false, scenario.Expect{Alerts: []string{"R-2", "R-1"}})
	if err := l.Check(scenario.Observed{Decision: "deny", Violations: []string{"x"}, Alerts: []string{"R-1", "R-2"}, DeadLetter: true}); err != nil {
		t.Fatalf("lenient check: %v", err)
	}
	if err := l.Check(scenario.Observed{Alerts: []string{"R-1"}}); err == nil || !strings.Contains(err.Error(), "alerts [R-1], want [R-2 R-1]") {
		t.Fatalf("missing alert not reported: %v", err)
	}
	if err := (&scenario.Scenario{Name: "x", Steps: []scenario.Step{{Hook: "turnStart"}}}).Prepare(true); err == nil {
		t.Fatal("a strict scenario step without a decision was accepted")
	}
	if err := scenario.CheckState("main", []byte(`{"status":"open","turns_started":2}`), map[string]any{"status": "closed", "turns_started": 2}); err == nil ||
		!strings.Contains(err.Error(), `status is "open", want "closed"`) {
		t.Fatalf("state mismatch report: %v", err)
	}
}
