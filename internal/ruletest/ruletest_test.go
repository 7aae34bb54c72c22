package ruletest_test

import (
	"testing"

	"github.com/turnguard/turnguard/internal/guardian"
	"github.com/turnguard/turnguard/internal/rules"
	"github.com/turnguard/turnguard/internal/ruletest"
	"github.com/turnguard/turnguard/schema"
)

func newGuardian(t testing.TB) *guardian.Guardian {
	t.Helper()
	v, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	return guardian.New(v, guardian.Config{})
}

// The default pack's own test cases pass.
func TestDefaultPackCases(t *testing.T) {
	rs, err := rules.Default()
	if err != nil {
		t.Fatal(err)
	}
	results := ruletest.RunSet(newGuardian(t), rs)
	if len(results) < 6 {
		t.Fatalf("the default pack carries %d test cases, want at least 6", len(results))
	}
	for _, r := range results {
		for _, f := range r.Failures {
			t.Errorf("%s:%d: %s: %s", r.File, r.Pos.Line, r.Name, f)
		}
	}
}

// The taint-window edge cases of testdata/windows.yaml, one test case each:
// same turn, taint after the action, the last turn inside and the first
// outside, a duration ending first, refresh, clearing, nested turns, with
// and without provenance, lineage, and shadow mode.
func TestWindowEdges(t *testing.T) {
	rs, err := rules.LoadFiles("testdata/windows.yaml")
	if err != nil {
		t.Fatal(err)
	}
	results := ruletest.RunSet(newGuardian(t), rs)
	if len(results) < 10 {
		t.Fatalf("%d cases, want the 10 edge cases", len(results))
	}
	for _, r := range results {
		t.Run(r.Name, func(t *testing.T) {
			for _, f := range r.Failures {
				t.Error(f)
			}
		})
	}
}

// An agent-keyed threshold counts across the agent's sessions.
func TestAgentThreshold(t *testing.T) {
	rs, err := rules.LoadFiles("testdata/agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !rs.AgentKeyed() {
		t.Fatal("the set does not report its agent-keyed rule")
	}
	for _, r := range ruletest.RunSet(newGuardian(t), rs) {
		for _, f := range r.Failures {
			t.Errorf("%s: %s", r.Name, f)
		}
	}
}

// Every threshold scope: per turn, per session, within turns, within a
// duration, consecutive.
func TestThresholdScopes(t *testing.T) {
	rs, err := rules.LoadFiles("testdata/thresholds.yaml")
	if err != nil {
		t.Fatal(err)
	}
	results := ruletest.RunSet(newGuardian(t), rs)
	if len(results) != 4 {
		t.Fatalf("%d cases", len(results))
	}
	for _, r := range results {
		for _, f := range r.Failures {
			t.Errorf("%s: %s", r.Name, f)
		}
	}
}
