package acs_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/turnguard/turnguard/internal/core/acs"
)

func TestReadHead(t *testing.T) {
	tests := []struct {
		name      string
		doc       string
		want      acs.Head
		typeError bool
		notJSON   bool
	}{
		{"a step", `{"jsonrpc":"2.0","id":7,"method":"steps/toolCallRequest","params":{"request_id":"r1","timestamp":"t","metadata":{"session_id":"s","agent_id":"a","turn_id":"u"},"signature":{"algorithm":"HMAC-SHA256","value":"v","key_id":"k"},"payload":{"tool":{"name":"Bash"}}}}`,
			acs.Head{Method: "steps/toolCallRequest", ID: json.RawMessage(`7`), HasParams: true, RequestID: "r1", Timestamp: "t", SessionID: "s", AgentID: "a", TurnID: "u",
				Signature: &acs.Signature{Algorithm: "HMAC-SHA256", Value: "v", KeyID: "k"}, Payload: json.RawMessage(`{"tool":{"name":"Bash"}}`)}, false, false},
		{"no params", `{"method":"system/ping","id":"x"}`, acs.Head{Method: "system/ping", ID: json.RawMessage(`"x"`)}, false, false},
		{"one field of the wrong type hides nothing else", `{"method":"m","params":{"request_id":5,"metadata":{"session_id":"s"}}}`,
			acs.Head{Method: "m", HasParams: true, SessionID: "s"}, true, false},
		{"not an object", `[1,2]`, acs.Head{}, true, false},
		{"not JSON", `{"method":`, acs.Head{}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := acs.ReadHead([]byte(tt.doc))
			var te *json.UnmarshalTypeError
			switch {
			case tt.notJSON && (err == nil || errors.As(err, &te)):
				t.Fatalf("err %v, want a syntax error", err)
			case tt.typeError && !errors.As(err, &te):
				t.Fatalf("err %v, want a type error", err)
			case !tt.notJSON && !tt.typeError && err != nil:
				t.Fatalf("err %v", err)
			}
			got, _ := json.Marshal(h)
			want, _ := json.Marshal(tt.want)
			if string(got) != string(want) {
				t.Fatalf("head %s\nwant %s", got, want)
			}
		})
	}
}

// FuzzReadHead: whatever arrives, reading its head never panics, and a
// field it reads is the envelope's own.
func FuzzReadHead(f *testing.F) {
	f.Add([]byte(`{"method":"steps/turnStart","params":{"request_id":"r","metadata":{"session_id":"s"}}}`))
	f.Add([]byte(`{"params":null}`))
	f.Add([]byte(`{"params":{"signature":{"key_id":1}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := acs.ReadHead(data)
		var te *json.UnmarshalTypeError
		if err != nil && !errors.As(err, &te) && (h.Method != "" || h.HasParams) {
			t.Fatalf("no head expected for text that is not JSON: %+v", h)
		}
		var doc struct {
			Method any `json:"method"`
		}
		if json.Unmarshal(data, &doc) == nil {
			if m, ok := doc.Method.(string); ok && m != h.Method {
				t.Fatalf("method %q, read %q", m, h.Method)
			}
		}
	})
}
