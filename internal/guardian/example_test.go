package guardian_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/acs"
	"github.com/turnguard/turnguard/internal/guardian"
	"github.com/turnguard/turnguard/internal/turnstate"
)

// The README's example session (examples/session) must stay a clean
// session: every envelope valid and allowed, the session closed at the end.
func TestExampleSessionIsClean(t *testing.T) {
	files, _ := filepath.Glob("../../examples/session/[0-9][0-9]-*.json")
	if len(files) != 8 {
		t.Fatalf("found %d example files, want 8", len(files))
	}
	g := guardian.New(newValidator(t), guardian.Config{})
	var state *turnstate.Session
	for i, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		hook := strings.TrimSuffix(filepath.Base(f)[3:], ".json")
		route := acs.Route{Tenant: "default", SessionID: "7f3c2a9e-4b1d-4e8a-9c6f-2d5e8a1b3c70", Hook: hook}
		out := g.Decide(state, route, guardian.Message{Data: data, Seq: uint64(i + 1)})
		if out.Refusal != nil || out.Response.Result == nil || out.Response.Result.Decision != acs.Allow || len(out.Violations) != 0 {
			raw, _ := json.Marshal(out.Response)
			t.Fatalf("%s: %v %s", f, out.Refusal, raw)
		}
		state = out.State
	}
	if state.Status != turnstate.StatusClosed || state.TurnsStarted != 1 {
		t.Fatalf("final state %+v", state)
	}
}
