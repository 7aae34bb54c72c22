package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/gateway"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/schema"
)

// TestBindingReadFromTheBucket: a session first used without a handshake
// (--handshake optional) is bound to its caller by a record without a
// ClientHello. Read back from the bucket — by another endpoint, after a
// restart, or by a hello, which reads the bucket — that record used to
// pass for a negotiation (its client_hello was stored as null): every
// later step of the session was refused -32003 and its caller's hello
// already_negotiated.
func TestBindingReadFromTheBucket(t *testing.T) {
	e := startAuth(t, gateway.Config{Handshake: gateway.HandshakeOptional}, nil)
	sid := uuid(5)
	e.post(t, tokenAlice, sessionStartOf(sid, "a1", 500)).wantDecision(t, "allow")

	// Another endpoint, as after a restart or behind a load balancer.
	v, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	callers, err := gateway.ParseCallers([]byte(authCallers()))
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(context.Background(), natstest.Connect(t, e.srv), v, gateway.Config{Handshake: gateway.HandshakeOptional,
		Callers: callers, SkewWindow: guardian.DefaultSkewWindow, StateKey: testStateKey, Timeout: 10 * time.Second}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(gw.Handler())
	t.Cleanup(hs.Close)
	other := &authEnv{srv: e.srv, gw: gw, url: hs.URL, js: e.js, client: e.client}
	other.post(t, tokenAlice, withAgent(envelope("steps/userMessage", sid, uuid(501), `{"content":[{"type":"text","value":"hi"}]}`, time.Now()), "a1")).
		wantDecision(t, "allow")
	other.post(t, tokenBob, withAgent(envelope("steps/userMessage", sid, uuid(502), `{"content":[{"type":"text","value":"hi"}]}`, time.Now()), "a1")).
		wantRPCError(t, http.StatusOK, acs.CodeSessionRefused, acs.ReasonCallerNotBound)
	// Its caller may negotiate it there.
	other.post(t, tokenAlice, helloFor(sid, "a1", 503)).wantServerHello(t)
}
