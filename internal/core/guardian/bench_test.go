package guardian_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"testing"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/receipt"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// BenchmarkDecide measures the pure core per envelope — I-JSON check,
// schema validation of envelope and payload, typed decode, turn transition,
// response — over the example session, one session state carried through.
func BenchmarkDecide(b *testing.B) {
	envs := examples.Session("")
	envs = envs[:len(envs)-1] // without sessionEnd, so the session stays open
	g := guardian.New(newValidator(b), guardian.Config{})
	rs := defaultRules(b)
	var state *turnstate.Session
	var bytes int
	for _, e := range envs {
		bytes += len(e.Data)
	}
	b.SetBytes(int64(bytes / len(envs)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		e := envs[i%len(envs)]
		if i%len(envs) == 0 {
			// A fresh session each round keeps the turn ids unused.
			state = nil
		}
		route := acs.Route{Tenant: "default", SessionID: examples.SessionID, Hook: e.Hook}
		out := g.Decide(rs, state, nil, route, guardian.Message{Data: e.Data, Seq: uint64(i + 1)})
		if out.Refusal != nil || out.State == nil {
			b.Fatalf("%s refused: %v", e.Hook, out.Refusal)
		}
		state = out.State
	}
}

// BenchmarkDecideAndSeal is what the processor does per envelope with keys
// and receipts on: Decide, then Seal (HMAC signature, one encoding of the
// response, its receipt over those bytes).
func BenchmarkDecideAndSeal(b *testing.B) {
	envs := examples.Session("")
	envs = envs[:len(envs)-1]
	kr, err := acs.NewKeyring(map[string][]byte{"k1": bytes.Repeat([]byte{1}, 32)}, "k1", nil)
	if err != nil {
		b.Fatal(err)
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	g := guardian.New(newValidator(b), guardian.Config{Keys: kr, Receipts: receipt.NewSigner(priv)})
	rs := defaultRules(b)
	var state *turnstate.Session
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		e := envs[i%len(envs)]
		if i%len(envs) == 0 {
			state = nil
		}
		route := acs.Route{Tenant: "default", SessionID: examples.SessionID, Hook: e.Hook}
		out := g.Decide(rs, state, nil, route, guardian.Message{Data: e.Data, Seq: uint64(i + 1)})
		s, err := g.Seal(&out, uint64(i+1))
		if err != nil || out.Refusal != nil || len(s.Response) == 0 {
			b.Fatalf("%s: %v %v", e.Hook, err, out.Refusal)
		}
		state = out.State
	}
}
