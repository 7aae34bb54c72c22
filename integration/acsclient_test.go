package integration

// An ACS client as the conformance and adapter tests need it: envelopes
// built and signed the way the ACS Go reference and the Python adapters sign
// them (ACS §10: HKDF-SHA256 per-session key, HMAC-SHA256 over the RFC 8785
// form of the envelope without its signature), posted to a running
// processor's POST /acs, and responses whose signatures are recomputed here,
// independently of the processor's own signing code. Only the RFC 8785
// canonicaliser is the repo's (internal/core/acs), and TestConformanceClientKnownAnswers
// holds this file's HKDF/HMAC code and uuid5 to known answers first.

import (
	"bytes"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/testkit/acstest"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
)

// ---------------------------------------------------------------------------
// Keys: the client side of a --keys file.

// testKeys is a keys file and what a client needs to sign and verify with
// it. The secrets are kept both as bytes and as written in the file.
type testKeys struct {
	def   string
	ids   []string          // file order
	named map[string][]byte // key_id → secret bytes
	spell map[string]string // key_id → "hex:…", "base64:…", "text:…"
	// session is the session_key secret (key_id = the session id), nil when
	// the file has none.
	session      []byte
	sessionSpell string
}

func (k *testKeys) add(id, spelled string, secret []byte) *testKeys {
	if k.named == nil {
		k.named, k.spell = map[string][]byte{}, map[string]string{}
	}
	k.ids = append(k.ids, id)
	k.named[id], k.spell[id] = secret, spelled
	return k
}

// secretOf is the secret a key_id names in a session: a named key first,
// else the session_key when key_id is the session id.
func (k *testKeys) secretOf(keyID, sessionID string) ([]byte, bool) {
	if s, ok := k.named[keyID]; ok {
		return s, true
	}
	if k.session != nil && keyID != "" && keyID == sessionID {
		return k.session, true
	}
	return nil, false
}

// yaml renders the keys file.
func (k *testKeys) yaml() string {
	var b strings.Builder
	fmt.Fprintf(&b, "default: %s\nkeys:\n", k.def)
	for _, id := range k.ids {
		fmt.Fprintf(&b, "  - {id: %s, secret: %q}\n", id, k.spell[id])
	}
	if k.session != nil {
		fmt.Fprintf(&b, "session_key: {secret: %q}\n", k.sessionSpell)
	}
	return b.String()
}

// write writes the keys file into dir and returns its path.
func (k *testKeys) write(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "keys.yaml")
	if err := os.WriteFile(path, []byte(k.yaml()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func secret32(label string) []byte {
	s := sha256.Sum256([]byte("turnguard conformance " + label))
	return s[:]
}

// conformanceKeys: "default" (hex), "k1" (base64) and a session_key (hex),
// default "default".
func conformanceKeys() *testKeys {
	k := &testKeys{def: "default"}
	d, k1, sk := secret32("default"), secret32("k1"), secret32("session")
	k.add("default", "hex:"+hex.EncodeToString(d), d)
	k.add("k1", "base64:"+base64.StdEncoding.EncodeToString(k1), k1)
	k.session, k.sessionSpell = sk, "hex:"+hex.EncodeToString(sk)
	return k
}

// pythonAdapterSecret is an ACS_HMAC_SECRET as the Python adapters take it:
// a plain string (≥ 32 bytes) whose UTF-8 bytes are the HKDF input.
const pythonAdapterSecret = "turnguard-adapter-conformance-secret-0123456789"

// pythonAdapterKeys is the keys file of a deployment whose Python adapters
// sign with key_id "default" and ACS_HMAC_SECRET = pythonAdapterSecret.
func pythonAdapterKeys() *testKeys {
	k := &testKeys{def: "default"}
	return k.add("default", "text:"+pythonAdapterSecret, []byte(pythonAdapterSecret))
}

// ---------------------------------------------------------------------------
// ACS §10 signatures, written from the spec (not internal/core/acs's Keyring).

// sessionKey is HKDF-SHA256(ikm, salt none, info = session id, 32 bytes).
func sessionKey(ikm []byte, sessionID string) []byte {
	k, err := hkdf.Key(sha256.New, ikm, nil, sessionID, 32)
	if err != nil {
		panic(err)
	}
	return k
}

// hmacValue is the signature value: padded standard base64 of HMAC-SHA256.
func hmacValue(key, input []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(input)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// decodeNumbers decodes JSON keeping numbers exact (json.Number), as the
// canonical form needs.
func decodeNumbers(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v)
}

// signingInput is the RFC 8785 form of an envelope without its signature:
// params.signature of a request, result.signature or error.signature of a
// response.
func signingInput(doc map[string]any) ([]byte, error) {
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	var cp map[string]any
	if err := decodeNumbers(raw, &cp); err != nil {
		return nil, err
	}
	for _, member := range []string{"params", "result", "error"} {
		if inner, ok := cp[member].(map[string]any); ok {
			delete(inner, "signature")
		}
	}
	return acs.SigningInput(cp)
}

// signWith signs a request envelope in place with the session key that ikm
// derives for the envelope's own metadata.session_id.
func signWith(m msg, keyID string, ikm []byte) msg {
	delete(m.params(), "signature")
	input, err := signingInput(m)
	if err != nil {
		panic(err)
	}
	sid, _ := m.meta()["session_id"].(string)
	m.params()["signature"] = map[string]any{"algorithm": "HMAC-SHA256", "value": hmacValue(sessionKey(ikm, sid), input), "key_id": keyID}
	return m
}

// responseSignature returns a response's signature object (result.signature
// or error.signature), nil when it has none.
func responseSignature(doc map[string]any) map[string]any {
	for _, member := range []string{"result", "error"} {
		if inner, ok := doc[member].(map[string]any); ok {
			if sig, ok := inner["signature"].(map[string]any); ok {
				return sig
			}
		}
	}
	return nil
}

// verifyResponse recomputes a response's HMAC with ikm for sessionID. It
// checks algorithm and value, not key_id: the caller does.
func verifyResponse(doc map[string]any, ikm []byte, sessionID string) error {
	sig := responseSignature(doc)
	if sig == nil {
		return fmt.Errorf("the response is not signed")
	}
	if sig["algorithm"] != "HMAC-SHA256" {
		return fmt.Errorf("signature algorithm %v, want HMAC-SHA256", sig["algorithm"])
	}
	input, err := signingInput(doc)
	if err != nil {
		return err
	}
	if want := hmacValue(sessionKey(ikm, sessionID), input); sig["value"] != want {
		return fmt.Errorf("signature value %v does not verify (key_id %v, session %s): want %s over %s", sig["value"], sig["key_id"], sessionID, want, input)
	}
	return nil
}

// pythonAdapterVerify is the check the ACS Python adapters make on a
// response: HKDF(UTF-8 secret, session id), HMAC over the canonical response
// without its signature; key_id is not looked at.
func pythonAdapterVerify(doc map[string]any, secret, sessionID string) error {
	return verifyResponse(doc, []byte(secret), sessionID)
}

// ---------------------------------------------------------------------------
// UUIDs and times as the adapters make them.

func newUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return formatUUID(b[:])
}

func formatUUID(b []byte) string {
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// namespaceURL is RFC 4122's NAMESPACE_URL (Python uuid.NAMESPACE_URL).
const namespaceURL = "6ba7b811-9dad-11d1-80b4-00c04fd430c8"

// uuid5 is RFC 4122 name-based UUID version 5 (Python uuid.uuid5).
func uuid5(namespace, name string) string {
	ns, err := hex.DecodeString(strings.ReplaceAll(namespace, "-", ""))
	if err != nil || len(ns) != 16 {
		panic("uuid5: bad namespace " + namespace)
	}
	h := sha1.New()
	h.Write(ns)
	h.Write([]byte(name))
	b := h.Sum(nil)[:16]
	b[6] = b[6]&0x0f | 0x50
	b[8] = b[8]&0x3f | 0x80
	return formatUUID(b)
}

// nowStamp is a timestamp as the adapters write it: UTC, milliseconds, Z.
func nowStamp(offset time.Duration) string {
	return time.Now().Add(offset).UTC().Format("2006-01-02T15:04:05.000Z")
}

// ---------------------------------------------------------------------------
// Envelopes.

// msg is a request envelope as a JSON object, so tests can tamper with it.
type msg map[string]any

func (m msg) params() map[string]any { return m["params"].(map[string]any) }
func (m msg) meta() map[string]any   { return m.params()["metadata"].(map[string]any) }
func (m msg) requestID() string      { s, _ := m.params()["request_id"].(string); return s }

// withMeta sets metadata members.
func (m msg) withMeta(kv ...any) msg {
	for i := 0; i+1 < len(kv); i += 2 {
		m.meta()[kv[i].(string)] = kv[i+1]
	}
	return m
}

// withParams sets params members.
func (m msg) withParams(kv ...any) msg {
	for i := 0; i+1 < len(kv); i += 2 {
		m.params()[kv[i].(string)] = kv[i+1]
	}
	return m
}

// bytes is the envelope as sent.
func (m msg) bytes() []byte {
	raw, err := json.Marshal(map[string]any(m))
	if err != nil {
		panic(err)
	}
	return raw
}

// newEnvelope builds a request envelope: a fresh request_id, a JSON-RPC id
// of its own (a different uuid, as the adapters send), the time now.
func newEnvelope(method, sessionID, agentID string, payload any) msg {
	return msg{"jsonrpc": "2.0", "method": method, "id": newUUID(), "params": map[string]any{
		"acs_version": "0.1.0", "request_id": newUUID(), "timestamp": nowStamp(0),
		"metadata": map[string]any{"agent_id": agentID, "session_id": sessionID},
		"payload":  payload,
	}}
}

// obj parses a JSON literal of a test.
func obj(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic(fmt.Sprintf("test literal %s: %v", s, err))
	}
	return v
}

// strs turns a []string into the []any a decoded JSON array is.
func strs(ss ...string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// evaluatedMethods are the 22 methods turnguard evaluates: the 19 steps/*
// hooks of ACS v0.1.0, agbom/snapshot, agbom/changed and system/ping.
var evaluatedMethods = []string{
	"steps/sessionStart", "steps/agentTrigger", "steps/turnStart", "steps/userMessage", "steps/agentResponse",
	"steps/knowledgeRetrieval", "steps/memoryContextRetrieval", "steps/memoryStore", "steps/toolCallRequest",
	"steps/toolCallResult", "steps/preCompact", "steps/postCompact", "steps/subagentStart", "steps/subagentStop",
	"steps/skillRegister", "steps/skillLoad", "steps/skillUnload", "steps/turnEnd", "steps/sessionEnd",
	"agbom/snapshot", "agbom/changed", "system/ping",
}

// clientHello is a ClientHello over HTTP offering acs-core.
func clientHello(methods ...string) map[string]any {
	return map[string]any{
		"acs_versions_supported": strs("0.1.0"),
		"methods_implemented":    strs(methods...),
		"transports_supported":   strs("http"),
		"provenance_producer":    "none",
		"profiles_supported":     strs("acs-core"),
	}
}

// ---------------------------------------------------------------------------
// HTTP.

// reply is one JSON-RPC response as received.
type reply struct {
	raw json.RawMessage
	hdr http.Header
	doc map[string]any // numbers as json.Number
}

func parseReply(raw []byte, hdr http.Header) (reply, error) {
	r := reply{raw: raw, hdr: hdr}
	if err := decodeNumbers(raw, &r.doc); err != nil {
		return r, fmt.Errorf("response is not a JSON object: %v: %s", err, raw)
	}
	return r, nil
}

// at reads a dotted path ("error.data.reason"); nil when absent.
func (r reply) at(path string) any { return lookupPath(r.doc, path) }

func lookupPath(doc map[string]any, path string) any {
	var cur any = doc
	for _, p := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		if cur, ok = m[p]; !ok {
			return nil
		}
	}
	return cur
}

func (r reply) str(path string) string { s, _ := r.at(path).(string); return s }

// has reports whether a member is present (even null).
func (r reply) has(path string) bool {
	i := strings.LastIndex(path, ".")
	parent, name := map[string]any(r.doc), path
	if i >= 0 {
		p, ok := r.at(path[:i]).(map[string]any)
		if !ok {
			return false
		}
		parent, name = p, path[i+1:]
	}
	_, ok := parent[name]
	return ok
}

// code is error.code, 0 for a result.
func (r reply) code() int {
	n, ok := r.at("error.code").(json.Number)
	if !ok {
		return 0
	}
	c, _ := strconv.Atoi(n.String())
	return c
}

func (r reply) int(path string) int64 {
	n, ok := r.at(path).(json.Number)
	if !ok {
		return -1
	}
	v, err := n.Int64()
	if err != nil {
		return -1
	}
	return v
}

func (r reply) strList(path string) []string {
	a, ok := r.at(path).([]any)
	if !ok {
		return nil
	}
	out := []string{}
	for _, v := range a {
		s, _ := v.(string)
		out = append(out, s)
	}
	return out
}

// String shows a reply in failure messages.
func (r reply) String() string { return string(r.raw) }

// endpoint is a processor's HTTP address and the bearer token its
// requests carry.
type endpoint struct {
	base string // http://127.0.0.1:port
	// token is the caller's bearer token ("" none: an --auth none endpoint).
	token string
	// tokenInURL sends the token as the access_token query parameter, as
	// a client configured only with a URL (the ACS Python adapters'
	// ACS_GUARDIAN_URL) does.
	tokenInURL bool
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

// request is a POST /acs as an ACS client sends it: Content-Type
// application/json, and the caller's token in an Authorization header (a
// client with configurable headers) or in the URL (tokenInURL).
func (e endpoint) request(t *testing.T, body []byte) *http.Request {
	t.Helper()
	url := e.base + "/acs"
	if e.token != "" && e.tokenInURL {
		url += "?access_token=" + e.token
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if e.token != "" && !e.tokenInURL {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	return req
}

// postRaw posts a body to /acs and returns the raw answer: HTTP 200 with a
// JSON body is required.
func (e endpoint) postRaw(t *testing.T, body []byte) ([]byte, http.Header) {
	t.Helper()
	resp, err := httpClient.Do(e.request(t, body))
	if err != nil {
		t.Fatalf("POST /acs: %v", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST /acs: read: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /acs: HTTP %d, want 200 always: %s", resp.StatusCode, raw)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("POST /acs: Content-Type %q, want application/json", ct)
	}
	return raw, resp.Header
}

// post posts one request and parses its single response.
func (e endpoint) post(t *testing.T, body []byte) reply {
	t.Helper()
	raw, hdr := e.postRaw(t, body)
	r, err := parseReply(raw, hdr)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// postBatch posts a batch and parses the array of responses.
func (e endpoint) postBatch(t *testing.T, body []byte) []reply {
	t.Helper()
	raw, hdr := e.postRaw(t, body)
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		t.Fatalf("a batch is answered with an array of responses: %v: %s", err, raw)
	}
	out := make([]reply, len(items))
	for i, it := range items {
		r, err := parseReply(it, hdr)
		if err != nil {
			t.Fatalf("batch item %d: %v", i, err)
		}
		out[i] = r
	}
	return out
}

// get fetches a path of the endpoint's server.
func (e endpoint) get(t *testing.T, path string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := httpClient.Get(e.base + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, raw
}

// ---------------------------------------------------------------------------
// A client of one processor and its sessions.

// acsClient talks to one processor; keys is nil when it runs without --keys
// (then nothing is signed, either way).
type acsClient struct {
	ep   endpoint
	keys *testKeys
}

// sent is what the client expects of the response to what it sent: the
// JSON-RPC id it must echo, and the key and session its signature must use.
type sent struct {
	id        any // the request's id as sent; nil: unreadable
	requestID string
	method    string
	// session is the HKDF info the response must be signed for: the
	// request's metadata.session_id, "" when unreadable.
	session string
	// key is the key_id the response must be signed with: the request's
	// when the keyring has it, else the default.
	key string
}

// expectOf derives the expectations of a request envelope.
func (c *acsClient) expectOf(m msg) sent {
	s := sent{id: m["id"]}
	s.method, _ = m["method"].(string)
	if p, ok := m["params"].(map[string]any); ok {
		s.requestID, _ = p["request_id"].(string)
		if md, ok := p["metadata"].(map[string]any); ok {
			s.session, _ = md["session_id"].(string)
		}
		if c.keys != nil {
			s.key = c.keys.def
			if sig, ok := p["signature"].(map[string]any); ok {
				if kid, _ := sig["key_id"].(string); kid != "" {
					if _, known := c.keys.secretOf(kid, s.session); known {
						s.key = kid
					}
				}
			}
		}
	}
	return s
}

// checkSig checks a response's signature against what was sent: without
// keys no signature at all; with keys the HMAC must verify with the
// expected key_id for the request's session. A response to a request whose
// session cannot be read has nothing to derive a key from; it need not be
// signed, but a signature it carries must verify (default key, empty info).
func (c *acsClient) checkSig(t *testing.T, r reply, s sent) {
	t.Helper()
	sig := responseSignature(r.doc)
	switch {
	case c.keys == nil:
		if sig != nil || r.has("result.signature") || r.has("error.signature") {
			t.Errorf("without --keys nothing is signed, but the response is: %s", r)
		}
	case s.session == "":
		if sig != nil {
			ikm, _ := c.keys.secretOf(c.keys.def, "")
			if err := verifyResponse(r.doc, ikm, ""); err != nil {
				t.Errorf("a signature on a session-less response must verify: %v", err)
			}
		}
	case sig == nil:
		t.Errorf("with --keys every response is signed; this one is not: %s", r)
	default:
		if sig["key_id"] != s.key {
			t.Errorf("response signed with key_id %v, want %q: %s", sig["key_id"], s.key, r)
		}
		ikm, ok := c.keys.secretOf(s.key, s.session)
		if !ok {
			t.Fatalf("test bug: no secret for key %q", s.key)
		}
		if err := verifyResponse(r.doc, ikm, s.session); err != nil {
			t.Errorf("response signature: %v", err)
		}
	}
}

// checkID requires the response's id to echo the request's.
func checkID(t *testing.T, r reply, id any) {
	t.Helper()
	want, _ := json.Marshal(id)
	got, _ := json.Marshal(r.at("id"))
	if !r.has("id") || string(got) != string(want) {
		t.Errorf("response id %s, want %s (the request's): %s", got, want, r)
	}
}

// acsSession is one session of a client.
type acsSession struct {
	c     *acsClient
	id    string
	agent string
	// keyID signs the session's requests when the client has keys;
	// "" means the keyring's default.
	keyID string
	// last is what the last request sent expects.
	last sent
	// lastBody is the last request's bytes, for replays.
	lastBody []byte
	// helloResult is the ServerHello of the session's handshake.
	helloResult map[string]any
}

func (c *acsClient) newSession() *acsSession {
	return &acsSession{c: c, id: newUUID(), agent: "conformance-agent"}
}

// env builds an envelope of the session.
func (s *acsSession) env(method string, payload any) msg {
	return newEnvelope(method, s.id, s.agent, payload)
}

// inTurn sets m's metadata turn_id.
func (m msg) inTurn(turn string) msg { m.meta()["turn_id"] = turn; return m }

// turnStart opens a turn the user's message triggered; the turn id is the
// envelope's request id.
func (s *acsSession) turnStart() (msg, string) {
	m := s.env("steps/turnStart", nil)
	rid := m.requestID()
	m.params()["payload"] = map[string]any{"turn_id": rid, "triggered_by": "user_message"}
	return m.inTurn(rid), rid
}

// turnEnd closes turn, completed.
func (s *acsSession) turnEnd(turn string) msg {
	return s.env("steps/turnEnd", map[string]any{"turn_id": turn, "outcome": "completed"}).inTurn(turn)
}

// userTurns are n turns, each opened, doing work (a user message) and
// closed: what ages a taint window when accepted.
func (s *acsSession) userTurns(n int) []msg {
	var out []msg
	for range n {
		m, turn := s.turnStart()
		out = append(out, m, s.env("steps/userMessage", map[string]any{"content": []any{map[string]any{"type": "text", "value": "go on"}}}).inTurn(turn), s.turnEnd(turn))
	}
	return out
}

// sign signs m with the session's key when the client has keys.
func (s *acsSession) sign(m msg) msg {
	if s.c.keys == nil {
		return m
	}
	return s.signAs(m, s.keyID)
}

// signAs signs m with a key_id of the keyring ("" = default), whatever the
// session's own choice.
func (s *acsSession) signAs(m msg, keyID string) msg {
	if keyID == "" {
		keyID = s.c.keys.def
	}
	sid, _ := m.meta()["session_id"].(string)
	ikm, ok := s.c.keys.secretOf(keyID, sid)
	if !ok {
		panic("test bug: no secret for key " + keyID)
	}
	return signWith(m, keyID, ikm)
}

// send posts an envelope exactly as it is (signed or not by the caller).
func (s *acsSession) send(t *testing.T, m msg) reply {
	t.Helper()
	s.last, s.lastBody = s.c.expectOf(m), m.bytes()
	return s.c.ep.post(t, s.lastBody)
}

// do signs (when the client has keys) and posts an envelope.
func (s *acsSession) do(t *testing.T, m msg) reply {
	t.Helper()
	return s.send(t, s.sign(m))
}

// decide posts a step and requires a decision: the wanted disposition, the
// ACS result shape, the echoed id and the right signature.
func (s *acsSession) decide(t *testing.T, m msg, want string) reply {
	t.Helper()
	r := s.do(t, m)
	checkDecision(t, s.c, r, s.last, want)
	return r
}

// checkDecision checks an AcsResult answer.
func checkDecision(t *testing.T, c *acsClient, r reply, s sent, want string) {
	t.Helper()
	if r.has("error") || !r.has("result") {
		t.Fatalf("%s: want a %s decision, got %s", s.method, want, r)
	}
	if r.str("jsonrpc") != "2.0" || r.str("result.type") != "final" || r.str("result.acs_version") != "0.1.0" || r.str("result.request_id") != s.requestID {
		t.Errorf("%s: decision is not an ACS final result for request %s: %s", s.method, s.requestID, r)
	}
	if got := r.str("result.decision"); want != "" && got != want {
		t.Errorf("%s: decision %q, want %q: %s", s.method, got, want, r)
	}
	checkID(t, r, s.id)
	c.checkSig(t, r, s)
}

// checkRPCError checks a JSON-RPC error answer.
func checkRPCError(t *testing.T, c *acsClient, r reply, s sent, code int, reason string) {
	t.Helper()
	if r.has("result") || !r.has("error") {
		t.Fatalf("want JSON-RPC error %d (%s), got %s", code, reason, r)
	}
	if r.code() != code {
		t.Errorf("error code %d, want %d: %s", r.code(), code, r)
	}
	if reason != "" && r.str("error.data.reason") != reason {
		t.Errorf("error.data.reason %q, want %q: %s", r.str("error.data.reason"), reason, r)
	}
	if _, ok := r.at("error.message").(string); !ok {
		t.Errorf("error.message missing: %s", r)
	}
	c.checkSig(t, r, s)
}

// hello sends handshake/hello with a ClientHello and requires a ServerHello.
func (s *acsSession) hello(t *testing.T, ch map[string]any) reply {
	t.Helper()
	r := s.do(t, s.env("handshake/hello", ch))
	if r.has("error") || r.str("result.negotiated_version") == "" {
		t.Fatalf("handshake/hello: want a ServerHello, got %s", r)
	}
	checkID(t, r, s.last.id)
	s.c.checkSig(t, r, s.last)
	s.helloResult, _ = r.at("result").(map[string]any)
	return r
}

// handshake negotiates every method turnguard evaluates.
func (s *acsSession) handshake(t *testing.T) reply {
	t.Helper()
	return s.hello(t, clientHello(evaluatedMethods...))
}

// ---------------------------------------------------------------------------
// Processors.

// guardianProc is a processor serving POST /acs.
type guardianProc struct {
	*acsClient
	p       *proc
	dataDir string
	args    []string
}

// startGuardian starts the processor binary with --listen none and --http
// on a loopback port, its one caller (tenant default) authenticated by a
// bearer token unless extra has --auth none; keys (nil: none) is written
// and passed with --require-signatures when require is set.
func startGuardian(t *testing.T, keys *testKeys, require bool, extra ...string) *guardianProc {
	t.Helper()
	dir := t.TempDir()
	args := []string{"--data-dir", filepath.Join(dir, "data"), "--listen", "none", "--http", "127.0.0.1:0"}
	var token string
	if !slices.Contains(extra, "--auth") {
		var tokenArgs []string
		tokenArgs, token = httpCaller(t, dir, "default")
		args = append(args, tokenArgs...)
	}
	if keys != nil {
		args = append(args, "--keys", keys.write(t, dir))
		if require {
			args = append(args, "--require-signatures")
		}
	}
	args = append(args, extra...)
	p := startProcessor(t, args...)
	addr := addrOf(t, p, httpListener)
	g := &guardianProc{acsClient: &acsClient{ep: endpoint{base: "http://" + addr, token: token}, keys: keys}, dataDir: filepath.Join(dir, "data"), args: pinned(args, "--http", addr), p: p}
	awaitReady(t, g.ep)
	return g
}

// httpCaller writes a callers file with one caller of tenant and a fresh
// bearer token, and returns the processor's flags for it and the token.
// It writes what processor http-token add writes: the token's SHA-256.
func httpCaller(t *testing.T, dir, tenant string) (args []string, token string) {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	token = "tgt_" + base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(token))
	file := filepath.Join(dir, "callers.yaml")
	body := fmt.Sprintf("callers:\n  - {name: integration, tenant: %s, token_sha256: %x}\n", tenant, sum)
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--http-tokens", file}, token
}

// awaitReady polls GET /readyz until it answers 200.
func awaitReady(t *testing.T, ep endpoint) {
	t.Helper()
	poll(t, 20*time.Second, ep.base+"/readyz answering 200", func() bool {
		resp, err := httpClient.Get(ep.base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// ---------------------------------------------------------------------------
// Known answers for the helpers above.

// TestConformanceClientKnownAnswers holds this file's signing code to the
// ACS Go reference's known-answer vector (internal/core/acs/testdata) and its
// uuid5 to Python's uuid.uuid5, so that a signature check failing in the
// conformance tests is the processor's failure, not the client's.
func TestConformanceClientKnownAnswers(t *testing.T) {
	v := acstest.ReadEnvelopeVectors(t, "../internal/core/acs/testdata/envelope-vectors.json")
	ikm, err := hex.DecodeString(v.IKMHex)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(sessionKey(ikm, v.SessionID)); got != v.SessionKeyHex {
		t.Fatalf("HKDF session key %s, want %s", got, v.SessionKeyHex)
	}
	// The request: signing input and value, through signWith.
	reqSig := v.Request.Signed["params"].(map[string]any)["signature"].(map[string]any)
	input, err := signingInput(v.Request.Signed)
	if err != nil || string(input) != v.Request.SigningInput {
		t.Fatalf("request signing input\n%s\nwant\n%s (%v)", input, v.Request.SigningInput, err)
	}
	var cp msg
	b, err := json.Marshal(v.Request.Signed)
	if err != nil {
		t.Fatal(err)
	}
	_ = decodeNumbers(b, &cp)
	signWith(cp, v.KeyID, ikm)
	if got := cp.params()["signature"].(map[string]any); !reflect.DeepEqual(got, reqSig) {
		t.Fatalf("request signature %v, want %v", got, reqSig)
	}
	// The response: verifyResponse accepts the vector and refuses a change.
	if err := verifyResponse(v.Response.Signed, ikm, v.SessionID); err != nil {
		t.Fatalf("response vector: %v", err)
	}
	if input, _ := signingInput(v.Response.Signed); string(input) != v.Response.SigningInput {
		t.Fatalf("response signing input\n%s\nwant\n%s", input, v.Response.SigningInput)
	}
	v.Response.Signed["result"].(map[string]any)["decision"] = "allow"
	if err := verifyResponse(v.Response.Signed, ikm, v.SessionID); err == nil {
		t.Fatal("a changed response verified")
	}
	// Python's uuid.uuid5 gives these.
	for _, c := range []struct{ ns, name, want string }{
		{namespaceURL, "claude-code:tool_use:toolu_01", "bb69ef78-bee5-5433-966b-42163844c642"},
		{"5c3f1b8e-9a0d-4c2e-8f4b-2d6a7e9c1b30", "codex:tool_use:call_1", "e712bcf1-c59c-5b15-a133-45212f11a9a6"},
	} {
		if got := uuid5(c.ns, c.name); got != c.want {
			t.Errorf("uuid5(%s, %q) = %s, want %s", c.ns, c.name, got, c.want)
		}
	}
	// The keys file the tests write is the format the brief gives.
	if y := conformanceKeys().yaml(); !strings.Contains(y, "default: default\n") || !strings.Contains(y, "session_key: {secret: \"hex:") || strings.Count(y, "  - {id: ") != 2 {
		t.Fatalf("keys file:\n%s", y)
	}
	if y := pythonAdapterKeys().yaml(); !strings.Contains(y, `secret: "text:`+pythonAdapterSecret+`"`) || len(pythonAdapterSecret) < 32 {
		t.Fatalf("keys file:\n%s", y)
	}
}

// ---------------------------------------------------------------------------
// Small things.

func equalJSON(a, b any) bool {
	x, err1 := acs.Canonical(a)
	y, err2 := acs.Canonical(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

func withoutSignature(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if k != "signature" {
			out[k] = v
		}
	}
	return out
}

// hex64 reports whether s is 64 lowercase hex digits.
func hex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// collector gathers core NATS messages from a callback.
type collector[T any] struct {
	mu    sync.Mutex
	items []T
}

func (c *collector[T]) add(v T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.items = append(c.items, v)
}

func (c *collector[T]) snapshot() []T {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.items)
}

// poll calls cond until it holds, and fails t if it does not within.
func poll(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.Eventually(t, within, 20*time.Millisecond, what, cond)
}
