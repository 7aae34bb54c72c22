package integration

// TestConformance pins POST /acs clause by clause, against the processor
// binary, in two deployments: "signed" (--keys with default, k1 and a
// session_key, --require-signatures) and "unsigned" (no --keys). Both run
// with --skew-window 5m. The README's "ACS conformance" table says, per
// clause, what turnguard does and where it deliberately differs from the
// ACS references.

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/turnguard/turnguard/internal/core/receipt"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
)

// expect is what a row's response must be.
type expect struct {
	// code is the JSON-RPC error code; 0 wants a result.
	code   int
	reason string // error.data.reason, when set
	method string // error.data.method, when set
	// decision wants an AcsResult with this disposition; hello wants a
	// ServerHello instead.
	decision    string
	reasonCodes []string
	hello       bool
	// noChain: a refusal answered with a decision is not on the chain.
	noChain bool
	// idNull wants id null (the request's id could not be read); anyID
	// skips the id check.
	idNull, anyID bool
	// items are the expectations of a batch's responses, in order.
	items []expect
}

// conformanceRow is one clause: what to send, what must come back, and
// anything further to check. The session is fresh, its handshake not done.
type conformanceRow struct {
	name string
	// only restricts the row to one mode: "signed" or "unsigned".
	only string
	// prep runs first: handshakes, earlier steps.
	prep func(t *testing.T, s *acsSession)
	// send sends the request and returns its response; s.last must then
	// hold what the response is to echo and be signed with (s.do and
	// s.send set it). A batch returns its items through batch.
	send  func(t *testing.T, s *acsSession) reply
	batch func(t *testing.T, s *acsSession) ([]reply, []sent)
	want  expect
	// check adds row-specific assertions.
	check func(t *testing.T, s *acsSession, r reply)
}

func sessionStart(s *acsSession) msg {
	return s.env("steps/sessionStart", obj(`{"platform_context":{"source":"conformance"}}`))
}

func userMessage(s *acsSession, text string) msg {
	return s.env("steps/userMessage", map[string]any{"content": []any{map[string]any{"type": "text", "value": text}}})
}

// started is a session with its handshake and sessionStart done.
func started(t *testing.T, s *acsSession) {
	t.Helper()
	s.handshake(t)
	s.decide(t, sessionStart(s), "allow")
}

func conformanceRows() []conformanceRow {
	return []conformanceRow{
		// --- §4 handshake ---------------------------------------------
		{
			name: "§4 handshake: ClientHello → ServerHello (version, methods ∩ in client order, transport, posture, skew, algorithms, profiles)",
			send: func(t *testing.T, s *acsSession) reply {
				ch := clientHello("system/ping", "steps/toolCallRequest", "protocols/MCP/tools/call", "steps/sessionStart",
					"steps/toolCallRequest", "handshake/hello", "agbom/snapshot", "trace/reserved", "steps/userMessage", "system/ping")
				ch["transports_supported"] = strs("http", "stdio")
				return s.do(t, s.env("handshake/hello", ch))
			},
			want: expect{hello: true},
			check: func(t *testing.T, s *acsSession, r reply) {
				if got, want := r.strList("result.methods_evaluated"), []string{"system/ping", "steps/toolCallRequest", "steps/sessionStart", "agbom/snapshot", "steps/userMessage"}; !slices.Equal(got, want) {
					t.Errorf("methods_evaluated %q, want %q (client ∩ evaluated, deduplicated, client's order)", got, want)
				}
				if r.str("result.selected_transport") != "http" {
					t.Errorf("selected_transport %q, want http", r.str("result.selected_transport"))
				}
				if r.str("result.on_decision_failure") != "deny" {
					t.Errorf("on_decision_failure %q, want deny (the default)", r.str("result.on_decision_failure"))
				}
				if r.int("result.skew_window_ms") != 300000 {
					t.Errorf("skew_window_ms %v, want 300000 (advertised whenever the window is > 0)", r.at("result.skew_window_ms"))
				}
				if got := r.strList("result.profiles_accepted"); !slices.Equal(got, []string{"acs-core"}) {
					t.Errorf("profiles_accepted %q, want [acs-core]", got)
				}
				algs := r.strList("result.signature_algorithms_supported")
				if s.c.keys != nil && !slices.Equal(algs, []string{"HMAC-SHA256"}) {
					t.Errorf("with --keys signature_algorithms_supported %q, want [HMAC-SHA256]", algs)
				}
				if s.c.keys == nil && len(algs) > 0 {
					t.Errorf("without --keys signature_algorithms_supported %q, want none", algs)
				}
			},
		},
		{
			name: "§4 handshake: timeout_config.default_ms = --decision-timeout + 1 s = 6000 (≤ 10000)",
			send: func(t *testing.T, s *acsSession) reply {
				return s.do(t, s.env("handshake/hello", clientHello("steps/toolCallRequest")))
			},
			want: expect{hello: true},
			check: func(t *testing.T, s *acsSession, r reply) {
				if ms := r.int("result.timeout_config.default_ms"); ms != 6000 {
					t.Errorf("timeout_config.default_ms %v, want 6000", r.at("result.timeout_config.default_ms"))
				}
			},
		},
		{
			name: "§4 handshake: https-only client → selected_transport https",
			send: func(t *testing.T, s *acsSession) reply {
				ch := clientHello("steps/toolCallRequest")
				ch["transports_supported"] = strs("https")
				return s.do(t, s.env("handshake/hello", ch))
			},
			want: expect{hello: true},
			check: func(t *testing.T, s *acsSession, r reply) {
				if r.str("result.selected_transport") != "https" {
					t.Errorf("selected_transport %q, want https", r.str("result.selected_transport"))
				}
			},
		},
		{
			name: "§4 handshake: stdio-only client → -32000 transport_unsupported",
			send: func(t *testing.T, s *acsSession) reply {
				ch := clientHello("steps/toolCallRequest")
				ch["transports_supported"] = strs("stdio")
				return s.do(t, s.env("handshake/hello", ch))
			},
			want: expect{code: -32000, reason: "transport_unsupported"},
		},
		{
			name: "§4 handshake: no common major version [99.0.0] → -32001 with supported_versions",
			send: func(t *testing.T, s *acsSession) reply {
				ch := clientHello("steps/toolCallRequest")
				ch["acs_versions_supported"] = strs("99.0.0")
				return s.do(t, s.env("handshake/hello", ch))
			},
			want: expect{code: -32001},
			check: func(t *testing.T, s *acsSession, r reply) {
				if got := r.strList("error.data.supported_versions"); !slices.Equal(got, []string{"0.1.0"}) {
					t.Errorf("data.supported_versions %q, want [0.1.0]", got)
				}
			},
		},
		{
			name: "§4 handshake: invalid ClientHello (no transports_supported) → -32602",
			send: func(t *testing.T, s *acsSession) reply {
				ch := clientHello("steps/toolCallRequest")
				delete(ch, "transports_supported")
				return s.do(t, s.env("handshake/hello", ch))
			},
			want: expect{code: -32602},
		},
		{
			name: "§4 handshake: unsigned hello under --require-signatures → -32004",
			only: "signed",
			send: func(t *testing.T, s *acsSession) reply {
				return s.send(t, s.env("handshake/hello", clientHello(evaluatedMethods...)))
			},
			want: expect{code: -32004},
		},
		{
			name: "§4 handshake: badly signed hello (k1) → -32004, signed with k1",
			only: "signed",
			send: func(t *testing.T, s *acsSession) reply {
				m := s.signAs(s.env("handshake/hello", clientHello(evaluatedMethods...)), "k1")
				m.params()["payload"].(map[string]any)["provenance_producer"] = "deterministic" // after signing
				return s.send(t, m)
			},
			want: expect{code: -32004},
		},
		{
			name: "§4 handshake: second identical ClientHello → the same ServerHello",
			prep: func(t *testing.T, s *acsSession) {
				s.hello(t, clientHello("steps/sessionStart", "steps/toolCallRequest"))
			},
			send: func(t *testing.T, s *acsSession) reply {
				return s.do(t, s.env("handshake/hello", clientHello("steps/sessionStart", "steps/toolCallRequest")))
			},
			want: expect{hello: true},
			check: func(t *testing.T, s *acsSession, r reply) {
				second, _ := r.at("result").(map[string]any)
				if !equalJSON(withoutSignature(second), withoutSignature(s.helloResult)) {
					t.Errorf("second ServerHello %v, want the first %v", second, s.helloResult)
				}
			},
		},
		{
			name: "§4 handshake: a different ClientHello for the session → -32000 already_negotiated",
			prep: func(t *testing.T, s *acsSession) {
				s.hello(t, clientHello("steps/sessionStart", "steps/toolCallRequest"))
			},
			send: func(t *testing.T, s *acsSession) reply {
				return s.do(t, s.env("handshake/hello", clientHello("steps/sessionStart", "steps/toolCallRequest", "steps/userMessage")))
			},
			want: expect{code: -32000, reason: "already_negotiated"},
		},
		{
			name: "§4 handshake required: a step in a session without handshake → -32003 handshake_required",
			send: func(t *testing.T, s *acsSession) reply { return s.do(t, sessionStart(s)) },
			want: expect{code: -32003, reason: "handshake_required"},
		},
		{
			name: "§4 handshake required: a method not in methods_evaluated → -32003 method_not_negotiated",
			prep: func(t *testing.T, s *acsSession) {
				s.hello(t, clientHello("steps/sessionStart", "steps/userMessage"))
				s.decide(t, sessionStart(s), "allow")
			},
			send: func(t *testing.T, s *acsSession) reply {
				return s.do(t, s.env("steps/toolCallRequest", obj(`{"tool":{"name":"Read"},"arguments":{}}`)))
			},
			want: expect{code: -32003, reason: "method_not_negotiated", method: "steps/toolCallRequest"},
		},
		// --- §13 ping -------------------------------------------------
		{
			name: "§13 system/ping without handshake → allow {status ok, echo, server_timestamp}",
			send: func(t *testing.T, s *acsSession) reply {
				return s.do(t, s.env("system/ping", obj(`{"echo":"are you there"}`)))
			},
			want: expect{decision: "allow"},
			check: func(t *testing.T, s *acsSession, r reply) {
				if r.str("result.payload.status") != "ok" || r.str("result.payload.echo") != "are you there" {
					t.Errorf("ping payload %v, want status ok and the echo", r.at("result.payload"))
				}
				ts, err := time.Parse(time.RFC3339Nano, r.str("result.payload.server_timestamp"))
				if err != nil || time.Since(ts).Abs() > 5*time.Minute {
					t.Errorf("server_timestamp %q is not a time near now (%v)", r.str("result.payload.server_timestamp"), err)
				}
			},
		},
		// --- §17 error codes --------------------------------------------
		{
			name: "§17 unknown method foo/bar → -32601 with data.method",
			prep: func(t *testing.T, s *acsSession) { s.handshake(t) },
			send: func(t *testing.T, s *acsSession) reply { return s.do(t, s.env("foo/bar", obj(`{}`))) },
			want: expect{code: -32601, method: "foo/bar"},
		},
		{
			name: "§17 unknown hook steps/notAHook → -32601 with data.method",
			prep: func(t *testing.T, s *acsSession) { s.handshake(t) },
			send: func(t *testing.T, s *acsSession) reply { return s.do(t, s.env("steps/notAHook", obj(`{}`))) },
			want: expect{code: -32601, method: "steps/notAHook"},
		},
		{
			name: "§17 ACS method turnguard does not evaluate (protocols/MCP/tools/call) → -32003",
			prep: func(t *testing.T, s *acsSession) {
				s.hello(t, clientHello(append([]string{"protocols/MCP/tools/call"}, evaluatedMethods...)...))
			},
			send: func(t *testing.T, s *acsSession) reply {
				return s.do(t, s.env("protocols/MCP/tools/call", obj(`{"name":"fetch","arguments":{"url":"https://example.com"}}`)))
			},
			want: expect{code: -32003, method: "protocols/MCP/tools/call"},
		},
		{
			name: "§17 acs_version 1.0.0 → -32001 with supported_versions",
			prep: func(t *testing.T, s *acsSession) { s.handshake(t) },
			send: func(t *testing.T, s *acsSession) reply {
				return s.do(t, sessionStart(s).withParams("acs_version", "1.0.0"))
			},
			want: expect{code: -32001},
			check: func(t *testing.T, s *acsSession, r reply) {
				if got := r.strList("error.data.supported_versions"); !slices.Equal(got, []string{"0.1.0"}) {
					t.Errorf("data.supported_versions %q, want [0.1.0]", got)
				}
			},
		},
		{
			name: "§17 payload failing its hook schema → deny payload_invalid (turnguard: a decision, not -32602); k1 request → k1 response",
			prep: func(t *testing.T, s *acsSession) {
				// The whole session with k1: a negotiated session is
				// bound to its hello's key.
				s.keyID = "k1"
				started(t, s)
			},
			send: func(t *testing.T, s *acsSession) reply {
				// toolCallRequest requires arguments.
				return s.do(t, s.env("steps/toolCallRequest", obj(`{"tool":{"name":"Bash"}}`)))
			},
			want: expect{decision: "deny", reasonCodes: []string{"payload_invalid"}, noChain: true},
		},
		{
			name: "§17 not JSON → -32700, id null",
			send: func(t *testing.T, s *acsSession) reply {
				s.last = sent{}
				return s.c.ep.post(t, []byte(`{"jsonrpc":"2.0","method":"steps/sessionStart","id":`))
			},
			want: expect{code: -32700, idNull: true},
		},
		{
			name: "§17 not I-JSON (duplicate member name) → -32700",
			prep: func(t *testing.T, s *acsSession) { s.handshake(t) },
			send: func(t *testing.T, s *acsSession) reply {
				m := s.sign(sessionStart(s))
				s.last = s.c.expectOf(m) // the session is readable
				body := append([]byte(`{"jsonrpc":"2.0",`), m.bytes()[1:]...)
				return s.c.ep.post(t, body)
			},
			// Whether the id of a body that is not I-JSON counts as
			// readable is not pinned.
			want: expect{code: -32700, anyID: true},
		},
		{
			name: "§17 not an object (a JSON string) → -32600, id null",
			send: func(t *testing.T, s *acsSession) reply {
				s.last = sent{}
				return s.c.ep.post(t, []byte(`"steps/sessionStart"`))
			},
			want: expect{code: -32600, idNull: true},
		},
		{
			name: "§2 request_id not a UUID → -32600",
			prep: func(t *testing.T, s *acsSession) { s.handshake(t) },
			send: func(t *testing.T, s *acsSession) reply {
				return s.do(t, sessionStart(s).withParams("request_id", "req-1"))
			},
			want: expect{code: -32600},
		},
		{
			name: "§2 metadata.session_id missing → -32600",
			send: func(t *testing.T, s *acsSession) reply {
				m := sessionStart(s)
				delete(m.meta(), "session_id")
				return s.do(t, m)
			},
			want: expect{code: -32600},
		},
		// --- §3 batches -------------------------------------------------
		{
			name: "§3 batch: each item answered in order, as an array",
			prep: func(t *testing.T, s *acsSession) { s.handshake(t) },
			batch: func(t *testing.T, s *acsSession) ([]reply, []sent) {
				ping := s.env("system/ping", obj(`{}`))
				ping["id"] = json.Number("7") // a numeric id, echoed as a number
				ping = s.sign(ping)
				start := s.sign(sessionStart(s))
				unknown := s.sign(s.env("foo/bar", obj(`{}`)))
				var ss []sent
				var items []json.RawMessage
				for _, m := range []msg{ping, start, unknown} {
					ss = append(ss, s.c.expectOf(m))
					items = append(items, m.bytes())
				}
				body, err := json.Marshal(items)
				if err != nil {
					t.Fatal(err)
				}
				return s.c.ep.postBatch(t, body), ss
			},
			want: expect{items: []expect{{decision: "allow"}, {decision: "allow"}, {code: -32601, method: "foo/bar"}}},
		},
		{
			name: "§3 empty batch [] → -32600, id null",
			send: func(t *testing.T, s *acsSession) reply {
				s.last = sent{}
				return s.c.ep.post(t, []byte(`[]`))
			},
			want: expect{code: -32600, idNull: true},
		},
		// --- §10 signatures ---------------------------------------------
		{
			name: "§10 request without signature under --require-signatures → -32004",
			only: "signed",
			prep: func(t *testing.T, s *acsSession) { s.handshake(t) },
			send: func(t *testing.T, s *acsSession) reply { return s.send(t, sessionStart(s)) },
			want: expect{code: -32004},
		},
		{
			name: "§10 bad signature value (k1) → -32004, signed with k1",
			only: "signed",
			prep: func(t *testing.T, s *acsSession) { s.handshake(t) },
			send: func(t *testing.T, s *acsSession) reply {
				m := s.signAs(sessionStart(s), "k1")
				sig := m.params()["signature"].(map[string]any)
				sig["value"] = hmacValue([]byte("not the key"), []byte("not the input"))
				return s.send(t, m)
			},
			want: expect{code: -32004},
		},
		{
			name: "§10 method changed after signing → -32004",
			only: "signed",
			prep: func(t *testing.T, s *acsSession) { started(t, s) },
			send: func(t *testing.T, s *acsSession) reply {
				m := s.sign(userMessage(s, "hello"))
				m["method"] = "steps/agentResponse" // negotiated too, same payload shape
				return s.send(t, m)
			},
			want: expect{code: -32004},
		},
		{
			name: "§10 session_id changed after signing → -32004, signed for the session the request names",
			only: "signed",
			prep: func(t *testing.T, s *acsSession) { started(t, s) },
			send: func(t *testing.T, s *acsSession) reply {
				other := s.c.newSession()
				other.handshake(t)
				m := s.sign(sessionStart(s))
				m.meta()["session_id"] = other.id
				return s.send(t, m)
			},
			want: expect{code: -32004},
		},
		{
			name: "§10 unknown key_id → -32004, signed with the default key",
			only: "signed",
			prep: func(t *testing.T, s *acsSession) { s.handshake(t) },
			send: func(t *testing.T, s *acsSession) reply {
				return s.send(t, signWith(sessionStart(s), "k9", secret32("k9")))
			},
			want: expect{code: -32004},
		},
		{
			name: "§10 k1 request → k1 response on a decision",
			only: "signed",
			prep: func(t *testing.T, s *acsSession) {
				s.keyID = "k1"
				s.handshake(t)
			},
			send: func(t *testing.T, s *acsSession) reply { return s.do(t, sessionStart(s)) },
			want: expect{decision: "allow"},
		},
		{
			name: "§4 a step signed with another key than the hello's → -32004 key_not_bound (the Go reference's binding)",
			only: "signed",
			prep: func(t *testing.T, s *acsSession) { s.handshake(t) },
			send: func(t *testing.T, s *acsSession) reply { return s.send(t, s.signAs(sessionStart(s), "k1")) },
			want: expect{code: -32004, reason: "key_not_bound"},
		},
		{
			name: "§4 a step from another agent than the hello's → -32000 agent_id_not_bound",
			prep: func(t *testing.T, s *acsSession) { s.handshake(t) },
			send: func(t *testing.T, s *acsSession) reply {
				return s.do(t, sessionStart(s).withMeta("agent_id", "someone-else"))
			},
			want: expect{code: -32000, reason: "agent_id_not_bound"},
		},
		{
			name: "§10 key_id = session id (session_key) → verified; responses signed with key_id = session id",
			only: "signed",
			prep: func(t *testing.T, s *acsSession) {
				s.keyID = s.id
				s.handshake(t)
				if sig := responseSignature(map[string]any{"result": s.helloResult}); sig == nil || sig["key_id"] != s.id {
					t.Errorf("ServerHello signed with %v, want key_id = the session id", sig)
				}
			},
			send: func(t *testing.T, s *acsSession) reply { return s.do(t, sessionStart(s)) },
			want: expect{decision: "allow"},
		},
		// --- §12 replay and skew ----------------------------------------
		{
			name: "§12 replayed request_id → -32005 request_replayed",
			prep: func(t *testing.T, s *acsSession) { started(t, s) },
			send: func(t *testing.T, s *acsSession) reply {
				return s.c.ep.post(t, s.lastBody) // the sessionStart again, byte for byte
			},
			want: expect{code: -32005, reason: "request_replayed"},
		},
		{
			name: "§12 replayed nonce under another request_id → -32005 nonce_replayed",
			prep: func(t *testing.T, s *acsSession) {
				started(t, s)
				s.decide(t, userMessage(s, "first").withParams("nonce", "6f1c2a9e4b7d4e8a9c6f2d5e8a1b3c70"), "allow")
			},
			send: func(t *testing.T, s *acsSession) reply {
				return s.do(t, userMessage(s, "second").withParams("nonce", "6f1c2a9e4b7d4e8a9c6f2d5e8a1b3c70"))
			},
			want: expect{code: -32005, reason: "nonce_replayed"},
		},
		{
			name: "§12 skew: timestamp 1 h in the past → -32006 with skew_window_ms 300000",
			prep: func(t *testing.T, s *acsSession) { s.handshake(t) },
			send: func(t *testing.T, s *acsSession) reply {
				return s.do(t, sessionStart(s).withParams("timestamp", nowStamp(-time.Hour)))
			},
			want:  expect{code: -32006},
			check: checkSkewData,
		},
		{
			name: "§12 skew: timestamp 1 h in the future → -32006 with skew_window_ms 300000",
			prep: func(t *testing.T, s *acsSession) { s.handshake(t) },
			send: func(t *testing.T, s *acsSession) reply {
				return s.do(t, sessionStart(s).withParams("timestamp", nowStamp(time.Hour)))
			},
			want:  expect{code: -32006},
			check: checkSkewData,
		},
		{
			name: "§12 skew: an unsigned request 1 h in the future → -32006 too",
			only: "unsigned",
			prep: func(t *testing.T, s *acsSession) { started(t, s) },
			send: func(t *testing.T, s *acsSession) reply {
				return s.send(t, userMessage(s, "late").withParams("timestamp", nowStamp(time.Hour)))
			},
			want:  expect{code: -32006},
			check: checkSkewData,
		},
		// --- §8 chain, receipts, decision shape -------------------------
		{
			name: "§8 chain_hash: 64 lowercase hex on every decision, changing per step",
			prep: func(t *testing.T, s *acsSession) { s.handshake(t) },
			send: func(t *testing.T, s *acsSession) reply { return s.do(t, sessionStart(s)) },
			want: expect{decision: "allow"},
			check: func(t *testing.T, s *acsSession, r reply) {
				hashes := []string{r.str("result.chain_hash")}
				turn := newUUID()
				for _, m := range []msg{
					s.env("steps/turnStart", map[string]any{"turn_id": turn, "triggered_by": "user_message"}).withParams("request_id", turn).withMeta("turn_id", turn),
					userMessage(s, "hello").withMeta("turn_id", turn),
				} {
					hashes = append(hashes, s.decide(t, m, "allow").str("result.chain_hash"))
				}
				for i, h := range hashes {
					if !hex64(h) {
						t.Errorf("step %d: chain_hash %q is not 64 lowercase hex", i+1, h)
					}
					if i > 0 && h == hashes[i-1] {
						t.Errorf("step %d: chain_hash did not change", i+1)
					}
				}
			},
		},
		{
			name: "receipts: Acs-Receipt verifies with GET /receipt-key; Acs-Receipt-Key = its key id",
			prep: func(t *testing.T, s *acsSession) { s.handshake(t) },
			send: func(t *testing.T, s *acsSession) reply { return s.do(t, sessionStart(s)) },
			want: expect{decision: "allow"},
			check: func(t *testing.T, s *acsSession, r reply) {
				code, hdr, pemKey := s.c.ep.get(t, "/receipt-key")
				if code != 200 || hdr.Get("Acs-Receipt-Key") == "" {
					t.Fatalf("GET /receipt-key: %d, Acs-Receipt-Key %q", code, hdr.Get("Acs-Receipt-Key"))
				}
				if got := r.hdr.Get("Acs-Receipt-Key"); got != hdr.Get("Acs-Receipt-Key") {
					t.Errorf("Acs-Receipt-Key %q on the decision, want %q (GET /receipt-key)", got, hdr.Get("Acs-Receipt-Key"))
				}
				pub, err := receipt.ParsePublicPEM(pemKey)
				if err != nil {
					t.Fatal(err)
				}
				// The receipt is bound to the session's decision subject and
				// the envelope's stream sequence, which Acs-Stream-Seq names.
				seq, serr := strconv.ParseUint(r.hdr.Get("Acs-Stream-Seq"), 10, 64)
				if rc := r.hdr.Get("Acs-Receipt"); rc == "" || serr != nil {
					t.Errorf("no Acs-Receipt (%q) or Acs-Stream-Seq (%q) header on a decision", rc, r.hdr.Get("Acs-Stream-Seq"))
				} else if err := receipt.Verify(pub, receipt.Decision("default", s.id, seq), r.raw, rc); err != nil {
					t.Errorf("Acs-Receipt does not verify against the response body: %v", err)
				} else if receipt.Verify(pub, receipt.Decision("default", s.id, seq+1), r.raw, rc) == nil {
					t.Errorf("Acs-Receipt verifies for the next envelope too")
				}
			},
		},
		{
			name: "§6 a plain allow (no rule hit) has no reasoning member",
			prep: func(t *testing.T, s *acsSession) { s.handshake(t) },
			send: func(t *testing.T, s *acsSession) reply { return s.do(t, sessionStart(s)) },
			want: expect{decision: "allow"},
			check: func(t *testing.T, s *acsSession, r reply) {
				if r.has("result.reasoning") || r.has("result.reason_codes") {
					t.Errorf("a plain allow carries reasoning/reason_codes: %s", r)
				}
			},
		},
	}
}

func checkSkewData(t *testing.T, _ *acsSession, r reply) {
	t.Helper()
	if r.int("error.data.skew_window_ms") != 300000 {
		t.Errorf("data.skew_window_ms %v, want 300000", r.at("error.data.skew_window_ms"))
	}
}

// checkExpect checks one response against a row's expectation.
func checkExpect(t *testing.T, c *acsClient, r reply, s sent, want expect) {
	t.Helper()
	switch {
	case want.idNull:
		if v, ok := r.doc["id"]; !ok || v != nil {
			t.Errorf("id %v, want null (the request's id is unreadable): %s", r.at("id"), r)
		}
	case !want.anyID:
		checkID(t, r, s.id)
	}
	if r.str("jsonrpc") != "2.0" {
		t.Errorf("jsonrpc %q: %s", r.str("jsonrpc"), r)
	}
	switch {
	case want.code != 0:
		checkRPCError(t, c, r, s, want.code, want.reason)
		if want.method != "" && r.str("error.data.method") != want.method {
			t.Errorf("error.data.method %q, want %q: %s", r.str("error.data.method"), want.method, r)
		}
	case want.hello:
		if r.has("error") || !r.has("result") {
			t.Fatalf("want a ServerHello, got %s", r)
		}
		if r.has("result.decision") || r.has("result.type") {
			t.Errorf("the ServerHello is the result itself, not an AcsResult: %s", r)
		}
		if r.str("result.negotiated_version") != "0.1.0" {
			t.Errorf("negotiated_version %q, want 0.1.0", r.str("result.negotiated_version"))
		}
		if _, ok := r.at("result.methods_evaluated").([]any); !ok {
			t.Errorf("no methods_evaluated: %s", r)
		}
		if ms := r.int("result.timeout_config.default_ms"); ms <= 0 || ms > 10000 {
			t.Errorf("timeout_config.default_ms %v, want in (0, 10000]", r.at("result.timeout_config.default_ms"))
		}
		c.checkSig(t, r, s)
	default:
		if r.has("error") || !r.has("result") {
			t.Fatalf("want a %s decision, got %s", want.decision, r)
		}
		if r.str("result.type") != "final" || r.str("result.acs_version") != "0.1.0" || r.str("result.request_id") != s.requestID {
			t.Errorf("not an ACS final result for request %s: %s", s.requestID, r)
		}
		if r.str("result.decision") != want.decision {
			t.Errorf("decision %q, want %q: %s", r.str("result.decision"), want.decision, r)
		}
		if want.reasonCodes != nil && !slices.Equal(r.strList("result.reason_codes"), want.reasonCodes) {
			t.Errorf("reason_codes %q, want %q: %s", r.strList("result.reason_codes"), want.reasonCodes, r)
		}
		if s.method != "system/ping" && !want.noChain && !hex64(r.str("result.chain_hash")) {
			t.Errorf("decision without a chain_hash: %s", r)
		}
		c.checkSig(t, r, s)
	}
}

// TestConformance runs every clause in both deployments.
func TestConformance(t *testing.T) {
	for _, mode := range []string{"signed", "unsigned"} {
		t.Run(mode, func(t *testing.T) {
			var keys *testKeys
			if mode == "signed" {
				keys = conformanceKeys()
			}
			g := startGuardian(t, keys, keys != nil, "--skew-window", "5m")
			for _, row := range conformanceRows() {
				if row.only != "" && row.only != mode {
					continue
				}
				t.Run(row.name, func(t *testing.T) {
					s := g.newSession()
					if row.prep != nil {
						row.prep(t, s)
					}
					if row.batch != nil {
						replies, sents := row.batch(t, s)
						if len(replies) != len(row.want.items) {
							t.Fatalf("batch of %d answered with %d responses", len(row.want.items), len(replies))
						}
						for i, r := range replies {
							checkExpect(t, g.acsClient, r, sents[i], row.want.items[i])
						}
						return
					}
					r := row.send(t, s)
					checkExpect(t, g.acsClient, r, s.last, row.want)
					if row.check != nil {
						row.check(t, s, r)
					}
				})
			}
		})
	}
}

// TestNoStaleAnswerAfterRestart is the stale-answer regression: a request
// decided before a clean restart and sent again, byte for byte, after it —
// still inside the stream's duplicate window — is a replay (-32005), never
// the first copy's allow; and the restart publishes no decision twice.
func TestNoStaleAnswerAfterRestart(t *testing.T) {
	for _, mode := range []string{"signed", "unsigned"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			callerArgs, token := httpCaller(t, dir, "default")
			args := append([]string{"--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--skew-window", "5m"}, callerArgs...)
			var keys *testKeys
			if mode == "signed" {
				keys = conformanceKeys()
				args = append(args, "--keys", keys.write(t, dir), "--require-signatures")
			}
			p := startProcessor(t, args...)
			// The restart below comes back on the same ports: the NATS
			// subscriber reconnects to it, and c posts to it.
			listen, httpAddr := addrOf(t, p, natsListener), addrOf(t, p, httpListener)
			args = pinned(pinned(args, "--listen", listen), "--http", httpAddr)
			c := &acsClient{ep: endpoint{base: "http://" + httpAddr, token: token}, keys: keys}
			awaitReady(t, c.ep)

			// Every decision published, as a core NATS subscriber sees it,
			// across the restart.
			var reconnects atomic.Int32
			nc := connectAs(t, "nats://"+listen, filepath.Join(dir, "data", "creds", "security.creds"), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond),
				nats.ReconnectHandler(func(*nats.Conn) { reconnects.Add(1) }))
			type seen struct {
				msgID, requestID, decision string
				afterRestart               bool
			}
			var restarted atomic.Bool
			var got collector[seen]
			if _, err := nc.Subscribe("acs.decisions.>", func(m *nats.Msg) {
				got.add(seen{m.Header.Get("Nats-Msg-Id"), m.Header.Get("Acs-Request-Id"), m.Header.Get("Acs-Decision"), restarted.Load()})
			}); err != nil {
				t.Fatal(err)
			}
			if err := nc.Flush(); err != nil {
				t.Fatal(err)
			}
			observed := func(requestID string) func() bool {
				return func() bool {
					return slices.ContainsFunc(got.snapshot(), func(s seen) bool { return s.requestID == requestID })
				}
			}

			s := c.newSession()
			s.handshake(t)
			s.decide(t, sessionStart(s), "allow")
			turn := newUUID()
			s.decide(t, s.env("steps/turnStart", map[string]any{"turn_id": turn, "triggered_by": "user_message"}).withParams("request_id", turn).withMeta("turn_id", turn), "allow")
			um := s.sign(userMessage(s, "what is the weather?").withMeta("turn_id", turn))
			first := s.send(t, um)
			checkDecision(t, c, first, s.last, "allow")
			umBody, umSent := s.lastBody, s.last
			poll(t, 10*time.Second, "the userMessage's decision on acs.decisions.>", observed(um.requestID()))

			p.stop(t)
			restarted.Store(true)
			before := reconnects.Load()
			p = startProcessor(t, args...)
			awaitReady(t, c.ep)
			poll(t, 20*time.Second, "the NATS subscriber reconnecting to the restarted server", func() bool {
				return reconnects.Load() > before && nc.IsConnected()
			})
			if err := nc.Flush(); err != nil {
				t.Fatal(err)
			}

			again, hdr := c.ep.postRaw(t, umBody)
			r, err := parseReply(again, hdr)
			if err != nil {
				t.Fatal(err)
			}
			if r.str("result.decision") == "allow" {
				t.Fatalf("the request sent again after the restart got the first copy's stale allow: %s", r)
			}
			checkID(t, r, umSent.id)
			checkRPCError(t, c, r, umSent, -32005, "request_replayed")

			// The handshake survived the restart: the same ClientHello gets
			// the same ServerHello, another one already_negotiated.
			firstHello := s.helloResult
			r = s.do(t, s.env("handshake/hello", clientHello(evaluatedMethods...)))
			checkExpect(t, c, r, s.last, expect{hello: true})
			if again, _ := r.at("result").(map[string]any); !equalJSON(withoutSignature(again), withoutSignature(firstHello)) {
				t.Errorf("ServerHello after the restart %v, want the first %v", again, firstHello)
			}
			r = s.do(t, s.env("handshake/hello", clientHello("steps/toolCallRequest")))
			checkExpect(t, c, r, s.last, expect{code: -32000, reason: "already_negotiated"})

			// A new step after the restart: the session (and its handshake)
			// survived, and its decision, published after anything the
			// restart republished for the session, is the barrier for the
			// check below.
			next := s.decide(t, s.env("steps/agentResponse", map[string]any{"content": []any{map[string]any{"type": "text", "value": "sunny"}}}).withMeta("turn_id", turn), "allow")
			poll(t, 10*time.Second, "the post-restart decision on acs.decisions.>", observed(next.str("result.request_id")))

			all := got.snapshot()
			byID := map[string]int{}
			for _, m := range all {
				if m.msgID == "" {
					t.Errorf("a decision without Nats-Msg-Id: %+v", m)
				}
				byID[m.msgID]++
			}
			for _, m := range all {
				if m.afterRestart && byID[m.msgID] > 1 {
					t.Errorf("decision %s (request %s, %s) published again after the restart", m.msgID, m.requestID, m.decision)
				}
				if m.afterRestart && m.requestID == um.requestID() && m.decision == "allow" {
					t.Errorf("an allow for the replayed request %s was published after the restart", m.requestID)
				}
			}
			// And the stream: one decision per inbound sequence.
			js := natstest.JetStream(t, nc)
			for seq, ms := range decisionsBySeq(t, js) {
				if len(ms) != 1 {
					t.Errorf("inbound sequence %d has %d decisions", seq, len(ms))
				}
			}
			t.Logf("%d decision messages seen across the restart: %s", len(all), summarize(all, func(s seen) string {
				return s.requestID[:min(8, len(s.requestID))] + "=" + s.decision + map[bool]string{true: "(after)", false: ""}[s.afterRestart]
			}))
			p.stop(t)
		})
	}
}

func summarize[T any](items []T, f func(T) string) string {
	var out []string
	for _, it := range items {
		out = append(out, f(it))
	}
	return strings.Join(out, " ") + " (" + strconv.Itoa(len(items)) + ")"
}

// TestConformanceSettings pins the clauses that depend on how the processor
// is configured: one processor per row.
func TestConformanceSettings(t *testing.T) {
	for _, row := range []struct {
		name    string
		keys    *testKeys
		require bool
		args    []string
		run     func(t *testing.T, g *guardianProc)
	}{
		{
			name: "§10 --keys without --require-signatures: unsigned hello and steps accepted and answered signed (default key); a bad signature is still -32004",
			keys: conformanceKeys(), args: []string{"--skew-window", "5m"},
			run: func(t *testing.T, g *guardianProc) {
				s := g.newSession()
				r := s.send(t, s.env("handshake/hello", clientHello(evaluatedMethods...)))
				checkExpect(t, g.acsClient, r, s.last, expect{hello: true})
				r = s.send(t, sessionStart(s))
				checkExpect(t, g.acsClient, r, s.last, expect{decision: "allow"})
				m := s.signAs(userMessage(s, "hi"), "k1")
				m.params()["payload"] = text("changed after signing")
				r = s.send(t, m)
				checkExpect(t, g.acsClient, r, s.last, expect{code: -32004})
			},
		},
		{
			name: "§4 --handshake optional: a step without handshake is decided",
			args: []string{"--skew-window", "5m", "--handshake", "optional"},
			run: func(t *testing.T, g *guardianProc) {
				s := g.newSession()
				r := s.do(t, sessionStart(s))
				checkExpect(t, g.acsClient, r, s.last, expect{decision: "allow"})
			},
		},
		{
			name: "§4 --decision-timeout 2s, --on-decision-failure proceed: default_ms 3000, on_decision_failure proceed",
			args: []string{"--skew-window", "5m", "--decision-timeout", "2s", "--on-decision-failure", "proceed"},
			run: func(t *testing.T, g *guardianProc) {
				s := g.newSession()
				r := s.handshake(t)
				if r.int("result.timeout_config.default_ms") != 3000 || r.str("result.on_decision_failure") != "proceed" {
					t.Errorf("ServerHello %s: want default_ms 3000 and on_decision_failure proceed", r)
				}
			},
		},
		{
			name: "§17 no decision within --decision-timeout (1ns) → -32603 decision_timeout, signed with the request's key (k1)",
			keys: conformanceKeys(), require: true, args: []string{"--skew-window", "5m", "--decision-timeout", "1ns"},
			run: func(t *testing.T, g *guardianProc) {
				s := g.newSession()
				s.keyID = "k1"
				s.handshake(t)
				r := s.do(t, sessionStart(s))
				checkExpect(t, g.acsClient, r, s.last, expect{code: -32603, reason: "decision_timeout"})
			},
		},
		{
			name: "§12 --skew-window 0: no skew_window_ms advertised, a request 1 h old is decided",
			keys: conformanceKeys(), require: true, args: []string{"--skew-window", "0"},
			run: func(t *testing.T, g *guardianProc) {
				s := g.newSession()
				if r := s.handshake(t); r.has("result.skew_window_ms") {
					t.Errorf("skew_window_ms advertised with the window off: %s", r)
				}
				r := s.do(t, sessionStart(s).withParams("timestamp", nowStamp(-time.Hour)))
				checkExpect(t, g.acsClient, r, s.last, expect{decision: "allow"})
			},
		},
		{
			name: "HTTP callers: no token or a wrong one → HTTP 401 with a JSON-RPC -32000 unauthenticated and a Bearer challenge; text/plain → HTTP 415 -32600",
			args: []string{"--skew-window", "5m"},
			run: func(t *testing.T, g *guardianProc) {
				s := g.newSession()
				body := s.env("handshake/hello", clientHello(evaluatedMethods...)).bytes()
				for _, tc := range []struct {
					name, token, contentType, challenge string
					status, code                        int
					reason                              string
				}{
					{"no token", "", "application/json", `Bearer realm="turnguard"`, http.StatusUnauthorized, -32000, "unauthenticated"},
					{"a wrong token", "tgt_wrong", "application/json", `Bearer realm="turnguard", error="invalid_token"`, http.StatusUnauthorized, -32000, "unauthenticated"},
					{"text/plain", g.ep.token, "text/plain", "", http.StatusUnsupportedMediaType, -32600, "content_type_unsupported"},
				} {
					ep := g.ep
					ep.token = tc.token
					req := ep.request(t, body)
					req.Header.Set("Content-Type", tc.contentType)
					resp, err := httpClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					raw, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					r, err := parseReply(raw, resp.Header)
					if err != nil || resp.StatusCode != tc.status || r.code() != tc.code || r.str("error.data.reason") != tc.reason {
						t.Errorf("%s: HTTP %d %s (%v), want HTTP %d with %d %s", tc.name, resp.StatusCode, raw, err, tc.status, tc.code, tc.reason)
					}
					if got := resp.Header.Get("WWW-Authenticate"); got != tc.challenge {
						t.Errorf("%s: WWW-Authenticate %q, want %q", tc.name, got, tc.challenge)
					}
				}
				// With the token the same hello is answered.
				checkExpect(t, g.acsClient, s.send(t, s.env("handshake/hello", clientHello(evaluatedMethods...))), s.last, expect{hello: true})
			},
		},
		{
			name: "--auth none: the endpoint is open, as before authentication, and says so loudly at start",
			args: []string{"--skew-window", "5m", "--auth", "none"},
			run: func(t *testing.T, g *guardianProc) {
				if g.ep.token != "" {
					t.Fatal("test bug: a token for an open endpoint")
				}
				s := g.newSession()
				s.handshake(t)
				s.decide(t, sessionStart(s), "allow")
				if !strings.Contains(g.p.out.String(), "the ACS endpoint is OPEN (--auth none)") {
					t.Errorf("no warning of the open endpoint at start:\n%s", g.p.out)
				}
			},
		},
	} {
		t.Run(row.name, func(t *testing.T) {
			row.run(t, startGuardian(t, row.keys, row.require, row.args...))
		})
	}
}
