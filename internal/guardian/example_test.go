package guardian_test

import (
	"encoding/json"
	"testing"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/acs"
	"github.com/turnguard/turnguard/internal/guardian"
	"github.com/turnguard/turnguard/internal/turnstate"
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
		out := g.Decide(defaultRules(t), state, route, guardian.Message{Data: e.Data, Seq: uint64(i + 1)})
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
