package receipt_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/receipt"
)

func TestReceipts(t *testing.T) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s := receipt.NewSigner(priv)
	r := &acs.Response{JSONRPC: "2.0", ID: json.RawMessage(`"x"`), Result: &acs.Result{Type: "final", ACSVersion: "0.1.0", RequestID: "r", Decision: acs.Deny, Reasoning: "no <script> & such"}}
	b := receipt.Decision("default", sessionA, 7)
	rc, err := s.Sign(b, r)
	if err != nil {
		t.Fatal(err)
	}
	// The receipt verifies against the decision as any serializer writes it.
	raw, _ := json.MarshalIndent(r, "", "  ")
	pub, err := receipt.ParsePublicPEM(s.PublicPEM())
	if err != nil {
		t.Fatal(err)
	}
	if err := receipt.Verify(pub, b, raw, rc); err != nil {
		t.Fatalf("receipt does not verify: %v", err)
	}
	r.Result.Decision = acs.Allow
	tampered, _ := json.Marshal(r)
	if err := receipt.Verify(pub, b, tampered, rc); !errors.Is(err, receipt.ErrMismatch) {
		t.Fatalf("a tampered decision: %v", err)
	}
	if again, _ := s.Sign(b, &acs.Response{JSONRPC: "2.0", ID: json.RawMessage(`"x"`), Result: &acs.Result{Type: "final", ACSVersion: "0.1.0", RequestID: "r", Decision: acs.Deny, Reasoning: "no <script> & such"}}); again != rc {
		t.Fatal("receipts are not deterministic")
	}
}

const (
	sessionA = "7f3c2a9e-4b1d-4e8a-9c6f-2d5e8a1b3c70"
	sessionB = "3b9d6f2e-8c41-4e7a-b5d0-9a2c4e6f8b13"
)

// kat is the known-answer key: the Ed25519 key of seed 00 01 … 1f.
func kat() *receipt.Signer {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(i)
	}
	return receipt.NewSigner(ed25519.NewKeyFromSeed(seed))
}

// katBody is a decision as published (not canonical: members out of
// order, spaces), so that the vector pins the canonicalization too.
const katBody = `{"result": {"decision": "deny", "type": "final", "request_id": "b2d8f1a0-6c3e-4d5f-9a7b-1e2f3a4b5c06", "acs_version": "0.1.0"}, "jsonrpc": "2.0", "id": "b2d8f1a0-6c3e-4d5f-9a7b-1e2f3a4b5c06"}`

// TestKnownAnswer pins the exact signed bytes and the receipt of a fixed
// key, binding and body: an implementation in another language (or a
// later turnguard) must reproduce both. The README documents the same.
func TestKnownAnswer(t *testing.T) {
	s := kat()
	b := receipt.Decision("default", sessionB, 6)
	c, err := acs.CanonicalRaw([]byte(katBody))
	if err != nil {
		t.Fatal(err)
	}
	msg, err := receipt.Message(b, c)
	if err != nil {
		t.Fatal(err)
	}
	const wantMsg = "turnguard-receipt/1\ndecision\nacs.decisions.default.3b9d6f2e-8c41-4e7a-b5d0-9a2c4e6f8b13\n6\n" +
		`{"id":"b2d8f1a0-6c3e-4d5f-9a7b-1e2f3a4b5c06","jsonrpc":"2.0","result":{"acs_version":"0.1.0","decision":"deny","request_id":"b2d8f1a0-6c3e-4d5f-9a7b-1e2f3a4b5c06","type":"final"}}`
	if string(msg) != wantMsg {
		t.Fatalf("signed message\n%q\nwant\n%q", msg, wantMsg)
	}
	rc, err := s.Sign(b, json.RawMessage(katBody))
	if err != nil {
		t.Fatal(err)
	}
	if rc != katReceipt || s.KeyID != katKeyID {
		t.Fatalf("receipt %s key %s, want %s key %s", rc, s.KeyID, katReceipt, katKeyID)
	}
	if err := receipt.Verify(s.Public(), b, []byte(katBody), katReceipt); err != nil {
		t.Fatal(err)
	}
}

// The vector was computed independently of this package (Python's
// cryptography, JSON with sorted keys and no spaces, which is RFC 8785 for
// this body) and the signature checked with openssl pkeyutl -verify
// -rawin, as the README shows.
const (
	katReceipt = "VYflq5kOvN7sY7QPQG76n38ZLSYUxBtnH4w/pGgIU8TC/96r47JBKVOObh+UCX2zdmv2Evf1rkxcijjeL0njDQ=="
	katKeyID   = "56475aa75463474c"
)

// TestBinding: a receipt verifies for the binding it was made for and no
// other — not the next sequence, not another session, not another kind
// (an alert's or the endpoint's receipt is no decision's).
func TestBinding(t *testing.T) {
	s := kat()
	body := []byte(katBody)
	made := receipt.Decision("default", sessionA, 41)
	rc, err := s.Sign(made, json.RawMessage(body))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		b    receipt.Binding
		ok   bool
	}{
		{"the envelope it answers", made, true},
		{"the next envelope", receipt.Decision("default", sessionA, 42), false},
		{"the previous envelope", receipt.Decision("default", sessionA, 40), false},
		{"the same sequence in another session", receipt.Decision("default", sessionB, 41), false},
		{"the same session in another tenant", receipt.Decision("acme", sessionA, 41), false},
		{"as an alert on the decision subject", receipt.Alert(made.Subject, 41), false},
		{"as the endpoint's answer", receipt.Endpoint("default", sessionA), false},
		{"sequence 0", receipt.Decision("default", sessionA, 0), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := receipt.Verify(s.Public(), tt.b, body, rc)
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok %v", err, tt.ok)
			}
		})
	}
}

func TestMalformed(t *testing.T) {
	s := kat()
	b := receipt.Decision("default", sessionA, 1)
	rc, _ := s.Sign(b, json.RawMessage(katBody))
	tests := []struct {
		name    string
		b       receipt.Binding
		body    string
		receipt string
		want    error
	}{
		{"no receipt", b, katBody, "", receipt.ErrMissing},
		{"AAAA", b, katBody, "AAAA", receipt.ErrMalformed},
		{"not base64", b, katBody, strings.Repeat("!", len(rc)), receipt.ErrMalformed},
		{"64 zero bytes", b, katBody, strings.Repeat("A", 86) + "==", receipt.ErrMismatch},
		{"body not JSON", b, "allow", rc, receipt.ErrMalformed},
		{"subject with a newline", receipt.Binding{Kind: receipt.KindDecision, Subject: "acs.decisions.default.x\n1", Seq: 1}, katBody, rc, receipt.ErrMalformed},
		{"unknown kind", receipt.Binding{Kind: "verdict", Subject: b.Subject, Seq: 1}, katBody, rc, receipt.ErrMalformed},
		{"decision without subject", receipt.Binding{Kind: receipt.KindDecision, Seq: 1}, katBody, rc, receipt.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := receipt.Verify(s.Public(), tt.b, []byte(tt.body), tt.receipt); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestTrusted(t *testing.T) {
	s := kat()
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	o := receipt.NewSigner(other)
	b := receipt.Decision("default", sessionA, 3)
	rc, _ := s.Sign(b, json.RawMessage(katBody))
	byOther, _ := o.Sign(b, json.RawMessage(katBody))
	both, err := receipt.NewTrusted(o.Public(), s.Public())
	if err != nil {
		t.Fatal(err)
	}
	onlyOther, _ := receipt.NewTrusted(o.Public())
	tests := []struct {
		name    string
		trusted *receipt.Trusted
		keyID   string
		receipt string
		wantKey string
		want    error
	}{
		{"named key", both, s.KeyID, rc, s.KeyID, nil},
		{"no key named: every key is tried", both, "", rc, s.KeyID, nil},
		{"the other trusted key", both, o.KeyID, byOther, o.KeyID, nil},
		{"named key did not make it", both, o.KeyID, rc, "", receipt.ErrMismatch},
		{"untrusted key named", onlyOther, s.KeyID, rc, "", receipt.ErrUnknownKey},
		{"untrusted key, none named", onlyOther, "", rc, "", receipt.ErrUnknownKey},
		{"a forger's header: unknown id", both, "AAAA", rc, "", receipt.ErrUnknownKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := tt.trusted.Verify(tt.keyID, b, []byte(katBody), tt.receipt)
			if !errors.Is(err, tt.want) || id != tt.wantKey {
				t.Fatalf("(%q, %v), want (%q, %v)", id, err, tt.wantKey, tt.want)
			}
		})
	}
	if _, err := receipt.NewTrusted(ed25519.PublicKey("short")); err == nil {
		t.Fatal("a short key was trusted")
	}
}

// FuzzVerify feeds untrusted receipts, key ids, bodies and bindings (what
// a message on a decision subject carries) to the verifiers: nothing may
// panic, and nothing but the genuine receipt of the genuine body and
// binding may verify.
func FuzzVerify(f *testing.F) {
	s := kat()
	b := receipt.Decision("default", sessionA, 6)
	rc, _ := s.Sign(b, json.RawMessage(katBody))
	trusted, _ := receipt.NewTrusted(s.Public())
	// The same body and binding at index 1 of a batch of two: the one
	// other receipt that may verify.
	var bt receipt.Batch
	c, _ := acs.CanonicalRaw([]byte(katBody))
	b5 := receipt.Decision("default", sessionA, 5)
	_, _ = bt.Add(b5, c)
	_, _ = bt.Add(b, c)
	brcs, _ := s.SignBatch(&bt)
	brc := brcs[1]
	f.Add(rc, s.KeyID, katBody, b.Subject, uint64(6), "decision")
	f.Add(brc, s.KeyID, katBody, b.Subject, uint64(6), "decision")
	f.Add(brcs[0], "", katBody, b.Subject, uint64(5), "decision")
	f.Add(brc+".0", "", katBody, b.Subject, uint64(6), "decision")
	f.Add("AAAA", "", `{"result":{"decision":"allow"}}`, b.Subject, uint64(6), "decision")
	f.Add(rc, "", katBody, b.Subject, uint64(7), "alert")
	f.Add(strings.Repeat("A", 86)+"==", "x", "[]", "", uint64(0), "endpoint")
	f.Fuzz(func(t *testing.T, rcpt, keyID, body, subject string, seq uint64, kind string) {
		fb := receipt.Binding{Kind: receipt.Kind(kind), Subject: subject, Seq: seq}
		err := receipt.Verify(s.Public(), fb, []byte(body), rcpt)
		_, terr := trusted.Verify(keyID, fb, []byte(body), rcpt)
		if err == nil || terr == nil {
			c, cerr := acs.CanonicalRaw([]byte(body))
			want, _ := acs.CanonicalRaw([]byte(katBody))
			if cerr != nil || string(c) != string(want) || !(fb == b && (rcpt == rc || rcpt == brc) || fb == b5 && rcpt == brcs[0]) {
				t.Fatalf("verified: receipt %q body %q binding %+v (Verify %v, Trusted %v)", rcpt, body, fb, err, terr)
			}
		}
	})
}

// BenchmarkVerify is what a verifier (pkg/client, the HTTP endpoint, replay
// verify) pays per decision: canonicalising the body and one Ed25519
// verification.
func BenchmarkVerify(b *testing.B) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	s := receipt.NewSigner(priv)
	body := []byte(`{"jsonrpc":"2.0","id":"a1c7e9f0-3b2d-4c5e-8f61-0d2e4a6b8c06","result":{"type":"final","acs_version":"0.1.0","request_id":"a1c7e9f0-3b2d-4c5e-8f61-0d2e4a6b8c06","decision":"deny","reasoning":"Blocked Bash: untrusted content entered the session 1 turn(s) ago","reason_codes":["untrusted_into_consequential","aarm_cumulative_taint"],"metadata":{"evaluator":"deterministic"}}}`)
	bind := receipt.Decision("default", "3b9d6f2e-8c41-4e7a-b5d0-9a2c4e6f8b13", 6)
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		b.Fatal(err)
	}
	rc, err := s.Sign(bind, doc)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := receipt.Verify(s.Public(), bind, body, rc); err != nil {
			b.Fatal(err)
		}
	}
}

// TestWithObserver: a signer with an observer times every signature and
// signs as the signer it came from; that one stays untimed.
func TestWithObserver(t *testing.T) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	plain := receipt.NewSigner(key)
	var took []time.Duration
	// A clock that moves a millisecond each time it is read: the signature
	// is timed by the clock given, not the wall clock.
	clock := time.Unix(0, 0)
	tick := func() time.Time { clock = clock.Add(time.Millisecond); return clock }
	timed := plain.WithObserver(tick, func(d time.Duration) { took = append(took, d) })
	b := receipt.Alert("acs.alerts.default.high.r1", 7)
	want, err := plain.Sign(b, map[string]any{"a": 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(took) != 0 {
		t.Fatalf("the original signer was timed: %v", took)
	}
	got, err := timed.Sign(b, map[string]any{"a": 1})
	if err != nil || got != want || timed.KeyID != plain.KeyID {
		t.Fatalf("timed signer: %q, %v, key %s; want %q, key %s", got, err, timed.KeyID, want, plain.KeyID)
	}
	if len(took) != 1 || took[0] != time.Millisecond {
		t.Fatalf("timings %v, want one", took)
	}
}
