package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/internal/gateway"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
)

// testStateKey is the state key of the test gateways.
var testStateKey = bytes.Repeat([]byte{5}, turnstate.StateKeySize)

// TestHandshakeRecordsSealed (issue 23): an ACS_HANDSHAKES record the
// endpoint did not write for exactly its key — put by anyone who may write
// the bucket, sealed with another key, edited, or moved from another
// session — is taken as absent and alerted: it neither admits a step of
// the session nor refuses the legitimate caller's hello, which replaces it.
func TestHandshakeRecordsSealed(t *testing.T) {
	e := startAuth(t, gateway.Config{Handshake: gateway.HandshakeRequired}, nil)
	ctx := context.Background()
	kv, err := e.js.KeyValue(ctx, acs.HandshakeBucket)
	if err != nil {
		t.Fatal(err)
	}
	own, err := turnstate.NewSealer(testStateKey)
	if err != nil {
		t.Fatal(err)
	}
	other, err := turnstate.NewSealer(bytes.Repeat([]byte{6}, turnstate.StateKeySize))
	if err != nil {
		t.Fatal(err)
	}
	// record is a negotiation of sid's session by caller, admitting
	// sessionStart from agent a1.
	record := func(caller string) []byte {
		b, _ := json.Marshal(map[string]any{"client_hello": map[string]any{"forged": true}, "agent_id": "a1", "caller": caller,
			"server_hello": map[string]any{"negotiated_version": "0.1.0"}, "methods_evaluated": []string{"steps/sessionStart"},
			"at": time.Now().UTC()})
		return b
	}
	const kind = "handshake"
	var alerts atomic.Int64
	nc := natstest.Connect(t, e.srv)
	sub, err := nc.Subscribe("acs.alerts._system.>", func(m *nats.Msg) {
		if bytes.Contains(m.Data, []byte(gateway.AlertHandshakeInvalid)) {
			alerts.Add(1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	_ = nc.Flush()

	tests := []struct {
		name  string
		value func(key string) []byte
		// trusted: the record is the endpoint's own, and admits the step.
		trusted bool
	}{
		{"unsealed, another caller's", func(string) []byte { return record("mallory") }, false},
		{"unsealed, the caller's", func(string) []byte { return record("alice") }, false},
		{"sealed with another key", func(key string) []byte { return other.Seal(kind, key, record("alice")) }, false},
		{"edited", func(key string) []byte {
			return bytes.Replace(own.Seal(kind, key, record("mallory")), []byte("mallory"), []byte("alice"), 1)
		}, false},
		{"moved from another session", func(string) []byte {
			return own.Seal(kind, acs.SessionKey("acme", uuid(999)), record("alice"))
		}, false},
		{"sealed as another kind", func(key string) []byte { return own.Seal(turnstate.KindSession, key, record("alice")) }, false},
		{"the endpoint's own", func(key string) []byte { return own.Seal(kind, key, record("alice")) }, true},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sid := uuid(700 + i)
			key := acs.SessionKey("acme", sid)
			if _, err := kv.Put(ctx, key, tc.value(key)); err != nil {
				t.Fatal(err)
			}
			before := e.gw.Stats().HandshakesInvalid.Load()
			step := e.post(t, tokenAlice, sessionStartOf(sid, "a1", 7000+10*i))
			if tc.trusted {
				step.wantDecision(t, "allow")
				return
			}
			// Not admitted by the record...
			step.wantRPCError(t, http.StatusOK, acs.CodeCapabilityNotNegotiated, acs.ReasonHandshakeRequired)
			if got := e.gw.Stats().HandshakesInvalid.Load(); got <= before {
				t.Fatalf("the record was not counted as invalid (%d)", got)
			}
			// ...nor refusing the caller's own hello, which replaces it.
			e.post(t, tokenAlice, helloFor(sid, "a1", 7001+10*i)).wantServerHello(t)
			e.post(t, tokenAlice, sessionStartOf(sid, "a1", 7002+10*i)).wantDecision(t, "allow")
			entry, err := kv.Get(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if rec, why := own.Open(kind, key, entry.Value()); why != "" || !bytes.Contains(rec, []byte(`"caller":"alice"`)) {
				t.Fatalf("the stored record (%s): %s", why, entry.Value())
			}
		})
	}
	// Alerted: at most one alert a second, each with the count so far.
	testwait.Eventually(t, 10*time.Second, 10*time.Millisecond, "an alert about the records", func() bool { return alerts.Load() > 0 })
}
