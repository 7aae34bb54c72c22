package guardian_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/alert"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/receipt"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/internal/testkit/acstest"
)

func testKeyring(t *testing.T) *acs.Keyring {
	t.Helper()
	kr, err := acs.NewKeyring(map[string][]byte{"k1": bytes.Repeat([]byte{7}, 32), "k2": bytes.Repeat([]byte{9}, 32)}, "k1", nil)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

// seal seals out as the processor does before publishing, checking that
// Decide left it unsigned.
func seal(t *testing.T, g *guardian.Guardian, out *guardian.Outcome, seq uint64) guardian.Sealed {
	t.Helper()
	if out.Response != nil && out.Response.Sig() != nil {
		t.Fatal("Decide signed the response")
	}
	s, err := g.Seal(out, seq)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// verifyResponse seals out and checks the published bytes' signature the
// way a client does.
func verifyResponse(t *testing.T, g *guardian.Guardian, kr *acs.Keyring, sessionID string, out *guardian.Outcome) *acs.Signature {
	t.Helper()
	raw := seal(t, g, out, 1).Response
	r := out.Response
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	_ = dec.Decode(&doc)
	input, err := acs.SigningInput(doc)
	if err != nil {
		t.Fatal(err)
	}
	sig := r.Sig()
	if sig == nil {
		t.Fatalf("response is not signed: %s", raw)
	}
	if err := kr.Verify(sig, sessionID, input); err != nil {
		t.Fatalf("response signature: %v\n%s", err, raw)
	}
	return sig
}

// Every decision on a content-bearing step carries the chain head after
// its ContextEntry; recomputing the chain from the envelopes gives the same
// heads. system/ping is not chained.
func TestChainHashes(t *testing.T) {
	g := guardian.New(newValidator(t), guardian.Config{})
	rs := defaultRules(t)
	var state *turnstate.Session
	prev := ""
	for i, e := range examples.Taint("") {
		route := acs.Route{Tenant: "default", SessionID: examples.TaintSessionID, Hook: e.Hook}
		out := g.Decide(rs, state, nil, route, guardian.Message{Data: e.Data, Seq: uint64(i + 1)})
		state = out.State
		var env struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		_ = json.Unmarshal(e.Data, &env)
		var p acs.Params
		_ = json.Unmarshal(env.Params, &p)
		rh, _ := acs.RequestHash(env.Params)
		var payload any
		dec := json.NewDecoder(bytes.NewReader(p.Payload))
		dec.UseNumber()
		_ = dec.Decode(&payload)
		entry := acs.ContextEntry{EntryID: strconv.Itoa(i + 1), StepID: p.RequestID, StepType: env.Method, RequestHash: rh,
			Timestamp: p.Timestamp, TurnID: p.Metadata.TurnID, ProvenanceSummary: acs.Summarize(acs.ProvenanceOf(payload))}
		want, err := acs.EntryHash(entry, prev)
		if err != nil {
			t.Fatal(err)
		}
		if got := out.Response.Result.ChainHash; got != want {
			t.Fatalf("%s: chain_hash %s, recomputed %s", e.Hook, got, want)
		}
		prev = want
	}
	if state.ChainLength != 6 || state.ChainHead != prev {
		t.Fatalf("state chain %d %s", state.ChainLength, state.ChainHead)
	}
	ping := g.Decide(rs, state, nil, acs.Route{Tenant: "default", SessionID: examples.TaintSessionID, Hook: "system"},
		guardian.Message{Data: envelope("system/ping", `{}`), Seq: 99})
	if ping.Response.Result.ChainHash != "" || ping.State != nil {
		t.Fatal("system/ping was chained")
	}
}

func TestSignaturesAndSkew(t *testing.T) {
	kr := testKeyring(t)
	now := time.Date(2026, 9, 19, 10, 0, 30, 0, time.UTC) // 30 s after the envelopes' timestamp
	msg := func(data []byte) guardian.Message { return guardian.Message{Data: data, Seq: 1, Time: now} }
	route := routeFor("steps/sessionStart")
	plain := envelope("steps/sessionStart", `{}`)
	tests := []struct {
		name     string
		cfg      guardian.Config
		data     []byte
		code     acs.Code
		signedBy string
	}{
		{"signed with k2, verified, answered with k2", guardian.Config{Keys: kr}, acstest.SignJSON(t, kr, "k2", plain), 0, "k2"},
		{"unsigned, signatures optional: answered with the default key", guardian.Config{Keys: kr}, plain, 0, "k1"},
		{"unsigned, signatures required", guardian.Config{Keys: kr, RequireSignatures: true}, plain, acs.CodeSignatureInvalid, "k1"},
		{"unknown key_id", guardian.Config{Keys: kr}, bytes.Replace(acstest.SignJSON(t, kr, "k2", plain), []byte(`"key_id":"k2"`), []byte(`"key_id":"k9"`), 1), acs.CodeSignatureInvalid, "k1"},
		{"tampered after signing", guardian.Config{Keys: kr}, bytes.Replace(acstest.SignJSON(t, kr, "k1", plain), []byte(`"agent_id":"a"`), []byte(`"agent_id":"b"`), 1), acs.CodeSignatureInvalid, "k1"},
		{"signed, timestamp inside the skew window", guardian.Config{Keys: kr, SkewWindow: time.Minute}, acstest.SignJSON(t, kr, "k1", plain), 0, "k1"},
		{"signed, timestamp outside the skew window", guardian.Config{Keys: kr, SkewWindow: 10 * time.Second}, acstest.SignJSON(t, kr, "k1", plain), acs.CodeTimestampOutOfWindow, "k1"},
		{"signed with k2, outside the skew window: refused with k2", guardian.Config{Keys: kr, SkewWindow: 10 * time.Second}, acstest.SignJSON(t, kr, "k2", plain), acs.CodeTimestampOutOfWindow, "k2"},
		{"unsigned, timestamp outside the skew window (ACS §10.3: signed or not)", guardian.Config{Keys: kr, SkewWindow: 10 * time.Second}, plain, acs.CodeTimestampOutOfWindow, "k1"},
		{"no keys, unsigned, timestamp outside the skew window", guardian.Config{SkewWindow: 10 * time.Second}, plain, acs.CodeTimestampOutOfWindow, ""},
		{"no keys: a signature cannot be checked and is not", guardian.Config{}, acstest.SignJSON(t, kr, "k1", plain), 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := guardian.New(newValidator(t), tc.cfg)
			out := g.Decide(defaultRules(t), nil, nil, route, msg(tc.data))
			switch {
			case tc.code == 0 && out.Refusal != nil:
				t.Fatalf("refused: %v", out.Refusal)
			case tc.code != 0 && (out.Refusal == nil || out.Refusal.Code != tc.code || out.Response.Error == nil || out.Response.Error.Code != int(tc.code)):
				t.Fatalf("want a %d error, got %+v / %+v", tc.code, out.Refusal, out.Response)
			}
			if tc.code == acs.CodeTimestampOutOfWindow && out.Response.Error.Data.SkewWindowMS != 10000 {
				t.Fatalf("error data %+v lacks skew_window_ms", out.Response.Error.Data)
			}
			if tc.signedBy == "" {
				if seal(t, g, &out, 1); out.Response.Sig() != nil {
					t.Fatal("signed without keys")
				}
				return
			}
			if sig := verifyResponse(t, g, kr, testSession, &out); sig.KeyID != tc.signedBy {
				t.Fatalf("answered with %s, want %s", sig.KeyID, tc.signedBy)
			}
		})
	}
}

func TestReceipts(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer := receipt.NewSigner(priv)
	g := guardian.New(newValidator(t), guardian.Config{Receipts: signer})
	out := g.Decide(defaultRules(t), nil, nil, routeFor("steps/sessionStart"), guardian.Message{Data: envelope("steps/sessionStart", `{}`), Seq: 1})
	sealed := seal(t, g, &out, 1)
	raw := sealed.Response
	route := routeFor("steps/sessionStart")
	// The receipt of the encoded bytes is the receipt of the value.
	if want, err := signer.Sign(receipt.Decision(route.Tenant, route.SessionID, 1), out.Response); err != nil || want != sealed.Receipt {
		t.Fatalf("receipt %q, Sign of the response %q (%v)", sealed.Receipt, want, err)
	}
	if sealed.Receipt == "" || receipt.Verify(signer.Public(), receipt.Decision(route.Tenant, route.SessionID, 1), raw, sealed.Receipt) != nil {
		t.Fatalf("receipt %q does not verify", sealed.Receipt)
	}
	// Bound to the envelope it answers: not to the next one, nor to the
	// same sequence in another session.
	if receipt.Verify(signer.Public(), receipt.Decision(route.Tenant, route.SessionID, 2), raw, sealed.Receipt) == nil {
		t.Fatal("the receipt verifies for another sequence")
	}
	if receipt.Verify(signer.Public(), receipt.Decision(route.Tenant, "00000000-0000-4000-8000-000000000000", 1), raw, sealed.Receipt) == nil {
		t.Fatal("the receipt verifies for another session")
	}
}

// TestDecideSignsNothing: Decide leaves signature and receipt to Seal, and
// sealing changes the response by its signature only: requests are still
// verified without it.
func TestDecideSignsNothing(t *testing.T) {
	kr := testKeyring(t)
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	g := guardian.New(newValidator(t), guardian.Config{Keys: kr, Receipts: receipt.NewSigner(priv), RequireSignatures: true})
	plain := envelope("steps/sessionStart", `{}`)
	for _, data := range [][]byte{acstest.SignJSON(t, kr, "k1", plain), plain} {
		out := g.Decide(defaultRules(t), nil, nil, routeFor("steps/sessionStart"), guardian.Message{Data: data, Seq: 1})
		if out.Response.Sig() != nil {
			t.Fatal("Decide signed")
		}
		bare, _ := json.Marshal(out.Response)
		sealed := seal(t, g, &out, 1)
		if sealed.Receipt == "" || out.Response.Sig() == nil {
			t.Fatal("Seal did not sign")
		}
		if out.Response.Result != nil {
			out.Response.Result.Signature = nil
		} else {
			out.Response.Error.Signature = nil
		}
		if a, _ := json.Marshal(out.Response); string(a) != string(bare) {
			t.Fatalf("responses differ beyond the signature:\n%s\n%s", a, bare)
		}
	}
}

// TestSealFails: a response whose signing key the keyring does not have is
// an error wrapping ErrSeal, never an unsigned response.
func TestSealFails(t *testing.T) {
	kr := testKeyring(t)
	g := guardian.New(newValidator(t), guardian.Config{Keys: kr})
	out := g.Decide(defaultRules(t), nil, nil, routeFor("steps/sessionStart"), guardian.Message{Data: envelope("steps/sessionStart", `{}`), Seq: 1})
	// The default key gone from the keyring (a configuration that changed
	// under a running core): the response cannot be signed.
	kr.Default = "gone"
	s, err := g.Seal(&out, 1)
	if !errors.Is(err, guardian.ErrSeal) || s.Response != nil {
		t.Fatalf("Seal: %v, %d bytes", err, len(s.Response))
	}
}

// TestRefusalsAnswerWithTheRequestsKey: a refusal of a signed request —
// here a payload that fails its schema — is signed with the key the
// request named, not the default, so that a deployment with several keys
// can verify it.
func TestRefusalsAnswerWithTheRequestsKey(t *testing.T) {
	kr := testKeyring(t)
	g := guardian.New(newValidator(t), guardian.Config{Keys: kr})
	bad := acstest.SignJSON(t, kr, "k2", envelope("steps/userMessage", `{"content":"not a list"}`))
	out := g.Decide(defaultRules(t), nil, nil, routeFor("steps/userMessage"), guardian.Message{Data: bad, Seq: 1})
	if out.Refusal == nil || out.Refusal.Reason != acs.ReasonPayloadInvalid {
		t.Fatalf("want a payload refusal, got %+v", out.Refusal)
	}
	if sig := verifyResponse(t, g, kr, testSession, &out); sig.KeyID != "k2" {
		t.Fatalf("refusal signed with %s, want k2", sig.KeyID)
	}
}

// TestSessionIDAsKeyID: with a session_key, a request whose key_id is its
// own session id (the ACS TypeScript host's and the wire probes'
// convention) verifies with the one deployment secret, and its answer is
// signed the same way; another session's id as key_id does not verify.
func TestSessionIDAsKeyID(t *testing.T) {
	kr, err := acs.NewKeyring(nil, "", bytes.Repeat([]byte{5}, 32))
	if err != nil {
		t.Fatal(err)
	}
	g := guardian.New(newValidator(t), guardian.Config{Keys: kr, RequireSignatures: true})
	plain := envelope("steps/sessionStart", `{}`)
	out := g.Decide(defaultRules(t), nil, nil, routeFor("steps/sessionStart"), guardian.Message{Data: acstest.SignJSON(t, kr, testSession, plain), Seq: 1})
	if out.Refusal != nil {
		t.Fatalf("refused: %v", out.Refusal)
	}
	if sig := verifyResponse(t, g, kr, testSession, &out); sig.KeyID != testSession {
		t.Fatalf("answered with key %s, want the session id", sig.KeyID)
	}
	other := bytes.Replace(acstest.SignJSON(t, kr, testSession, plain), []byte(`"key_id":"`+testSession+`"`), []byte(`"key_id":"00000000-0000-4000-8000-000000000999"`), 1)
	if out := g.Decide(defaultRules(t), nil, nil, routeFor("steps/sessionStart"), guardian.Message{Data: other, Seq: 2}); out.Refusal == nil || out.Refusal.Code != acs.CodeSignatureInvalid {
		t.Fatalf("another session's id as key_id: %+v", out.Refusal)
	}
}

// TestReplayAndMethodCodes pins the ACS §17 codes the core answers with:
// a request id or a nonce seen before in the session is -32005 and changes
// nothing; a method ACS does not define is -32601, one it defines that
// turnguard does not evaluate -32003.
func TestReplayAndMethodCodes(t *testing.T) {
	g := guardian.New(newValidator(t), guardian.Config{})
	rs := defaultRules(t)
	withNonce := func(data []byte, requestID, nonce string) []byte {
		var doc map[string]any
		_ = json.Unmarshal(data, &doc)
		p := doc["params"].(map[string]any)
		p["request_id"], p["nonce"] = requestID, nonce
		out, _ := json.Marshal(doc)
		return out
	}
	first := withNonce(envelope("steps/sessionStart", `{}`), "00000000-0000-4000-8000-000000000001", "nonce-0123456789abcdef")
	out := g.Decide(rs, nil, nil, routeFor("steps/sessionStart"), guardian.Message{Data: first, Seq: 1})
	if out.Refusal != nil || out.State == nil {
		t.Fatalf("first: %+v", out.Refusal)
	}
	state := out.State
	tests := []struct {
		name   string
		method string
		data   []byte
		code   acs.Code
		reason string
	}{
		{"the same request id", "steps/sessionStart", first, acs.CodeReplayDetected, acs.ReasonReplayed},
		{"the same nonce, another request id", "steps/sessionStart", withNonce(first, "00000000-0000-4000-8000-000000000002", "nonce-0123456789abcdef"), acs.CodeReplayDetected, acs.ReasonNonceReplayed},
		{"an undefined method", "steps/teleport", envelope("steps/teleport", `{}`), acs.CodeMethodNotFound, acs.ReasonMethodNotFound},
		{"a method outside ACS's namespaces", "foo/bar", envelope("foo/bar", `{}`), acs.CodeMethodNotFound, acs.ReasonMethodNotFound},
		{"a wrapped MCP method", "protocols/MCP/tools/call", envelope("protocols/MCP/tools/call", `{}`), acs.CodeCapabilityNotNegotiated, acs.ReasonUnknownMethod},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := state.Clone()
			out := g.Decide(rs, state, nil, routeFor(tc.method), guardian.Message{Data: tc.data, Seq: uint64(10 + i)})
			if out.Refusal == nil || out.Refusal.Code != tc.code || out.Refusal.Reason != tc.reason || out.Response.Error == nil || out.Response.Error.Code != int(tc.code) {
				t.Fatalf("want %d %s, got %+v / %+v", tc.code, tc.reason, out.Refusal, out.Response)
			}
			if out.State != nil || state.Envelopes != before.Envelopes || state.ChainLength != before.ChainLength {
				t.Fatal("a refusal changed the session")
			}
		})
	}
}

// TestRequestHashCoversTheSignature: a signed request's ContextEntry hashes
// its params as received, params.signature included, as the ACS Go
// reference (chain.RequestHash of the raw params) and the ACS adapters'
// conformance test do, so chains recomputed on either side agree.
func TestRequestHashCoversTheSignature(t *testing.T) {
	kr := testKeyring(t)
	g := guardian.New(newValidator(t), guardian.Config{Keys: kr})
	data := acstest.SignJSON(t, kr, "k1", envelope("steps/sessionStart", `{}`))
	out := g.Decide(defaultRules(t), nil, nil, routeFor("steps/sessionStart"), guardian.Message{Data: data, Seq: 1})
	if out.Refusal != nil {
		t.Fatal(out.Refusal)
	}
	var env struct {
		Params json.RawMessage `json:"params"`
	}
	_ = json.Unmarshal(data, &env)
	var p acs.Params
	_ = json.Unmarshal(env.Params, &p)
	head := func(params []byte) string {
		rh, err := acs.RequestHash(params)
		if err != nil {
			t.Fatal(err)
		}
		h, err := acs.EntryHash(acs.ContextEntry{EntryID: "1", StepID: p.RequestID, StepType: "steps/sessionStart", RequestHash: rh,
			Timestamp: p.Timestamp, ProvenanceSummary: acs.Summarize(nil)}, "")
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	var unsigned map[string]any
	_ = json.Unmarshal(env.Params, &unsigned)
	delete(unsigned, "signature")
	withoutSig, _ := json.Marshal(unsigned)
	if got := out.Response.Result.ChainHash; got != head(env.Params) || got == head(withoutSig) {
		t.Fatalf("chain_hash %s; over the signed params %s, without the signature %s", got, head(env.Params), head(withoutSig))
	}
}

// TestAlertReceipts: with receipts on, every alert carries a receipt bound
// to its subject and the envelope's stream sequence once sealed; Decide
// (all replay calls) makes none.
func TestAlertReceipts(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer := receipt.NewSigner(priv)
	for _, tc := range []struct {
		name string
		cfg  guardian.Config
		want bool
	}{{"sealed", guardian.Config{Receipts: signer}, true}, {"decided", guardian.Config{Receipts: signer}, false}} {
		t.Run(tc.name, func(t *testing.T) {
			g := guardian.New(newValidator(t), tc.cfg)
			rs := defaultRules(t)
			var state *turnstate.Session
			var out guardian.Outcome
			envs := examples.Taint("")
			for i, e := range envs {
				route := acs.Route{Tenant: "default", SessionID: examples.TaintSessionID, Hook: e.Hook}
				out = g.Decide(rs, state, nil, route, guardian.Message{Data: e.Data, Seq: uint64(i + 10)})
				state = out.State
			}
			seq := uint64(len(envs) - 1 + 10)
			if len(out.Alerts) != 1 {
				t.Fatalf("%d alerts", len(out.Alerts))
			}
			a := out.Alerts[0]
			if !tc.want {
				if out.Response.Sig() != nil {
					t.Fatal("Decide signed")
				}
				return
			}
			sealed := seal(t, g, &out, seq)
			if len(sealed.Alerts) != 1 {
				t.Fatalf("%d sealed alerts", len(sealed.Alerts))
			}
			raw, rcpt := sealed.Alerts[0].Body, sealed.Alerts[0].Receipt
			if err := receipt.Verify(signer.Public(), receipt.Alert(a.Subject, seq), raw, rcpt); err != nil {
				t.Fatalf("alert receipt: %v", err)
			}
			for _, other := range []receipt.Binding{receipt.Alert(a.Subject, seq+1), receipt.Decision("default", examples.TaintSessionID, seq),
				receipt.Alert(alert.Subject("default", "critical", a.RuleID), seq)} {
				if receipt.Verify(signer.Public(), other, raw, rcpt) == nil {
					t.Fatalf("the alert's receipt verifies for %+v", other)
				}
			}
		})
	}
}
