package callersig_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/turnguard/turnguard/internal/callersig"
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

func newUser(t testing.TB) (nkeys.KeyPair, callersig.Signer) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	return kp, callersig.Signer{Key: pub, Sign: kp.Sign}
}

// Caller names the user whose signature verifies for this very envelope
// on this very subject, and calls every other use of the headers forged:
// a signature moves to no other body, session, hook or tenant, and no
// other user can claim the key.
func TestCaller(t *testing.T) {
	const subject = "acs.hooks.acme.s1.toolCallRequest"
	body := []byte(`{"method":"steps/toolCallRequest"}`)
	_, alice := newUser(t)
	_, bob := newUser(t)
	signed := func(s callersig.Signer, subject string, body []byte) nats.Header {
		h := nats.Header{}
		if err := s.Set(h, subject, body); err != nil {
			t.Fatal(err)
		}
		return h
	}
	with := func(h nats.Header, key, value string) nats.Header {
		c := nats.Header{}
		for k, v := range h {
			c[k] = append([]string(nil), v...)
		}
		c.Set(key, value)
		return c
	}
	account, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	accountPub, _ := account.PublicKey()
	accountSigned := signed(callersig.Signer{Key: alice.Key, Sign: account.Sign}, subject, body)
	accountSigned.Set(acs.HdrCallerKey, accountPub)
	twoKeys := signed(alice, subject, body)
	twoKeys.Add(acs.HdrCallerKey, alice.Key)

	for _, tc := range []struct {
		name     string
		h        nats.Header
		subject  string
		want     string
		wantSeen bool
	}{
		{"no headers", nats.Header{}, subject, "", false},
		{"signed", signed(alice, subject, body), subject, turnstate.NATSCaller(alice.Key), true},
		{"stored under its partition", signed(alice, subject, body), acs.InboundOf(acs.PartitionedPrefix + ".3.acme.s1.toolCallRequest"), turnstate.NATSCaller(alice.Key), true},
		{"bob claims alice's key", with(signed(bob, subject, body), acs.HdrCallerKey, alice.Key), subject, turnstate.CallerForged, true},
		{"another body's signature", signed(alice, subject, []byte(`{}`)), subject, turnstate.CallerForged, true},
		{"another session's", signed(alice, "acs.hooks.acme.s2.toolCallRequest", body), subject, turnstate.CallerForged, true},
		{"another hook's", signed(alice, "acs.hooks.acme.s1.userMessage", body), subject, turnstate.CallerForged, true},
		{"another tenant's", signed(alice, "acs.hooks.other.s1.toolCallRequest", body), subject, turnstate.CallerForged, true},
		{"key without signature", nats.Header{acs.HdrCallerKey: {alice.Key}}, subject, turnstate.CallerForged, true},
		{"signature without key", nats.Header{acs.HdrCallerSig: {"AAAA"}}, subject, turnstate.CallerForged, true},
		{"signature not base64", with(signed(alice, subject, body), acs.HdrCallerSig, "!!"), subject, turnstate.CallerForged, true},
		{"two keys", twoKeys, subject, turnstate.CallerForged, true},
		{"an account key", accountSigned, subject, turnstate.CallerForged, true},
		{"a seed for a key", with(signed(alice, subject, body), acs.HdrCallerKey, "SUAMLK2ZNL35WSMW37E7UD4VZ7ELPKW7DHC3BWBSD2GCZ7IUQQXZIORRBU"), subject, turnstate.CallerForged, true},
	} {
		got, seen := callersig.Caller(tc.h, tc.subject, body)
		if got != tc.want || seen != tc.wantSeen {
			t.Errorf("%s: Caller = %q, %v; want %q, %v", tc.name, got, seen, tc.want, tc.wantSeen)
		}
	}
}

func TestSignerCheck(t *testing.T) {
	_, alice := newUser(t)
	if err := alice.Check(); err != nil {
		t.Errorf("a user's signer: %v", err)
	}
	account, _ := nkeys.CreateAccount()
	pub, _ := account.PublicKey()
	if err := (callersig.Signer{Key: pub, Sign: account.Sign}).Check(); !errors.Is(err, callersig.ErrNotUserKey) {
		t.Errorf("an account's signer: %v, want ErrNotUserKey", err)
	}
	if err := (callersig.Signer{Key: alice.Key}).Check(); err == nil {
		t.Error("a signer without a signing function passed the check")
	}
	failing := callersig.Signer{Key: alice.Key, Sign: func([]byte) ([]byte, error) { return nil, errors.New("creds file gone") }}
	if err := failing.Set(nats.Header{}, "acs.hooks.a.s.x", nil); err == nil {
		t.Error("Set hid the signing function's error")
	}
}

// FuzzCaller: the headers are the publisher's, so anything may be in
// them; Caller never panics, and names a user only for a signature that
// verifies.
func FuzzCaller(f *testing.F) {
	// A fixed key: the fuzzing workers run this setup again, in processes
	// of their own, and must hold the key the seeds were signed with.
	kp, err := nkeys.CreatePairWithRand(nkeys.PrefixByteUser, bytes.NewReader(bytes.Repeat([]byte{7}, 64)))
	if err != nil {
		f.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	alice := callersig.Signer{Key: pub, Sign: kp.Sign}
	body := []byte(`{"a":1}`)
	const subject = "acs.hooks.t.s.userMessage"
	sig, _ := kp.Sign(acs.CallerSigningInput(subject, body))
	f.Add(alice.Key, base64.RawURLEncoding.EncodeToString(sig), body)
	f.Add("", "", []byte(nil))
	f.Add("UABC", "====", []byte("x"))
	f.Fuzz(func(t *testing.T, key, sig string, body []byte) {
		h := nats.Header{acs.HdrCallerKey: {key}, acs.HdrCallerSig: {sig}}
		got, seen := callersig.Caller(h, subject, body)
		if !seen {
			t.Fatal("headers present, Caller saw none")
		}
		if got != turnstate.CallerForged && got != turnstate.NATSCaller(key) {
			t.Fatalf("Caller = %q for key %q", got, key)
		}
		if got != turnstate.CallerForged {
			s, err := base64.RawURLEncoding.DecodeString(sig)
			if err != nil || kp.Verify(acs.CallerSigningInput(subject, body), s) != nil || key != alice.Key {
				t.Fatalf("Caller accepted key %q sig %q", key, sig)
			}
		}
	})
}
