// Package guardiantest builds what tests decide envelopes with: the pure
// core over the embedded ACS schemas, and the default rule pack.
//
// Only tests import it (internal/deps_test.go holds the module to that, for
// all of internal/testkit).
package guardiantest

import (
	"testing"

	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/policy"
	rulepack "github.com/turnguard/turnguard/rules"
	"github.com/turnguard/turnguard/schema"
)

// Pure is the decision core with the embedded schemas and no options.
func Pure(t testing.TB) *guardian.Guardian {
	t.Helper()
	return New(t, guardian.Config{})
}

// New is the decision core with the embedded schemas and cfg (a receipt
// signer, say).
func New(t testing.TB, cfg guardian.Config) *guardian.Guardian {
	t.Helper()
	v, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	return guardian.New(v, cfg)
}

// DefaultRules is the default rule pack, compiled.
func DefaultRules(t testing.TB) *policy.Set {
	t.Helper()
	rs, err := rulepack.DefaultSet()
	if err != nil {
		t.Fatal(err)
	}
	return rs
}
