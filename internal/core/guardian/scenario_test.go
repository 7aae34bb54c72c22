package guardian_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/ruletest"
	"github.com/turnguard/turnguard/internal/scenario"
	rulepack "github.com/turnguard/turnguard/rules"
	"github.com/turnguard/turnguard/schema"
)

// TestScenarios runs every scenario of testdata/scenarios through the pure
// core with the default rule pack, message by message, with stream
// sequence = position in the file, exactly as the processor would see them
// on a fresh stream. Every response must be a valid ACS response envelope.
func TestScenarios(t *testing.T) {
	paths, err := filepath.Glob("../../../testdata/scenarios/*.yaml")
	if err != nil || len(paths) < 4 {
		t.Fatalf("found %d scenarios (%v)", len(paths), err)
	}
	v := newValidator(t)
	g := guardian.New(v, guardian.Config{})
	rs := defaultRules(t)
	for _, p := range paths {
		sc, err := scenario.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(sc.Name, func(t *testing.T) {
			res := ruletest.Run(g, rs, sc)
			for _, f := range res.Failures {
				t.Error(f)
			}
			for _, out := range res.Outcomes {
				checkResponse(t, v, out.Response)
			}
		})
	}
}

func defaultRules(t testing.TB) *policy.Set {
	t.Helper()
	rs, err := rulepack.DefaultSet()
	if err != nil {
		t.Fatal(err)
	}
	return rs
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
