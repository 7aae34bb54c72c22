package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
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
//
// The endpoint's clock is the test's, moved on by hand, so the records age
// without the test waiting and whatever the machine's load. The bucket's
// own TTL runs on the server's clock and is long enough that nothing
// expires meanwhile: that each write restarts it is the bucket's doing.
func TestHandshakeLastsWhileInUse(t *testing.T) {
	const ttl = time.Hour
	start := time.Now()
	var elapsed atomic.Int64 // the endpoint's clock, past start
	now := func() time.Time { return start.Add(time.Duration(elapsed.Load())) }
	e := startEnv(t, gateway.Config{Timeout: 10 * time.Second, Handshake: gateway.HandshakeRequired, Now: now}, zerolog.Nop(),
		func(c *stream.Config) { c.Topology.HandshakeTTL = ttl })
	sid := uuid(30)
	hello := envelope("handshake/hello", sid, uuid(3000), `{"acs_versions_supported":["0.1.0"],"methods_implemented":["steps/userMessage"],"transports_supported":["http"],"provenance_producer":"none"}`, time.Now())
	if _, raw, _ := e.post(t, mustJSON(e.signed(t, hello))); !bytes.Contains(raw, []byte(`"negotiated_version"`)) {
		t.Fatalf("hello: %s", raw)
	}
	// Read from the bucket, not this gateway's memory: a restarted one
	// finds what is there.
	js, err := jetstream.New(natstest.Connect(t, e.srv))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(context.Background(), acs.HandshakeBucket)
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := turnstate.NewSealer(testStateKey)
	if err != nil {
		t.Fatal(err)
	}
	key := acs.SessionKey("default", sid)
	// stored returns the record's revision and when it says it was written.
	stored := func(t *testing.T) (uint64, time.Time) {
		t.Helper()
		entry, err := kv.Get(context.Background(), key)
		if err != nil {
			t.Fatalf("the negotiation is gone from the bucket: %v", err)
		}
		record, why := sealer.Open("handshake", key, entry.Value())
		var n struct {
			At time.Time `json:"at"`
		}
		if why != "" {
			t.Fatalf("the record does not verify: %s", why)
		}
		if err := json.Unmarshal(record, &n); err != nil {
			t.Fatal(err)
		}
		return entry.Revision(), n.At
	}
	rev, at := stored(t)
	if !at.Equal(start) {
		t.Fatalf("the hello's record was written at %s, want %s", at, start)
	}
	// Four steps 2/5 of the TTL apart, the last past the TTL of the hello's
	// own write: each step finding its record more than half the TTL old
	// writes it again.
	for i, step := range []struct {
		after     time.Duration // since the hello
		rewritten bool          // the record was over half the TTL old
	}{
		{after: ttl * 2 / 5},
		{after: ttl * 4 / 5, rewritten: true},
		{after: ttl * 6 / 5},
		{after: ttl * 8 / 5, rewritten: true},
	} {
		elapsed.Store(int64(step.after))
		// Stamped with the real time: the processor holds a step's
		// timestamp to the time its message was stored.
		env := envelope("steps/userMessage", sid, uuid(3001+i), `{"content":[{"type":"text","value":"hi"}]}`, time.Now())
		_, raw, _ := e.post(t, mustJSON(e.signed(t, env)))
		var r reply
		if err := json.Unmarshal(raw, &r); err != nil || r.Error != nil {
			t.Fatalf("step %d, %s after the hello: %s", i+1, step.after, raw)
		}
		was, wasAt := rev, at
		rev, at = stored(t)
		want := wasAt
		if step.rewritten {
			want = now()
		}
		if (rev != was) != step.rewritten || !at.Equal(want) {
			t.Fatalf("step %d, %s after the hello: the record is revision %d (was %d) written %s after the hello; want it written again: %t",
				i+1, step.after, rev, was, at.Sub(start), step.rewritten)
		}
	}
}
