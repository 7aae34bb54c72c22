package guardian_test

import (
	"testing"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/acs"
	"github.com/turnguard/turnguard/internal/guardian"
	"github.com/turnguard/turnguard/internal/turnstate"
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
