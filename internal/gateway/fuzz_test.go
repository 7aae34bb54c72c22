package gateway_test

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/core/acs"
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

// FuzzCallerHeaders sends arbitrary Authorization and Content-Type headers
// to an authenticated endpoint: only a caller's bearer token gets past 401,
// only application/json past 415, and every answer is a JSON-RPC error or
// response whatever the headers.
func FuzzCallerHeaders(f *testing.F) {
	hello := mustJSON(helloFor(uuid(41), "a1", 4100))
	for _, seed := range []struct{ auth, ct string }{
		{"Bearer " + tokenAlice, "application/json"},
		{"bearer " + tokenAlice, "application/json; charset=utf-8"},
		{"Bearer " + tokenAlice, "text/plain"},
		{"Bearer  " + tokenAlice + " ", "application/x-www-form-urlencoded"},
		{"Basic YTpi", "application/json"},
		{"Bearer", ""},
		{"", "application/json"},
		{"Bearer " + gateway.HashToken(tokenAlice), "application/json"},
	} {
		f.Add(seed.auth, seed.ct)
	}
	e := startAuth(f, gateway.Config{Handshake: gateway.HandshakeRequired, Timeout: 20 * time.Millisecond}, nil)
	f.Fuzz(func(t *testing.T, auth, ct string) {
		req, err := http.NewRequest(http.MethodPost, e.url+"/acs", bytes.NewReader(hello))
		if err != nil {
			t.Skip()
		}
		// Header values the client refuses to send are not the server's
		// concern.
		req.Header["Authorization"] = []string{auth}
		req.Header["Content-Type"] = []string{ct}
		resp, err := e.client.Do(req)
		if err != nil {
			t.Skip()
		}
		defer resp.Body.Close()
		var r reply
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			t.Fatalf("HTTP %d without a JSON-RPC body: %v", resp.StatusCode, err)
		}
		scheme, token, _ := strings.Cut(strings.TrimSpace(auth), " ")
		known := strings.EqualFold(scheme, "Bearer") && strings.TrimSpace(token) == tokenAlice
		mt, _, _ := mime.ParseMediaType(ct)
		switch {
		case !known:
			if resp.StatusCode != http.StatusUnauthorized || r.Error == nil || r.Error.Data["reason"] != acs.ReasonUnauthenticated {
				t.Fatalf("Authorization %q: HTTP %d %+v, want 401", auth, resp.StatusCode, r.Error)
			}
		case mt != "application/json":
			if resp.StatusCode != http.StatusUnsupportedMediaType || r.Error == nil || r.Error.Data["reason"] != acs.ReasonContentType {
				t.Fatalf("Content-Type %q: HTTP %d %+v, want 415", ct, resp.StatusCode, r.Error)
			}
		case resp.StatusCode != http.StatusOK:
			t.Fatalf("Authorization %q, Content-Type %q: HTTP %d", auth, ct, resp.StatusCode)
		}
	})
}
