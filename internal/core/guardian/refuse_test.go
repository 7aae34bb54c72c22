package guardian_test

import (
	"encoding/json"
	"testing"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
)

// TestRefuse: a step the processor will not decide is answered with the
// refusal's own error code, to its request, and changes no state.
func TestRefuse(t *testing.T) {
	g := guardian.New(newValidator(t), guardian.Config{})
	ref := &acs.Error{Code: acs.CodeInternalError, Reason: "state_unverifiable", Message: "not decided"}
	for _, tc := range []struct {
		name      string
		data      []byte
		id        string
		requestID string
	}{
		{"readable envelope", envelope("steps/toolCallRequest", `{"tool":{"name":"Bash"},"arguments":{}}`), "7", testRequest},
		{"not JSON", []byte("garbage"), "null", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := g.Refuse(routeFor("steps/toolCallRequest"), guardian.Message{Data: tc.data, Seq: 3}, ref)
			if out.Refusal != ref || out.State != nil || out.Agent != nil || out.RequestID != tc.requestID {
				t.Fatalf("outcome %+v", out)
			}
			r := out.Response
			if r == nil || r.Result != nil || r.Error == nil || r.Error.Code != int(acs.CodeInternalError) || string(r.ID) != tc.id {
				b, _ := json.Marshal(r)
				t.Fatalf("response %s, want a -32603 error with id %s", b, tc.id)
			}
		})
	}
}
