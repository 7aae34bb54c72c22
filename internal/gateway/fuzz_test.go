package gateway_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/gateway"
)

// FuzzServeACS sends arbitrary bodies to POST /acs: whatever arrives, the
// answer is HTTP 200 with a valid ACS response envelope, or for a batch an
// array of them, signed. Steps of sessions without a handshake end at the handshake
// contract; a processor decides what gets through, within a short timeout.
func FuzzServeACS(f *testing.F) {
	now := time.Now()
	sid := uuid(40)
	hello := envelope("handshake/hello", sid, uuid(4000), `{"acs_versions_supported":["0.1.0"],"methods_implemented":["steps/userMessage","system/ping"],"transports_supported":["http"],"provenance_producer":"none"}`, now)
	for _, seed := range [][]byte{
		mustJSON(hello),
		mustJSON(envelope("steps/userMessage", sid, uuid(4001), `{"content":[{"type":"text","value":"hi"}]}`, now)),
		mustJSON([]any{hello, hello}),
		mustJSON(envelope("handshake/hello", sid, uuid(4002), `{"acs_versions_supported":["9.0.0"]}`, now)),
		[]byte(`{"jsonrpc":"2.0","method":7,"id":{}}`),
		[]byte(`{"jsonrpc":"2.0","method":"handshake/hello","id":1,"params":{"signature":{"key_id":"k1"}}}`),
		[]byte(`[[],{},null,"x"]`),
		[]byte(`{"a":1,"a":2}`),
		[]byte(`[`),
		nil,
	} {
		f.Add(seed)
	}
	e := startConfig(f, gateway.Config{Timeout: 20 * time.Millisecond, Handshake: gateway.HandshakeRequired})
	f.Fuzz(func(t *testing.T, body []byte) {
		resp, err := http.Post(e.url+"/acs", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var raw json.RawMessage
		if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("HTTP %d, %v", resp.StatusCode, err)
		}
		if bytes.HasPrefix(raw, []byte("[")) {
			e.validBatch(t, raw)
			return
		}
		e.valid(t, raw)
		if !bytes.Contains(raw, []byte(`"signature"`)) {
			t.Fatalf("unsigned answer: %s", raw)
		}
	})
}
