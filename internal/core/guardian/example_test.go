package guardian_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// The README's example session (examples/session) must stay a clean
// session: every envelope valid and allowed, the session closed at the end.
func TestExampleSessionIsClean(t *testing.T) {
	envs := examples.Session("")
	if len(envs) != 8 {
		t.Fatalf("found %d example files, want 8", len(envs))
	}
	g := guardian.New(newValidator(t), guardian.Config{})
	var state *turnstate.Session
	for i, e := range envs {
		route := acs.Route{Tenant: "default", SessionID: examples.SessionID, Hook: e.Hook}
		out := g.Decide(defaultRules(t), state, nil, route, guardian.Message{Data: e.Data, Seq: uint64(i + 1)})
		if out.Refusal != nil || out.Response.Result == nil || out.Response.Result.Decision != acs.Allow || len(out.Violations) != 0 {
			raw, _ := json.Marshal(out.Response)
			t.Fatalf("%s: %v %s", e.Hook, out.Refusal, raw)
		}
		state = out.State
	}
	if state.Status != turnstate.StatusClosed || state.TurnsStarted != 1 {
		t.Fatalf("final state %+v", state)
	}
}

// The README's taint example: the shell command of the second turn is
// denied by the default pack's taint window, citing the web page's
// provenance, with one alert.
func TestTaintExampleIsDenied(t *testing.T) {
	g := guardian.New(newValidator(t), guardian.Config{})
	rs := defaultRules(t)
	var state *turnstate.Session
	envs := examples.Taint("")
	var out guardian.Outcome
	for i, e := range envs {
		route := acs.Route{Tenant: "default", SessionID: examples.TaintSessionID, Hook: e.Hook}
		out = g.Decide(rs, state, nil, route, guardian.Message{Data: e.Data, Seq: uint64(i + 1)})
		if out.Refusal != nil {
			t.Fatalf("%s refused: %v", e.Hook, out.Refusal)
		}
		state = out.State
		if last := i == len(envs)-1; !last && out.Response.Result.Decision != acs.Allow {
			t.Fatalf("%s: %s", e.Hook, out.Response.Result.Decision)
		}
	}
	res := out.Response.Result
	if res.Decision != acs.Deny || len(out.Alerts) != 1 || out.Alerts[0].RuleID != "TG-TAINT-001" ||
		!slices.Contains(res.CitedProvenanceIDs, "p-web-7") || !strings.Contains(res.Reasoning, "1 turn(s) ago (toolCallResult of web_fetch from https://blog.example.net/post)") {
		raw, _ := json.Marshal(out.Response)
		t.Fatalf("final call: %s, %d alerts", raw, len(out.Alerts))
	}
}
