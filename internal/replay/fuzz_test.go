package replay

import (
	"encoding/json"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
)

// FuzzDescribe feeds recorded bytes of any shape to what the timeline reads
// from an envelope: it never panics, and a summary stays one short line.
func FuzzDescribe(f *testing.F) {
	f.Add("toolCallRequest", []byte(`{"params":{"timestamp":"2026-01-01T00:00:00Z","payload":{"tool":{"name":"Bash"},"arguments":{"command":{"value":"ls\n-la"}}}}}`))
	f.Add("toolCallResult", []byte(`{"params":{"payload":{"tool":{"name":"web_fetch"},"exit_status":"success","outputs":[{"value":{"a":[1,2]}}]}}}`))
	f.Add("userMessage", []byte(`{"params":{"payload":{"content":[{"type":"text","value":"héllo wörld"}]}}}`))
	f.Add("turnStart", []byte(`{"params":{"payload":{"triggered_by":7}}}`))
	f.Add("sessionEnd", []byte(`[]`))
	f.Add("toolCallRequest", []byte(`{"params":{"payload":{"tool":"x","arguments":[]}}}`))
	f.Fuzz(func(t *testing.T, hook string, data []byte) {
		route := acs.Route{Tenant: "default", SessionID: "s", Hook: hook}
		st := describe(Envelope{Seq: 1, Time: time.Unix(0, 0), Data: data, Route: route}, guardian.Outcome{})
		if utf8.RuneCountInString(st.Summary) > 80 {
			t.Fatalf("summary of %d runes: %q", utf8.RuneCountInString(st.Summary), st.Summary)
		}
		for _, r := range st.Summary {
			if r == '\n' || r == '\r' || r == '\t' {
				t.Fatalf("summary spans lines: %q", st.Summary)
			}
		}
		if _, err := json.Marshal(st); err != nil {
			t.Fatalf("step does not encode: %v", err)
		}
	})
}
