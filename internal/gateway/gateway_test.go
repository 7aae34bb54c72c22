package gateway_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/core/receipt"
	"github.com/turnguard/turnguard/internal/gateway"
	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/internal/testkit/acstest"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
	rulepack "github.com/turnguard/turnguard/rules"
	"github.com/turnguard/turnguard/schema"
)

// env is a running Guardian: NATS, a processor, and the HTTP endpoint.
type env struct {
	srv      *server.Server
	url      string
	keys     *acs.Keyring
	receipts *receipt.Signer
	v        *schema.Validator
	stop     func()
	gw       *gateway.Gateway
}

func start(t *testing.T, timeout time.Duration) *env {
	t.Helper()
	return startWith(t, timeout, gateway.HandshakeOptional)
}

func startWith(t *testing.T, timeout time.Duration, handshake gateway.HandshakePolicy) *env {
	t.Helper()
	return startConfig(t, gateway.Config{Timeout: timeout, Handshake: handshake})
}

// startConfig runs a Guardian whose endpoint has cfg, with keys k1 (the
// default) and k2 required, the default skew window and receipts.
func startConfig(t testing.TB, cfg gateway.Config) *env {
	t.Helper()
	return startConfigLog(t, cfg, zerolog.Nop())
}

// startConfigLog is startConfig with the endpoint logging to log.
func startConfigLog(t testing.TB, cfg gateway.Config, log zerolog.Logger) *env {
	t.Helper()
	return startEnv(t, cfg, log)
}

// startEnv is startConfigLog with the processor's configuration changed
// by opts.
func startEnv(t testing.TB, cfg gateway.Config, log zerolog.Logger, opts ...func(*stream.Config)) *env {
	t.Helper()
	srv := natstest.RunServer(t)
	v, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	kr, err := acs.NewKeyring(map[string][]byte{"k1": bytes.Repeat([]byte{1}, 32), "k2": bytes.Repeat([]byte{2}, 32)}, "k1", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer := receipt.NewSigner(priv)
	stop := runProcessor(t, srv, v, guardian.Config{Keys: kr, RequireSignatures: true, SkewWindow: guardian.DefaultSkewWindow, Receipts: signer}, opts...)
	cfg.Keys, cfg.RequireSignatures, cfg.SkewWindow, cfg.Receipts = kr, true, guardian.DefaultSkewWindow, signer
	if cfg.StateKey == nil {
		cfg.StateKey = testStateKey
	}
	g, err := gateway.New(context.Background(), natstest.Connect(t, srv), v, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(g.Handler())
	t.Cleanup(hs.Close)
	return &env{srv: srv, url: hs.URL, keys: kr, receipts: signer, v: v, stop: stop, gw: g}
}

// runProcessor runs a processor as serve does with --http (its topology
// has the handshake bucket, TTL 24h unless opts change it) and waits until
// it is ready: its assets exist.
func runProcessor(t testing.TB, srv *server.Server, v *schema.Validator, cfg guardian.Config, opts ...func(*stream.Config)) func() {
	t.Helper()
	rs, err := rulepack.DefaultSet()
	if err != nil {
		t.Fatal(err)
	}
	pcfg := stream.DefaultConfig()
	pcfg.Topology.Partitions = 4
	// The gateways' key: the processor verifies the callers they attest.
	pcfg.StateKey = testStateKey
	pcfg.Topology.HandshakeTTL = 24 * time.Hour
	for _, o := range opts {
		o(&pcfg)
	}
	p, err := stream.New(natstest.Connect(t, srv), guardian.New(v, cfg), policy.NewSource(rs), pcfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.Run(ctx)
	}()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	// A loaded CI machine may take a while to create the assets.
	testwait.CheckFor(t, time.Minute, 10*time.Millisecond, p.Ready)
	return stop
}

// envelope builds a request envelope with the current time.
func envelope(method, session, request string, payload string, at time.Time) map[string]any {
	var p any
	_ = json.Unmarshal([]byte(payload), &p)
	return map[string]any{"jsonrpc": "2.0", "method": method, "id": request, "params": map[string]any{
		"acs_version": "0.1.0", "request_id": request, "timestamp": at.UTC().Format(time.RFC3339Nano),
		"metadata": map[string]any{"agent_id": "conformance", "session_id": session}, "payload": p}}
}

func withTurn(doc map[string]any, turnID string) map[string]any {
	doc["params"].(map[string]any)["metadata"].(map[string]any)["turn_id"] = turnID
	return doc
}

// signed signs an envelope with the session key of k1.
func (e *env) signed(t *testing.T, doc map[string]any) map[string]any {
	t.Helper()
	return e.signedWith(t, "k1", doc)
}

// signedWith signs an envelope with the session key of keyID.
func (e *env) signedWith(t *testing.T, keyID string, doc map[string]any) map[string]any {
	t.Helper()
	return acstest.Signed(t, e.keys, keyID, doc)
}

// post sends a body and returns the HTTP status, the JSON-RPC reply and
// the receipt header.
func (e *env) post(t *testing.T, body []byte) (int, []byte, string) {
	t.Helper()
	code, out, h := e.postH(t, body)
	return code, out, h.Get("Acs-Receipt")
}

// postH posts body and returns the answer with its headers.
func (e *env) postH(t *testing.T, body []byte) (int, []byte, http.Header) {
	t.Helper()
	resp, err := http.Post(e.url+"/acs", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out, resp.Header
}

type reply struct {
	ID     json.RawMessage `json:"id"`
	Result map[string]any  `json:"result"`
	Error  *struct {
		Code int            `json:"code"`
		Data map[string]any `json:"data"`
	} `json:"error"`
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func uuid(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

// TestConformance is the JSON-RPC conformance table over HTTP: handshake,
// ping, batches, each ACS error code, signatures required, missing and bad,
// replay and skew. Every reply is HTTP 200 and a valid response envelope.
func TestConformance(t *testing.T) {
	e := start(t, 10*time.Second)
	now := time.Now()
	sid := uuid(1)
	session := e.signed(t, envelope("steps/sessionStart", sid, uuid(101), `{}`, now))
	hello := func(versions string) map[string]any {
		return envelope("handshake/hello", sid, uuid(100), `{"acs_versions_supported":`+versions+`,"methods_implemented":["steps/sessionStart","steps/turnStart","steps/toolCallRequest","system/ping","protocols/MCP/tools/call"],"transports_supported":["http"],"provenance_producer":"deterministic","profiles_supported":["acs-core"]}`, now)
	}
	tests := []struct {
		name  string
		body  []byte
		check func(t *testing.T, r reply, raw []byte)
	}{
		{"handshake/hello", mustJSON(e.signed(t, hello(`["0.1.0"]`))), func(t *testing.T, r reply, raw []byte) {
			sh := r.Result
			if sh["negotiated_version"] != "0.1.0" || fmt.Sprint(sh["methods_evaluated"]) != "[steps/sessionStart steps/turnStart steps/toolCallRequest system/ping]" ||
				sh["selected_transport"] != "http" || fmt.Sprint(sh["timeout_config"]) != "map[default_ms:11000]" ||
				fmt.Sprint(sh["signature_algorithms_supported"]) != "[HMAC-SHA256]" || sh["on_decision_failure"] != "deny" ||
				sh["skew_window_ms"] != float64(300000) || fmt.Sprint(sh["profiles_accepted"]) != "[acs-core]" {
				t.Fatalf("ServerHello %s", raw)
			}
		}},
		{"handshake with no common version: -32001", mustJSON(e.signed(t, hello(`["1.2.0"]`))), wantError(acs.CodeUnsupportedVersion, func(t *testing.T, r reply) {
			if fmt.Sprint(r.Error.Data["supported_versions"]) != "[0.1.0]" {
				t.Fatalf("data %v", r.Error.Data)
			}
		})},
		{"handshake with an invalid ClientHello: -32602", mustJSON(e.signed(t, envelope("handshake/hello", sid, uuid(99), `{"acs_versions_supported":["0.1.0"]}`, now))), wantError(acs.CodeInvalidParams, nil)},
		{"system/ping: always allow, no signature needed", mustJSON(envelope("system/ping", sid, uuid(98), `{"echo":"are you there"}`, now)), func(t *testing.T, r reply, raw []byte) {
			p, _ := r.Result["payload"].(map[string]any)
			if r.Result["decision"] != "allow" || p["status"] != "ok" || p["echo"] != "are you there" || p["server_timestamp"] == nil || r.Result["chain_hash"] != nil {
				t.Fatalf("ping %s", raw)
			}
		}},
		{"a batch: each item in order", mustJSON([]any{session, e.signed(t, withTurn(envelope("steps/turnStart", sid, uuid(102), `{"turn_id":"`+uuid(102)+`","triggered_by":"user_message"}`, now), uuid(102)))}), nil},
		{"an empty batch: -32600", []byte(`[]`), wantError(acs.CodeInvalidRequest, nil)},
		{"not JSON: -32700 with a null id", []byte(`{"jsonrpc":`), wantError(acs.CodeParseError, nil)},
		{"oversize: -32600 with a null id", bytes.Repeat([]byte(" "), gateway.DefaultMaxBodyBytes+1), wantError(acs.CodeInvalidRequest, func(t *testing.T, r reply) {
			if string(r.ID) != "null" || r.Error.Data["reason"] != "envelope_too_large" {
				t.Fatalf("id %s, data %v", r.ID, r.Error.Data)
			}
		})},
		{"an unknown method: -32601", mustJSON(e.signed(t, envelope("steps/teleport", sid, uuid(97), `{}`, now))), wantError(acs.CodeMethodNotFound, func(t *testing.T, r reply) {
			if r.Error.Data["method"] != "steps/teleport" {
				t.Fatalf("data %v", r.Error.Data)
			}
		})},
		{"a method ACS defines but turnguard does not evaluate: -32003", mustJSON(e.signed(t, envelope("protocols/MCP/tools/call", sid, uuid(96), `{}`, now))), wantError(acs.CodeCapabilityNotNegotiated, nil)},
		{"signature required but missing: -32004", mustJSON(envelope("steps/userMessage", uuid(2), uuid(201), `{"content":[{"type":"text","value":"hi"}]}`, now)), wantError(acs.CodeSignatureInvalid, nil)},
		{"signature that does not match: -32004", mustJSON(func() map[string]any {
			d := e.signed(t, envelope("steps/userMessage", uuid(3), uuid(301), `{"content":[{"type":"text","value":"hi"}]}`, now))
			d["params"].(map[string]any)["payload"] = map[string]any{"content": []any{map[string]any{"type": "text", "value": "changed"}}}
			return d
		}()), wantError(acs.CodeSignatureInvalid, nil)},
		{"the same request again: -32005", nil, wantError(acs.CodeReplayDetected, nil)},
		{"timestamp outside the skew window: -32006", mustJSON(e.signed(t, envelope("steps/sessionStart", uuid(4), uuid(401), `{}`, now.Add(-time.Hour)))), wantError(acs.CodeTimestampOutOfWindow, func(t *testing.T, r reply) {
			if r.Error.Data["skew_window_ms"] != float64(300000) {
				t.Fatalf("data %v", r.Error.Data)
			}
		})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.body
			if body == nil {
				body = mustJSON(session) // decided by the batch case above
			}
			status, raw, _ := e.post(t, body)
			if status != http.StatusOK {
				t.Fatalf("HTTP %d", status)
			}
			var replies []reply
			if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("[")) {
				if err := json.Unmarshal(raw, &replies); err != nil {
					t.Fatal(err)
				}
				e.validBatch(t, raw)
				if len(replies) != 2 || replies[0].Result["decision"] != "allow" || replies[1].Result["decision"] != "allow" ||
					replies[0].Result["request_id"] != uuid(101) || replies[1].Result["request_id"] != uuid(102) {
					t.Fatalf("batch replies %s", raw)
				}
				return
			}
			var r reply
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatalf("reply is not JSON: %s", raw)
			}
			e.valid(t, raw)
			if tc.check != nil {
				tc.check(t, r, raw)
			}
		})
	}
}

func wantError(code acs.Code, more func(t *testing.T, r reply)) func(t *testing.T, r reply, raw []byte) {
	return func(t *testing.T, r reply, raw []byte) {
		t.Helper()
		if r.Error == nil || r.Error.Code != int(code) {
			t.Fatalf("want error %d, got %s", code, raw)
		}
		if more != nil {
			more(t, r)
		}
	}
}

func (e *env) valid(t *testing.T, raw []byte) {
	t.Helper()
	doc, err := schema.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.v.ValidateResponse(doc); err != nil {
		t.Fatalf("reply is not a valid ACS response envelope: %v\n%s", err, raw)
	}
}

func (e *env) validBatch(t *testing.T, raw []byte) {
	t.Helper()
	var items []json.RawMessage
	_ = json.Unmarshal(raw, &items)
	for _, it := range items {
		e.valid(t, it)
	}
}

// A decision over HTTP is signed with the session key, carries the chain
// head, and comes with an Ed25519 receipt that GET /receipt-key verifies;
// the default rules deny the taint example's shell call.
func TestSignedDecisionsAndReceipts(t *testing.T) {
	e := start(t, 10*time.Second)
	sid := uuid(9)
	resp, err := http.Get(e.url + "/receipt-key")
	if err != nil {
		t.Fatal(err)
	}
	pemBytes, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	pub, err := receipt.ParsePublicPEM(pemBytes)
	if err != nil || resp.Header.Get("Acs-Receipt-Key") != e.receipts.KeyID {
		t.Fatalf("GET /receipt-key: %v %q", err, resp.Header.Get("Acs-Receipt-Key"))
	}
	var last reply
	for i, ex := range examples.Taint(sid) {
		var doc map[string]any
		_ = json.Unmarshal(ex.Data, &doc)
		params := doc["params"].(map[string]any)
		params["timestamp"] = time.Now().UTC().Format(time.RFC3339Nano)
		_, raw, h := e.postH(t, mustJSON(e.signed(t, doc)))
		e.valid(t, raw)
		// The receipt is bound to the session's decision subject and the
		// envelope's stream sequence, which the answer names.
		seq, err := strconv.ParseUint(h.Get(acs.HdrStreamSeq), 10, 64)
		if err != nil {
			t.Fatalf("step %d: Acs-Stream-Seq %q", i+1, h.Get(acs.HdrStreamSeq))
		}
		if err := receipt.Verify(pub, receipt.Decision("default", sid, seq), raw, h.Get(acs.HdrReceipt)); err != nil {
			t.Fatalf("step %d: receipt: %v", i+1, err)
		}
		if receipt.Verify(pub, receipt.Decision("default", sid, seq+1), raw, h.Get(acs.HdrReceipt)) == nil {
			t.Fatalf("step %d: the receipt verifies for another sequence", i+1)
		}
		var r reply
		_ = json.Unmarshal(raw, &r)
		if r.Error != nil || r.Result["chain_hash"] == nil {
			t.Fatalf("step %d: %s", i+1, raw)
		}
		var full acs.Response
		_ = json.Unmarshal(raw, &full)
		var rdoc map[string]any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		_ = dec.Decode(&rdoc)
		input, _ := acs.SigningInput(rdoc)
		if err := e.keys.Verify(full.Result.Signature, sid, input); err != nil {
			t.Fatalf("step %d: response signature: %v", i+1, err)
		}
		last = r
	}
	if last.Result["decision"] != "deny" || !strings.Contains(fmt.Sprint(last.Result["reason_codes"]), "untrusted_into_consequential") {
		t.Fatalf("the shell call: %v", last.Result)
	}
}

// With the processor down, a call ends in time with a JSON-RPC error, so
// that the agent applies its on_decision_failure; the envelope is decided
// once the processor is back.
func TestDecisionTimeout(t *testing.T) {
	e := start(t, 300*time.Millisecond)
	e.stop()
	doc := e.signed(t, envelope("steps/sessionStart", uuid(5), uuid(501), `{}`, time.Now()))
	started := time.Now()
	_, raw, _ := e.post(t, mustJSON(doc))
	var r reply
	_ = json.Unmarshal(raw, &r)
	if r.Error == nil || r.Error.Code != int(acs.CodeInternalError) || r.Error.Data["reason"] != "decision_timeout" || time.Since(started) > 2*time.Second {
		t.Fatalf("after %s: %s", time.Since(started), raw)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(e.url + path)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %v %v", path, resp, err)
		}
		resp.Body.Close()
	}
}
