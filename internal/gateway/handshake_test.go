package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/gateway"
	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
)

// TestHandshakeContract walks one session through the handshake contract
// of ACS §4 with the handshake required: steps before the hello and methods
// outside it are refused -32003, the hello is held to its transport and
// signature, a repeated hello gets the same ServerHello and another one
// -32000, and every answer — errors and the ServerHello included — is
// signed with the key the request named.
func TestHandshakeContract(t *testing.T) {
	e := startWith(t, 10*time.Second, gateway.HandshakeRequired)
	now := time.Now()
	sid := uuid(20)
	clientHello := func(transports string) map[string]any {
		return envelope("handshake/hello", sid, uuid(2000), `{"acs_versions_supported":["0.1.0"],"methods_implemented":["steps/sessionStart","steps/sessionStart","steps/userMessage"],"transports_supported":`+transports+`,"provenance_producer":"none"}`, now)
	}
	tests := []struct {
		name   string
		body   map[string]any
		keyID  string // the request's key, "" unsigned
		code   acs.Code
		reason string
		check  func(t *testing.T, r reply)
	}{
		{name: "a step before the handshake", body: envelope("steps/sessionStart", sid, uuid(2001), `{}`, now), keyID: "k2",
			code: acs.CodeCapabilityNotNegotiated, reason: acs.ReasonHandshakeRequired},
		{name: "an unsigned hello with signatures required", body: clientHello(`["http"]`),
			code: acs.CodeSignatureInvalid, reason: acs.ReasonSignature},
		{name: "a hello offering only stdio", body: clientHello(`["stdio"]`), keyID: "k2",
			code: acs.CodeSessionRefused, reason: acs.ReasonTransport},
		{name: "the hello", body: clientHello(`["http","stdio"]`), keyID: "k2", check: func(t *testing.T, r reply) {
			if got := r.Result["methods_evaluated"]; len(got.([]any)) != 2 || r.Result["selected_transport"] != "http" {
				t.Fatalf("ServerHello %v", r.Result)
			}
		}},
		{name: "the same hello again", body: clientHello(`["http","stdio"]`), keyID: "k2", check: func(t *testing.T, r reply) {
			if r.Result["negotiated_version"] != "0.1.0" {
				t.Fatalf("ServerHello %v", r.Result)
			}
		}},
		{name: "another hello for the session", body: clientHello(`["http"]`), keyID: "k2",
			code: acs.CodeSessionRefused, reason: acs.ReasonAlreadyNegotiated},
		{name: "a method the session did not negotiate", body: withTurn(envelope("steps/turnStart", sid, uuid(2002), `{"turn_id":"`+uuid(2002)+`","triggered_by":"user_message"}`, now), uuid(2002)), keyID: "k2",
			code: acs.CodeCapabilityNotNegotiated, reason: acs.ReasonNotNegotiated},
		{name: "a negotiated step", body: envelope("steps/sessionStart", sid, uuid(2003), `{}`, now), keyID: "k2", check: func(t *testing.T, r reply) {
			if r.Result["decision"] != "allow" {
				t.Fatalf("decision %v", r.Result)
			}
		}},
		{name: "a refused payload, signed with the request's key", body: envelope("steps/userMessage", sid, uuid(2004), `{"content":"not a list"}`, now), keyID: "k2", check: func(t *testing.T, r reply) {
			if r.Result["decision"] != "deny" {
				t.Fatalf("decision %v", r.Result)
			}
		}},
		{name: "a replay, signed with the request's key", body: envelope("steps/sessionStart", sid, uuid(2003), `{}`, now), keyID: "k2",
			code: acs.CodeReplayDetected, reason: acs.ReasonReplayed},
	}
	var firstHello []byte
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.body
			if tc.keyID != "" {
				body = e.signedWith(t, tc.keyID, body)
			}
			_, raw, _ := e.post(t, mustJSON(body))
			e.valid(t, raw)
			var r reply
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatal(err)
			}
			if tc.code != 0 {
				if r.Error == nil || r.Error.Code != int(tc.code) || r.Error.Data["reason"] != tc.reason {
					t.Fatalf("want %d %s, got %s", tc.code, tc.reason, raw)
				}
			} else if r.Error != nil {
				t.Fatalf("error %s", raw)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
			want := tc.keyID
			if want == "" {
				want = e.keys.Default
			}
			e.verifySignature(t, raw, sid, want)
			if tc.name == "the hello" {
				firstHello = resultWithoutSignature(t, raw)
			}
			if tc.name == "the same hello again" && !bytes.Equal(firstHello, resultWithoutSignature(t, raw)) {
				t.Fatalf("second ServerHello differs:\n%s\n%s", firstHello, resultWithoutSignature(t, raw))
			}
		})
	}
}

// verifySignature checks a response's HMAC signature (result or error) and
// the key it names.
func (e *env) verifySignature(t *testing.T, raw []byte, sessionID, keyID string) {
	t.Helper()
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	var resp acs.Response
	_ = json.Unmarshal(raw, &resp)
	sig := resp.Sig()
	if resp.Result == nil && resp.Error == nil {
		// A ServerHello: not an AcsResult.
		res, _ := doc["result"].(map[string]any)
		if s, ok := res["signature"].(map[string]any); ok {
			sig = &acs.Signature{Algorithm: s["algorithm"].(string), Value: s["value"].(string), KeyID: s["key_id"].(string)}
		}
	}
	if sig == nil {
		t.Fatalf("unsigned response %s", raw)
	}
	if sig.KeyID != keyID {
		t.Fatalf("signed with %q, want %q: %s", sig.KeyID, keyID, raw)
	}
	input, err := acs.SigningInput(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.keys.Verify(sig, sessionID, input); err != nil {
		t.Fatalf("signature: %v\n%s", err, raw)
	}
}

func resultWithoutSignature(t *testing.T, raw []byte) []byte {
	t.Helper()
	var doc map[string]map[string]any
	_ = json.Unmarshal(raw, &doc)
	delete(doc["result"], "signature")
	out, _ := json.Marshal(doc["result"])
	return out
}

// TestHandshakeLastsWhileInUse: a negotiation in use is written again once
// half its TTL has passed, so an active session keeps it past the TTL
// after its hello, as session states last while the session is active.
func TestHandshakeLastsWhileInUse(t *testing.T) {
	const ttl = 2 * time.Second
	e := startEnv(t, gateway.Config{Timeout: 10 * time.Second, Handshake: gateway.HandshakeRequired}, zerolog.Nop(),
		func(c *stream.Config) { c.Topology.HandshakeTTL = ttl })
	sid := uuid(30)
	hello := envelope("handshake/hello", sid, uuid(3000), `{"acs_versions_supported":["0.1.0"],"methods_implemented":["steps/userMessage"],"transports_supported":["http"],"provenance_producer":"none"}`, time.Now())
	if _, raw, _ := e.post(t, mustJSON(e.signed(t, hello))); !bytes.Contains(raw, []byte(`"negotiated_version"`)) {
		t.Fatalf("hello: %s", raw)
	}
	for i := 1; i <= 4; i++ {
		// Four steps 0.8 s apart: the last comes 3.2 s after the hello,
		// past the TTL of the hello's own write. The sleep is the time
		// under test (the TTL runs on the bucket's clock), not a wait
		// for something to happen.
		time.Sleep(ttl * 2 / 5)
		step := envelope("steps/userMessage", sid, uuid(3000+i), `{"content":[{"type":"text","value":"hi"}]}`, time.Now())
		_, raw, _ := e.post(t, mustJSON(e.signed(t, step)))
		var r reply
		if err := json.Unmarshal(raw, &r); err != nil || r.Error != nil {
			t.Fatalf("step %d, %s after the hello: %s", i, time.Duration(i)*ttl*2/5, raw)
		}
	}
	// Not only in this gateway's memory: a restarted one finds it too.
	js, err := jetstream.New(natstest.Connect(t, e.srv))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(context.Background(), acs.HandshakeBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(context.Background(), acs.SessionKey("default", sid)); err != nil {
		t.Fatalf("the negotiation is gone from the bucket: %v", err)
	}
}
