package guardian_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/acs"
	"github.com/turnguard/turnguard/internal/guardian"
	"github.com/turnguard/turnguard/internal/scenario"
	"github.com/turnguard/turnguard/internal/turnstate"
	"github.com/turnguard/turnguard/schema"
)

// TestScenarios runs every scenario of testdata/scenarios through the pure
// core, message by message, with stream sequence = position in the file,
// exactly as the processor would see them on a fresh stream.
func TestScenarios(t *testing.T) {
	paths, err := filepath.Glob("../../testdata/scenarios/*.yaml")
	if err != nil || len(paths) < 4 {
		t.Fatalf("found %d scenarios (%v)", len(paths), err)
	}
	v := newValidator(t)
	g := guardian.New(v, guardian.Config{})
	for _, p := range paths {
		sc, err := scenario.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(sc.Name, func(t *testing.T) {
			built, err := sc.Build()
			if err != nil {
				t.Fatal(err)
			}
			states := map[string]*turnstate.Session{}
			for i, m := range built.Messages {
				msg := guardian.Message{Subject: m.Subject, Data: m.Data, Seq: uint64(i + 1), Time: sc.Start.Add(time.Duration(i) * time.Second)}
				out := decideInbound(g, states, msg)
				checkResponse(t, v, out.Response)
				if err := m.Expect.Check(observe(out)); err != nil {
					t.Errorf("step %d (%s): %v", i+1, m.Subject, err)
				}
			}
			for _, want := range built.States {
				got, ok := states[acs.SessionKey(want.Tenant, want.SessionID)]
				if !ok {
					t.Errorf("session %s has no state", want.Alias)
					continue
				}
				raw, _ := json.Marshal(got)
				if err := scenario.CheckState(want.Alias, raw, want.Fields); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// decideInbound routes a message the way the stream and a partition worker
// do, and keeps the states the way the KV bucket does.
func decideInbound(g *guardian.Guardian, states map[string]*turnstate.Session, msg guardian.Message) guardian.Outcome {
	route, err := acs.ParseInbound(msg.Subject)
	if err != nil {
		return g.Unroutable(err)
	}
	out := g.Decide(states[route.SessionKey()], route, msg)
	if out.State != nil {
		states[route.SessionKey()] = out.State
	}
	if s := out.Spawned; s != nil {
		if _, exists := states[s.Key()]; !exists {
			states[s.Key()] = s
		}
	}
	return out
}

func observe(out guardian.Outcome) scenario.Observed {
	o := scenario.Observed{Decision: "none", DeadLetter: out.Refusal != nil}
	if out.Refusal != nil {
		o.Code = int(out.Refusal.Code)
	}
	for _, v := range out.Violations {
		o.Violations = append(o.Violations, v.Name)
	}
	switch r := out.Response; {
	case r == nil:
	case r.Error != nil:
		o.Decision, o.Code = "error", r.Error.Code
	default:
		o.Decision, o.ReasonCodes = string(r.Result.Decision), r.Result.ReasonCodes
	}
	return o
}

// checkResponse holds every response the core produces to the ACS response
// envelope schema.
func checkResponse(t *testing.T, v *schema.Validator, r *acs.Response) {
	t.Helper()
	if r == nil {
		return
	}
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := schema.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.ValidateResponse(doc); err != nil {
		t.Errorf("response does not validate: %v\n%s", err, raw)
	}
}

func newValidator(t testing.TB) *schema.Validator {
	t.Helper()
	v, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	return v
}
