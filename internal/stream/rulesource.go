package stream

import (
	"sync/atomic"

	"github.com/turnguard/turnguard/internal/rules"
)

// RuleSource holds the rule set the workers decide with. A reload swaps it
// whole; a batch uses the set it started with.
type RuleSource struct {
	current atomic.Pointer[rules.Set]
}

// NewRuleSource returns a source holding rs.
func NewRuleSource(rs *rules.Set) *RuleSource {
	s := &RuleSource{}
	s.current.Store(rs)
	return s
}

// Current returns the rule set in force.
func (s *RuleSource) Current() *rules.Set { return s.current.Load() }

// Swap puts a new rule set in force and returns the previous one.
func (s *RuleSource) Swap(rs *rules.Set) *rules.Set { return s.current.Swap(rs) }
