package guardian_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/acs"
	"github.com/turnguard/turnguard/internal/guardian"
	"github.com/turnguard/turnguard/internal/receipt"
	"github.com/turnguard/turnguard/internal/turnstate"
)

func testKeyring(t *testing.T) *acs.Keyring {
	t.Helper()
	kr, err := acs.NewKeyring(map[string][]byte{"k1": bytes.Repeat([]byte{7}, 32), "k2": bytes.Repeat([]byte{9}, 32)}, "k1")
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

// sign returns the envelope signed with keyID, as a framework would send it.
func sign(t *testing.T, kr *acs.Keyring, keyID string, data []byte) []byte {
	t.Helper()
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	params := doc["params"].(map[string]any)
	delete(params, "signature")
	input, err := acs.SigningInput(doc)
	if err != nil {
		t.Fatal(err)
	}
	sid := params["metadata"].(map[string]any)["session_id"].(string)
	sig, err := kr.Sign(keyID, sid, input)
	if err != nil {
		t.Fatal(err)
	}
	params["signature"] = sig
	out, _ := json.Marshal(doc)
	return out
}

// verifyResponse checks a response's signature the way a client does.
func verifyResponse(t *testing.T, kr *acs.Keyring, sessionID string, r *acs.Response) *acs.Signature {
	t.Helper()
	raw, _ := json.Marshal(r)
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
		{"signed with k2, verified, answered with k2", guardian.Config{Keys: kr}, sign(t, kr, "k2", plain), 0, "k2"},
		{"unsigned, signatures optional: answered with the default key", guardian.Config{Keys: kr}, plain, 0, "k1"},
		{"unsigned, signatures required", guardian.Config{Keys: kr, RequireSignatures: true}, plain, acs.CodeSignatureInvalid, "k1"},
		{"unknown key_id", guardian.Config{Keys: kr}, bytes.Replace(sign(t, kr, "k2", plain), []byte(`"key_id":"k2"`), []byte(`"key_id":"k9"`), 1), acs.CodeSignatureInvalid, "k1"},
		{"tampered after signing", guardian.Config{Keys: kr}, bytes.Replace(sign(t, kr, "k1", plain), []byte(`"agent_id":"a"`), []byte(`"agent_id":"b"`), 1), acs.CodeSignatureInvalid, "k1"},
		{"signed, timestamp inside the skew window", guardian.Config{Keys: kr, SkewWindow: time.Minute}, sign(t, kr, "k1", plain), 0, "k1"},
		{"signed, timestamp outside the skew window", guardian.Config{Keys: kr, SkewWindow: 10 * time.Second}, sign(t, kr, "k1", plain), acs.CodeTimestampOutOfWindow, "k1"},
		{"no keys: a signature cannot be checked and is not", guardian.Config{}, sign(t, kr, "k1", plain), 0, ""},
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
				if out.Response.Result.Signature != nil {
					t.Fatal("signed without keys")
				}
				return
			}
			if sig := verifyResponse(t, kr, testSession, out.Response); sig.KeyID != tc.signedBy {
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
	raw, _ := json.Marshal(out.Response)
	if out.Receipt == "" || receipt.Verify(signer.Public(), raw, out.Receipt) != nil {
		t.Fatalf("receipt %q does not verify", out.Receipt)
	}
}

// TestUnsignedDecidesTheSame checks that a core deciding without signing
// (as replay does) gives the decision a signing core gives, only without
// signature and receipt: requests are still verified.
func TestUnsignedDecidesTheSame(t *testing.T) {
	kr := testKeyring(t)
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signing := guardian.Config{Keys: kr, Receipts: receipt.NewSigner(priv), RequireSignatures: true}
	unsigned := signing
	unsigned.Unsigned = true
	plain := envelope("steps/sessionStart", `{}`)
	for _, data := range [][]byte{sign(t, kr, "k1", plain), plain} {
		full := guardian.New(newValidator(t), signing).Decide(defaultRules(t), nil, nil, routeFor("steps/sessionStart"), guardian.Message{Data: data, Seq: 1})
		bare := guardian.New(newValidator(t), unsigned).Decide(defaultRules(t), nil, nil, routeFor("steps/sessionStart"), guardian.Message{Data: data, Seq: 1})
		if full.Receipt == "" || full.Response.Sig() == nil {
			t.Fatal("the signing core did not sign")
		}
		if bare.Receipt != "" || bare.Response.Sig() != nil {
			t.Fatal("the unsigned core signed")
		}
		if (full.Refusal == nil) != (bare.Refusal == nil) {
			t.Fatalf("refusals differ: %v vs %v", full.Refusal, bare.Refusal)
		}
		if full.Response.Result != nil {
			full.Response.Result.Signature = nil
		} else {
			full.Response.Error.Signature = nil
		}
		a, _ := json.Marshal(full.Response)
		b, _ := json.Marshal(bare.Response)
		if string(a) != string(b) {
			t.Fatalf("responses differ beyond the signature:\n%s\n%s", a, b)
		}
	}
}
