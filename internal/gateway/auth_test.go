package gateway_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/gateway"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
	"github.com/turnguard/turnguard/schema"
)

// Bearer tokens of the callers in authCallers.
const (
	tokenAlice = "tgt_alice-token-of-tenant-acme"
	tokenBob   = "tgt_bob-token-of-tenant-acme"
	tokenEve   = "tgt_eve-token-of-tenant-other"
	tokenBound = "tgt_token-bound-to-agent-one"
)

// authCallers is a callers file: two callers of tenant acme, one of tenant
// other, one bound to an agent, and three certificate callers.
func authCallers() string {
	return fmt.Sprintf(`# callers of the tests
callers:
  - {name: alice, tenant: acme, token_sha256: %s}
  - {name: bob, tenant: acme, token_sha256: %s}
  - {name: eve, tenant: other, token_sha256: %s}
  - {name: bound, tenant: acme, agent_id: agent-one, token_sha256: %s}
  - {name: ci, tenant: acme, cert_uri: "spiffe://acme.example/ci"}
  - {name: builder, tenant: other, cert_dns: builder.acme.example}
  - {name: ops, tenant: acme, cert_subject: "CN=ops,O=Acme"}
`, gateway.HashToken(tokenAlice), gateway.HashToken(tokenBob), gateway.HashToken(tokenEve), gateway.HashToken(tokenBound))
}

// authEnv is an authenticated endpoint in front of a processor, unsigned.
type authEnv struct {
	srv *server.Server
	gw  *gateway.Gateway
	url string
	js  jetstream.JetStream
	// client talks to the endpoint (TLS-aware when it serves TLS).
	client *http.Client
}

// startAuth runs a processor and an endpoint with the callers of
// authCallers, plain HTTP unless tlsCfg is set.
func startAuth(t testing.TB, cfg gateway.Config, tlsCfg *tls.Config) *authEnv {
	t.Helper()
	srv := natstest.RunServer(t)
	v, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	runProcessor(t, srv, v, guardian.Config{SkewWindow: guardian.DefaultSkewWindow})
	callers, err := gateway.ParseCallers([]byte(authCallers()))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Callers, cfg.SkewWindow = callers, guardian.DefaultSkewWindow
	if cfg.StateKey == nil {
		cfg.StateKey = testStateKey
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	gw, err := gateway.New(context.Background(), natstest.Connect(t, srv), v, cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(gw.Handler())
	// The TLS handshakes refused on purpose would fill the output.
	hs.Config.ErrorLog = log.New(io.Discard, "", 0)
	e := &authEnv{srv: srv, gw: gw, client: &http.Client{Timeout: 20 * time.Second}}
	if tlsCfg != nil {
		hs.TLS = tlsCfg
		hs.StartTLS()
	} else {
		hs.Start()
	}
	t.Cleanup(hs.Close)
	e.url = hs.URL
	if e.js, err = jetstream.New(natstest.Connect(t, srv)); err != nil {
		t.Fatal(err)
	}
	return e
}

// httpReply is an answer as the client sees it.
type httpReply struct {
	status int
	header http.Header
	raw    []byte
	reply
}

// send posts body to /acs with a bearer token ("" none) and Content-Type.
func (e *authEnv) send(t *testing.T, token, contentType string, body []byte) httpReply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.url+"/acs", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := httpReply{status: resp.StatusCode, header: resp.Header, raw: raw}
	if !bytes.HasPrefix(raw, []byte("[")) {
		if err := json.Unmarshal(raw, &r.reply); err != nil {
			t.Fatalf("HTTP %d: not a JSON-RPC body: %s", resp.StatusCode, raw)
		}
	}
	return r
}

// post sends a JSON document with a bearer token.
func (e *authEnv) post(t *testing.T, token string, doc any) httpReply {
	t.Helper()
	return e.send(t, token, "application/json", mustJSON(doc))
}

// wantRPCError requires HTTP status and a JSON-RPC error code and reason.
func (r httpReply) wantRPCError(t *testing.T, status int, code acs.Code, reason string) {
	t.Helper()
	if r.status != status || r.Error == nil || r.Error.Code != int(code) || r.Error.Data["reason"] != reason {
		t.Fatalf("want HTTP %d with error %d %s, got HTTP %d: %s", status, code, reason, r.status, r.raw)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
}

func (r httpReply) wantDecision(t *testing.T, decision string) {
	t.Helper()
	if r.status != http.StatusOK || r.Error != nil || r.Result["decision"] != decision {
		t.Fatalf("want HTTP 200 with decision %s, got HTTP %d: %s", decision, r.status, r.raw)
	}
}

func (r httpReply) wantServerHello(t *testing.T) {
	t.Helper()
	if r.status != http.StatusOK || r.Error != nil || r.Result["negotiated_version"] != "0.1.0" {
		t.Fatalf("want a ServerHello, got HTTP %d: %s", r.status, r.raw)
	}
}

// helloFor is a ClientHello envelope of a session and agent.
func helloFor(session, agent string, n int) map[string]any {
	doc := envelope("handshake/hello", session, uuid(n), `{"acs_versions_supported":["0.1.0"],"methods_implemented":["steps/sessionStart","steps/userMessage"],"transports_supported":["http","https"],"provenance_producer":"none"}`, time.Now())
	return withAgent(doc, agent)
}

func withAgent(doc map[string]any, agent string) map[string]any {
	doc["params"].(map[string]any)["metadata"].(map[string]any)["agent_id"] = agent
	return doc
}

func sessionStartOf(session, agent string, n int) map[string]any {
	return withAgent(envelope("steps/sessionStart", session, uuid(n), `{}`, time.Now()), agent)
}

// lastDeadLetter reads the newest dead letter of a tenant.
func (e *authEnv) lastDeadLetter(t *testing.T, tenant string) *jetstream.RawStreamMsg {
	t.Helper()
	ctx := context.Background()
	s, err := e.js.Stream(ctx, "ACS_DLQ")
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetLastMsgForSubject(ctx, acs.DLQSubject(tenant))
	if err != nil {
		t.Fatalf("no dead letter of tenant %s: %v", tenant, err)
	}
	return m
}

// dlqCount is the number of dead letters in ACS_DLQ.
func (e *authEnv) dlqCount(t *testing.T) uint64 {
	t.Helper()
	s, err := e.js.Stream(context.Background(), "ACS_DLQ")
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// TestUnauthenticated: a request without a caller's credentials is
// answered 401 with a JSON-RPC error and a Bearer challenge, counted, and
// neither decided nor dead-lettered.
func TestUnauthenticated(t *testing.T) {
	e := startAuth(t, gateway.Config{Handshake: gateway.HandshakeOptional}, nil)
	body := mustJSON(sessionStartOf(uuid(1), "agent-one", 101))
	for i, tc := range []struct {
		name, authorization, challenge string
		query                          string
	}{
		{"no credentials", "", `Bearer realm="turnguard"`, ""},
		{"a wrong token in the URL", "", `Bearer realm="turnguard", error="invalid_token"`, "?access_token=tgt_not-a-caller"},
		{"an empty token in the URL", "", `Bearer realm="turnguard", error="invalid_token"`, "?access_token="},
		{"two tokens in the URL", "", `Bearer realm="turnguard", error="invalid_token"`, "?access_token=" + tokenAlice + "&access_token=" + tokenAlice},
		{"a token in the URL and the header", "Bearer " + tokenAlice, `Bearer realm="turnguard", error="invalid_token"`, "?access_token=" + tokenAlice},
		{"a wrong token", "Bearer tgt_not-a-caller", `Bearer realm="turnguard", error="invalid_token"`, ""},
		{"the hash instead of the token", "Bearer " + gateway.HashToken(tokenAlice), `Bearer realm="turnguard", error="invalid_token"`, ""},
		{"another scheme", "Basic YWxpY2U6c2VjcmV0", `Bearer realm="turnguard", error="invalid_token"`, ""},
		{"an empty bearer token", "Bearer ", `Bearer realm="turnguard", error="invalid_token"`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, e.url+"/acs"+tc.query, bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			if tc.authorization != "" {
				req.Header.Set("Authorization", tc.authorization)
			}
			resp, err := e.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var r reply
			if err := json.Unmarshal(raw, &r); err != nil || resp.StatusCode != http.StatusUnauthorized ||
				r.Error == nil || r.Error.Code != int(acs.CodeSessionRefused) || r.Error.Data["reason"] != acs.ReasonUnauthenticated || string(r.ID) != "null" {
				t.Fatalf("HTTP %d: %s", resp.StatusCode, raw)
			}
			if got := resp.Header.Get("WWW-Authenticate"); got != tc.challenge {
				t.Fatalf("WWW-Authenticate %q, want %q", got, tc.challenge)
			}
			if n := e.gw.Stats().Unauthenticated.Load(); n != uint64(i+1) {
				t.Fatalf("%d counted, want %d", n, i+1)
			}
		})
	}
	// The same body with a caller's token is decided: it had not reached
	// the Guardian before.
	e.post(t, tokenBound, sessionStartOf(uuid(1), "agent-one", 101)).wantDecision(t, "allow")

	// The token as the access_token query parameter (RFC 6750 §2.3), the
	// one credential a client that takes only a URL — the ACS Python
	// adapters' ACS_GUARDIAN_URL — can carry. The answer is not cacheable.
	req, err := http.NewRequest(http.MethodPost, e.url+"/acs?access_token="+tokenBound, bytes.NewReader(mustJSON(sessionStartOf(uuid(3), "agent-one", 102))))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(raw), `"decision":"allow"`) || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("token in the URL: HTTP %d, Cache-Control %q: %s", resp.StatusCode, resp.Header.Get("Cache-Control"), raw)
	}
	if n := e.dlqCount(t); n != 0 {
		t.Fatalf("%d dead letters of unauthenticated requests, want none (their bodies are not read)", n)
	}
}

// TestTenantIsolation: a caller's tenant is the tenant of its envelopes,
// so a caller of another tenant naming the same session id reaches a
// different session, never the first one.
func TestTenantIsolation(t *testing.T) {
	e := startAuth(t, gateway.Config{Handshake: gateway.HandshakeRequired}, nil)
	sid := uuid(2)
	e.post(t, tokenAlice, helloFor(sid, "a1", 200)).wantServerHello(t)
	e.post(t, tokenAlice, sessionStartOf(sid, "a1", 201)).wantDecision(t, "allow")

	// Tenant other has no such session: no handshake there.
	e.post(t, tokenEve, sessionStartOf(sid, "a1", 202)).wantRPCError(t, http.StatusOK, acs.CodeCapabilityNotNegotiated, acs.ReasonHandshakeRequired)
	// Its own hello makes its own session, whose sessionStart is not a
	// second one of acme's.
	e.post(t, tokenEve, helloFor(sid, "e1", 203)).wantServerHello(t)
	e.post(t, tokenEve, sessionStartOf(sid, "e1", 204)).wantDecision(t, "allow")

	ctx := context.Background()
	kv, err := e.js.KeyValue(ctx, acs.HandshakeBucket)
	if err != nil {
		t.Fatal(err)
	}
	for tenant, caller := range map[string]string{"acme": "alice", "other": "eve"} {
		entry, err := kv.Get(ctx, acs.SessionKey(tenant, sid))
		if err != nil {
			t.Fatalf("handshake of %s: %v", tenant, err)
		}
		if !bytes.Contains(entry.Value(), []byte(`"caller":"`+caller+`"`)) {
			t.Fatalf("handshake of %s not bound to %s: %s", tenant, caller, entry.Value())
		}
	}
	// The decisions went to each tenant's own subject.
	s, err := e.js.Stream(ctx, "ACS_DECISIONS")
	if err != nil {
		t.Fatal(err)
	}
	for _, tenant := range []string{"acme", "other"} {
		// The endpoint's subscription can see a decision a moment before
		// the stream has stored it.
		var m *jetstream.RawStreamMsg
		testwait.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
			m, err = s.GetLastMsgForSubject(ctx, acs.DecisionSubject(tenant, sid))
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				return fmt.Errorf("decision of %s: %w", tenant, err)
			}
			return nil
		})
		if err != nil || m.Header.Get(acs.HdrMethod) != "steps/sessionStart" {
			t.Fatalf("decision of %s: %v", tenant, err)
		}
	}
}

// TestCallerBinding: a session belongs to the caller that negotiated it
// (or, with the handshake optional, first used it); another caller of the
// same tenant cannot say hello to it or send steps into it.
func TestCallerBinding(t *testing.T) {
	t.Run("negotiated", func(t *testing.T) {
		e := startAuth(t, gateway.Config{Handshake: gateway.HandshakeRequired}, nil)
		sid := uuid(3)
		e.post(t, tokenAlice, helloFor(sid, "a1", 300)).wantServerHello(t)
		// Bob sends the very same hello: not his session.
		e.post(t, tokenBob, helloFor(sid, "a1", 300)).wantRPCError(t, http.StatusOK, acs.CodeSessionRefused, acs.ReasonCallerNotBound)
		e.post(t, tokenBob, sessionStartOf(sid, "a1", 301)).wantRPCError(t, http.StatusOK, acs.CodeSessionRefused, acs.ReasonCallerNotBound)
		e.post(t, tokenAlice, sessionStartOf(sid, "a1", 302)).wantDecision(t, "allow")
		e.post(t, tokenAlice, helloFor(sid, "a1", 300)).wantServerHello(t)
	})
	t.Run("first used without a handshake", func(t *testing.T) {
		e := startAuth(t, gateway.Config{Handshake: gateway.HandshakeOptional}, nil)
		sid := uuid(4)
		e.post(t, tokenAlice, sessionStartOf(sid, "a1", 400)).wantDecision(t, "allow")
		e.post(t, tokenBob, withAgent(envelope("steps/userMessage", sid, uuid(401), `{"content":[{"type":"text","value":"hi"}]}`, time.Now()), "a1")).
			wantRPCError(t, http.StatusOK, acs.CodeSessionRefused, acs.ReasonCallerNotBound)
		e.post(t, tokenBob, helloFor(sid, "a1", 402)).wantRPCError(t, http.StatusOK, acs.CodeSessionRefused, acs.ReasonCallerNotBound)
		// Its owner may still negotiate it, and is then held to it.
		e.post(t, tokenAlice, helloFor(sid, "a1", 403)).wantServerHello(t)
		e.post(t, tokenAlice, withAgent(envelope("steps/turnStart", sid, uuid(404), `{"turn_id":"`+uuid(404)+`","triggered_by":"user_message"}`, time.Now()), "a1")).
			wantRPCError(t, http.StatusOK, acs.CodeCapabilityNotNegotiated, acs.ReasonNotNegotiated)
	})
}

// TestAgentBinding: a caller with an agent_id may send only that agent's
// hellos and steps.
func TestAgentBinding(t *testing.T) {
	e := startAuth(t, gateway.Config{Handshake: gateway.HandshakeRequired}, nil)
	sid := uuid(5)
	e.post(t, tokenBound, helloFor(sid, "agent-two", 500)).wantRPCError(t, http.StatusOK, acs.CodeSessionRefused, acs.ReasonAgentNotBound)
	e.post(t, tokenBound, helloFor(sid, "agent-one", 501)).wantServerHello(t)
	e.post(t, tokenBound, sessionStartOf(sid, "agent-two", 502)).wantRPCError(t, http.StatusOK, acs.CodeSessionRefused, acs.ReasonAgentNotBound)
	e.post(t, tokenBound, sessionStartOf(sid, "agent-one", 503)).wantDecision(t, "allow")
	// A caller without an agent_id sends for any agent.
	e.post(t, tokenAlice, helloFor(uuid(6), "anyone", 504)).wantServerHello(t)
}

// TestContentType: only application/json reaches the Guardian; the form
// and text/plain bodies a browser may send cross-origin without a
// preflight are answered 415.
func TestContentType(t *testing.T) {
	e := startAuth(t, gateway.Config{Handshake: gateway.HandshakeOptional}, nil)
	n := 600
	for _, tc := range []struct {
		contentType string
		ok          bool
	}{
		{"text/plain", false},
		{"text/plain;charset=UTF-8", false},
		{"application/x-www-form-urlencoded", false},
		{"multipart/form-data; boundary=xyz", false},
		{"", false},
		{"application/json-seq", false},
		{"application/json", true},
		{"application/json; charset=utf-8", true},
		{"Application/JSON", true},
	} {
		t.Run(tc.contentType, func(t *testing.T) {
			n++
			r := e.send(t, tokenAlice, tc.contentType, mustJSON(sessionStartOf(uuid(n), "a1", n)))
			if tc.ok {
				r.wantDecision(t, "allow")
				return
			}
			r.wantRPCError(t, http.StatusUnsupportedMediaType, acs.CodeInvalidRequest, acs.ReasonContentType)
		})
	}
}

// TestDeadLetters: every refusal the endpoint makes itself is kept in
// ACS_DLQ under the caller's tenant: the original bytes, the error's code,
// name and reason, the caller and the client's address.
func TestDeadLetters(t *testing.T) {
	const limit = 4096
	e := startAuth(t, gateway.Config{Handshake: gateway.HandshakeRequired, MaxBodyBytes: limit}, nil)
	sid := uuid(7)
	e.post(t, tokenAlice, helloFor(sid, "a1", 700)).wantServerHello(t)
	oversize := append([]byte(`{"jsonrpc":"2.0","padding":"`), bytes.Repeat([]byte("x"), 2*limit)...)
	for _, tc := range []struct {
		name        string
		token       string
		contentType string
		body        []byte
		status      int
		code        acs.Code
		reason      string
		kept        []byte // the bytes kept; nil: the body
	}{
		{name: "not JSON", body: []byte(`{"jsonrpc":`), code: acs.CodeParseError, reason: acs.ReasonParseError},
		{name: "a form post", contentType: "application/x-www-form-urlencoded", body: []byte(`a=1&b=2`), status: http.StatusUnsupportedMediaType,
			code: acs.CodeInvalidRequest, reason: acs.ReasonContentType},
		{name: "too large", body: oversize, code: acs.CodeInvalidRequest, reason: acs.ReasonTooLarge, kept: oversize[:limit]},
		{name: "an unknown method", body: mustJSON(withAgent(envelope("steps/teleport", sid, uuid(701), `{}`, time.Now()), "a1")),
			code: acs.CodeMethodNotFound, reason: acs.ReasonMethodNotFound},
		{name: "no request_id", body: []byte(`{"jsonrpc":"2.0","method":"steps/sessionStart","id":1,"params":{"metadata":{"session_id":"` + sid + `"}}}`),
			code: acs.CodeInvalidRequest, reason: acs.ReasonEnvelopeInvalid},
		{name: "not an object", body: []byte(`"steps/sessionStart"`), code: acs.CodeInvalidRequest, reason: acs.ReasonEnvelopeInvalid},
		{name: "an empty batch", body: []byte(`[]`), code: acs.CodeInvalidRequest, reason: acs.ReasonEnvelopeInvalid},
		{name: "a step before the handshake", body: mustJSON(sessionStartOf(uuid(8), "a1", 702)),
			code: acs.CodeCapabilityNotNegotiated, reason: acs.ReasonHandshakeRequired},
		{name: "an invalid hello", body: mustJSON(withAgent(envelope("handshake/hello", uuid(9), uuid(703), `{"acs_versions_supported":["0.1.0"]}`, time.Now()), "a1")),
			code: acs.CodeInvalidParams, reason: acs.ReasonPayloadInvalid},
		{name: "another caller's session", token: tokenBob, body: mustJSON(sessionStartOf(sid, "a1", 704)),
			code: acs.CodeSessionRefused, reason: acs.ReasonCallerNotBound},
		{name: "another agent", token: tokenBound, body: mustJSON(sessionStartOf(uuid(10), "a1", 705)),
			code: acs.CodeSessionRefused, reason: acs.ReasonAgentNotBound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			token, ct, status, kept := tc.token, tc.contentType, tc.status, tc.kept
			if token == "" {
				token = tokenAlice
			}
			if ct == "" {
				ct = "application/json"
			}
			if status == 0 {
				status = http.StatusOK
			}
			if kept == nil {
				kept = tc.body
			}
			before := e.gw.Stats().DeadLettered.Load()
			e.send(t, token, ct, tc.body).wantRPCError(t, status, tc.code, tc.reason)
			m := e.lastDeadLetter(t, "acme")
			if !bytes.Equal(m.Data, kept) {
				t.Fatalf("dead letter holds %d bytes %.80q, want the original %d bytes", len(m.Data), m.Data, len(kept))
			}
			caller := map[string]string{tokenAlice: "alice", tokenBob: "bob", tokenBound: "bound"}[token]
			for h, want := range map[string]string{acs.HdrErrorCode: fmt.Sprint(int(tc.code)), acs.HdrErrorName: tc.code.String(),
				acs.HdrErrorReason: tc.reason, acs.HdrCaller: caller, acs.HdrOriginalStream: "http"} {
				if got := m.Header.Get(h); got != want {
					t.Errorf("%s: %q, want %q", h, got, want)
				}
			}
			if host, _, err := net.SplitHostPort(m.Header.Get(acs.HdrRemoteAddr)); err != nil || host != "127.0.0.1" {
				t.Errorf("%s: %q", acs.HdrRemoteAddr, m.Header.Get(acs.HdrRemoteAddr))
			}
			if tc.reason == acs.ReasonTooLarge && !strings.Contains(m.Header.Get(acs.HdrBodyTruncated), "first 4096") {
				t.Errorf("%s: %q", acs.HdrBodyTruncated, m.Header.Get(acs.HdrBodyTruncated))
			}
			if got := e.gw.Stats().DeadLettered.Load(); got != before+1 {
				t.Errorf("dead-letter count %d, want %d", got, before+1)
			}
		})
	}
	// Another tenant's refusals are filed under its own tenant.
	e.send(t, tokenEve, "text/plain", []byte("hello")).wantRPCError(t, http.StatusUnsupportedMediaType, acs.CodeInvalidRequest, acs.ReasonContentType)
	if m := e.lastDeadLetter(t, "other"); string(m.Data) != "hello" || m.Header.Get(acs.HdrCaller) != "eve" {
		t.Fatalf("dead letter of tenant other: %q %v", m.Data, m.Header)
	}
}

// testPKI is a CA with server and client certificates, made in the test.
type testPKI struct {
	dir    string
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caPool *x509.CertPool
	serial int64
}

func newPKI(t *testing.T) *testPKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "turnguard test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	p := &testPKI{dir: t.TempDir(), ca: ca, caKey: key, caPool: pool, serial: 1}
	p.write(t, "ca.pem", "CERTIFICATE", der)
	return p
}

func (p *testPKI) write(t *testing.T, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// issue makes a certificate signed by the CA.
func (p *testPKI) issue(t *testing.T, tmpl *x509.Certificate) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p.serial++
	tmpl.SerialNumber = big.NewInt(p.serial)
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// serverFiles writes a server certificate for 127.0.0.1 and its key.
func (p *testPKI) serverFiles(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	c := p.issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "turnguard"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	keyDER, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	return p.write(t, "server.pem", "CERTIFICATE", c.Certificate[0]), p.write(t, "server-key.pem", "PRIVATE KEY", keyDER)
}

func (p *testPKI) clientCert(t *testing.T, tmpl *x509.Certificate) tls.Certificate {
	t.Helper()
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return p.issue(t, tmpl)
}

// client is an HTTPS client trusting the CA, presenting certs.
func (p *testPKI) client(maxVersion uint16, certs ...tls.Certificate) *http.Client {
	return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: p.caPool, Certificates: certs, MaxVersion: maxVersion}}}
}

// TestTLS: the endpoint serves TLS 1.2 and later with the certificate
// given (ServerTLS), and a hello over it is negotiated as https.
func TestTLS(t *testing.T) {
	pki := newPKI(t)
	certFile, keyFile := pki.serverFiles(t)
	tlsCfg, err := gateway.ServerTLS(gateway.TLSFiles{Cert: certFile, Key: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	e := startAuth(t, gateway.Config{Handshake: gateway.HandshakeRequired}, tlsCfg)
	e.client = pki.client(0)
	r := e.post(t, tokenAlice, helloFor(uuid(11), "a1", 1100))
	r.wantServerHello(t)
	if r.Result["selected_transport"] != "https" {
		t.Fatalf("selected_transport %v over TLS", r.Result["selected_transport"])
	}
	e.post(t, tokenAlice, sessionStartOf(uuid(11), "a1", 1101)).wantDecision(t, "allow")
	e.post(t, "", sessionStartOf(uuid(11), "a1", 1102)).wantRPCError(t, http.StatusUnauthorized, acs.CodeSessionRefused, acs.ReasonUnauthenticated)

	// TLS 1.1 is refused at the handshake.
	old := pki.client(tls.VersionTLS11)
	if resp, err := old.Post(e.url+"/acs", "application/json", strings.NewReader(`{}`)); err == nil {
		resp.Body.Close()
		t.Fatal("a TLS 1.1 client was served")
	}
	// So is a client that does not trust the server's CA.
	if resp, err := http.Post(e.url+"/acs", "application/json", strings.NewReader(`{}`)); err == nil {
		resp.Body.Close()
		t.Fatal("a client without the CA was served")
	}
}

// TestMTLSCallers: a verified client certificate is mapped to its caller by
// subject, URI SAN or DNS SAN; a certificate of no caller, one from
// another CA, and a token naming another caller than the certificate are
// 401. With only certificate callers, a client without a certificate
// does not get past the TLS handshake.
func TestMTLSCallers(t *testing.T) {
	pki := newPKI(t)
	certFile, keyFile := pki.serverFiles(t)
	ci := pki.clientCert(t, &x509.Certificate{Subject: pkix.Name{CommonName: "ci-runner"}, URIs: []*url.URL{{Scheme: "spiffe", Host: "acme.example", Path: "/ci"}}})
	builder := pki.clientCert(t, &x509.Certificate{Subject: pkix.Name{CommonName: "builder"}, DNSNames: []string{"builder.acme.example"}})
	ops := pki.clientCert(t, &x509.Certificate{Subject: pkix.Name{CommonName: "ops", Organization: []string{"Acme"}}})
	stranger := pki.clientCert(t, &x509.Certificate{Subject: pkix.Name{CommonName: "stranger"}})
	foreign := newPKI(t).clientCert(t, &x509.Certificate{Subject: pkix.Name{CommonName: "ops", Organization: []string{"Acme"}}})

	t.Run("certificates or tokens", func(t *testing.T) {
		tlsCfg, err := gateway.ServerTLS(gateway.TLSFiles{Cert: certFile, Key: keyFile, ClientCA: filepath.Join(pki.dir, "ca.pem")})
		if err != nil || tlsCfg.ClientAuth != tls.VerifyClientCertIfGiven || tlsCfg.MinVersion != tls.VersionTLS12 {
			t.Fatalf("%v %v", tlsCfg, err)
		}
		e := startAuth(t, gateway.Config{Handshake: gateway.HandshakeRequired}, tlsCfg)
		for i, tc := range []struct {
			name   string
			cert   tls.Certificate
			tenant string
			caller string
		}{
			{"URI SAN", ci, "acme", "ci"},
			{"DNS SAN", builder, "other", "builder"},
			{"subject", ops, "acme", "ops"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e.client = pki.client(0, tc.cert)
				sid := uuid(1200 + i)
				e.post(t, "", helloFor(sid, "a1", 1210+i)).wantServerHello(t)
				// The refusal's dead letter names the caller and its tenant.
				e.post(t, "", withAgent(envelope("steps/teleport", sid, uuid(1220+i), `{}`, time.Now()), "a1")).
					wantRPCError(t, http.StatusOK, acs.CodeMethodNotFound, acs.ReasonMethodNotFound)
				if m := e.lastDeadLetter(t, tc.tenant); m.Header.Get(acs.HdrCaller) != tc.caller {
					t.Fatalf("dead letter of %s names caller %q, want %q", tc.tenant, m.Header.Get(acs.HdrCaller), tc.caller)
				}
			})
		}
		e.client = pki.client(0, stranger)
		e.post(t, "", helloFor(uuid(1230), "a1", 1230)).wantRPCError(t, http.StatusUnauthorized, acs.CodeSessionRefused, acs.ReasonUnauthenticated)
		// A token still works beside a certificate of no caller; a token of
		// another caller than the certificate's does not.
		e.post(t, tokenAlice, helloFor(uuid(1231), "a1", 1231)).wantServerHello(t)
		e.client = pki.client(0, ci)
		e.post(t, tokenBob, helloFor(uuid(1232), "a1", 1232)).wantRPCError(t, http.StatusUnauthorized, acs.CodeSessionRefused, acs.ReasonUnauthenticated)
		// No certificate: tokens alone.
		e.client = pki.client(0)
		e.post(t, tokenAlice, helloFor(uuid(1233), "a1", 1233)).wantServerHello(t)
		e.post(t, "", helloFor(uuid(1234), "a1", 1234)).wantRPCError(t, http.StatusUnauthorized, acs.CodeSessionRefused, acs.ReasonUnauthenticated)
		// A certificate from another CA is refused at the handshake.
		if resp, err := pki.client(0, foreign).Post(e.url+"/acs", "application/json", strings.NewReader(`{}`)); err == nil {
			resp.Body.Close()
			t.Fatal("a certificate of another CA was accepted")
		}
	})
	t.Run("certificates only", func(t *testing.T) {
		tlsCfg, err := gateway.ServerTLS(gateway.TLSFiles{Cert: certFile, Key: keyFile, ClientCA: filepath.Join(pki.dir, "ca.pem"), RequireClientCert: true})
		if err != nil || tlsCfg.ClientAuth != tls.RequireAndVerifyClientCert {
			t.Fatalf("%v %v", tlsCfg, err)
		}
		e := startAuth(t, gateway.Config{Handshake: gateway.HandshakeRequired}, tlsCfg)
		e.client = pki.client(0, ops)
		e.post(t, "", helloFor(uuid(1240), "a1", 1240)).wantServerHello(t)
		if resp, err := pki.client(0).Post(e.url+"/acs", "application/json", strings.NewReader(`{}`)); err == nil {
			resp.Body.Close()
			t.Fatal("a client without a certificate was served")
		}
	})
}
