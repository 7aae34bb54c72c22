package guardian_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/acs"
	"github.com/turnguard/turnguard/internal/guardian"
	"github.com/turnguard/turnguard/internal/turnstate"
)

// BenchmarkDecide measures the pure core per envelope — I-JSON check,
// schema validation of envelope and payload, typed decode, turn transition,
// response — over the example session, one session state carried through.
func BenchmarkDecide(b *testing.B) {
	files, _ := filepath.Glob("../../examples/session/[0-9][0-9]-*.json")
	type in struct {
		route acs.Route
		data  []byte
	}
	var ins []in
	for _, f := range files[:7] { // all but sessionEnd, so the session stays open
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		hook := strings.TrimSuffix(filepath.Base(f)[3:], ".json")
		ins = append(ins, in{acs.Route{Tenant: "default", SessionID: "7f3c2a9e-4b1d-4e8a-9c6f-2d5e8a1b3c70", Hook: hook}, data})
	}
	g := guardian.New(newValidator(b), guardian.Config{})
	state := turnstate.New("default", "7f3c2a9e-4b1d-4e8a-9c6f-2d5e8a1b3c70")
	var bytes int64
	for _, x := range ins {
		bytes += int64(len(x.data))
	}
	b.SetBytes(bytes / int64(len(ins)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		x := ins[i%len(ins)]
		if i%len(ins) == 0 {
			// A fresh session each round keeps the turn ids unused.
			state = turnstate.New("default", "7f3c2a9e-4b1d-4e8a-9c6f-2d5e8a1b3c70")
		}
		out := g.Decide(state, x.route, guardian.Message{Data: x.data, Seq: uint64(i + 1)})
		if out.Refusal != nil || out.State == nil {
			b.Fatalf("envelope %d refused: %v", i%len(ins), out.Refusal)
		}
		state = out.State
	}
}
