package policy

import "sync/atomic"

// Source holds the rule set the processor decides with. A reload swaps it
// whole; a batch uses the set it started with. It lives with the rules, not
// with the processor, so that whoever reloads (internal/reload) and whoever
// decides (internal/stream, the gateway's tests) share it without the
// reloader depending on the streaming side.
type Source struct {
	current atomic.Pointer[Set]
}

// NewSource returns a source holding rs.
func NewSource(rs *Set) *Source {
	s := &Source{}
	s.current.Store(rs)
	return s
}

// Current returns the rule set in force.
func (s *Source) Current() *Set { return s.current.Load() }

// Swap puts a new rule set in force and returns the previous one.
func (s *Source) Swap(rs *Set) *Set { return s.current.Swap(rs) }
