package guardian_test

import (
	"reflect"
	"testing"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
)

func TestReadFacts(t *testing.T) {
	data := []byte(`{"jsonrpc":"2.0","method":"steps/toolCallRequest","id":"1","params":{"request_id":"r1","timestamp":"2026-12-02T10:00:00Z",` +
		`"metadata":{"agent_id":"a1","session_id":"s","turn_id":"t1"},"signature":{"key_id":"k2"},` +
		`"payload":{"tool":{"name":"Bash"},"subagent_session_id":"sub","arguments":{"n":1}}}}`)
	f, err := guardian.ReadFacts(data)
	if err != nil {
		t.Fatal(err)
	}
	want := guardian.Facts{Method: "steps/toolCallRequest", RequestID: "r1", TurnID: "t1", AgentID: "a1", Timestamp: "2026-12-02T10:00:00Z",
		SubagentSessionID: "sub", Tool: "Bash", KeyID: "k2"}
	f.Payload = nil
	if !reflect.DeepEqual(f, want) {
		t.Fatalf("facts %+v, want %+v", f, want)
	}
	// A field of the wrong type hides only itself, as the per-field
	// decoders the tree used to have did.
	odd := []byte(`{"method":"steps/userMessage","params":{"timestamp":7,"metadata":{"agent_id":"a1","turn_id":3},"payload":{"tool":"x","subagent_session_id":"sub"}}}`)
	f, err = guardian.ReadFacts(odd)
	if err != nil || f.AgentID != "a1" || f.TurnID != "" || f.Timestamp != "" || f.Tool != "" || f.SubagentSessionID != "sub" || f.Method != "steps/userMessage" {
		t.Fatalf("facts of an odd envelope %+v (%v)", f, err)
	}
	if p, ok := f.PayloadValue().(map[string]any); !ok || p["tool"] != "x" {
		t.Fatalf("payload %#v", f.PayloadValue())
	}
	if f, err := guardian.ReadFacts([]byte(`{not json`)); err == nil || f.AgentID != "" {
		t.Fatalf("not JSON: %+v, %v", f, err)
	}
	if got := guardian.AgentOf(odd); got != "a1" {
		t.Fatalf("AgentOf %q", got)
	}
	if got := guardian.SubagentOf(acs.Route{Hook: "subagentStop"}, odd); got != "sub" {
		t.Fatalf("SubagentOf %q", got)
	}
}
