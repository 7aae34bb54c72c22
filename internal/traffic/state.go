package traffic

import (
	"errors"
	"fmt"
	"maps"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// State is what a session's stored state (turnstate.Session in
// ACS_TURNSTATE) must show after a prefix of its envelopes was processed.
// Only counters that do not depend on where the envelopes landed in the
// stream are included: no sequences, no hashes.
type State struct {
	Status       turnstate.Status
	Envelopes    uint64
	TurnsStarted int
	OpenTurns    int
	// Decisions counts the decisions by disposition; RuleHits the rule
	// hits by rule id (every hit of a generated envelope raises an alert).
	Decisions map[acs.Disposition]uint64
	RuleHits  map[string]uint64
}

// StateAfter is the state after the first k envelopes (0 < k ≤
// len(Envelopes)) were processed.
func (s *Session) StateAfter(k int) State {
	k = min(max(k, 0), len(s.Envelopes))
	st := State{Status: turnstate.StatusOpen, Envelopes: uint64(k), Decisions: map[acs.Disposition]uint64{}, RuleHits: map[string]uint64{}}
	if k == len(s.Envelopes) && k > 0 {
		st.Status = turnstate.StatusClosed
	}
	for _, e := range s.Envelopes[:k] {
		st.Decisions[e.Decision]++
		for _, r := range e.Alerts {
			st.RuleHits[r]++
		}
	}
	if k > 0 {
		last := s.Envelopes[k-1]
		st.TurnsStarted, st.OpenTurns = last.turnsStarted, last.openTurns
	}
	return st
}

// Check compares a stored session state with the expectation. It also
// requires what every generated session shows: no protocol violations and
// one chain entry per envelope.
func (w State) Check(got *turnstate.Session) error {
	var errs []error
	add := func(what string, have, want any) {
		errs = append(errs, fmt.Errorf("%s %v, want %v", what, have, want))
	}
	if got.Status != w.Status {
		add("status", got.Status, w.Status)
	}
	if got.Envelopes != w.Envelopes {
		add("envelopes", got.Envelopes, w.Envelopes)
	}
	if got.ChainLength != w.Envelopes {
		add("chain_length", got.ChainLength, w.Envelopes)
	}
	if got.TurnsStarted != w.TurnsStarted {
		add("turns_started", got.TurnsStarted, w.TurnsStarted)
	}
	if len(got.OpenTurns) != w.OpenTurns {
		add("open turns", len(got.OpenTurns), w.OpenTurns)
	}
	if !equalCounts(got.Decisions, w.Decisions) {
		add("decisions", got.Decisions, w.Decisions)
	}
	if !equalCounts(got.RuleHits, w.RuleHits) {
		add("rule_hits", got.RuleHits, w.RuleHits)
	}
	if len(got.Violations) > 0 {
		add("violations", got.Violations, "none")
	}
	return errors.Join(errs...)
}

// equalCounts compares counters, a missing key counting as zero.
func equalCounts[K comparable](a, b map[K]uint64) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}

// Expected totals of a session's first k envelopes.
type Totals struct {
	Envelopes int
	Denies    int
	// Alerts counts expected alerts by rule id.
	Alerts map[string]int
}

// TotalsAfter sums the expectations of the first k envelopes.
func (s *Session) TotalsAfter(k int) Totals {
	k = min(max(k, 0), len(s.Envelopes))
	t := Totals{Envelopes: k, Alerts: map[string]int{}}
	for _, e := range s.Envelopes[:k] {
		if e.Decision == acs.Deny {
			t.Denies++
		}
		for _, r := range e.Alerts {
			t.Alerts[r]++
		}
	}
	return t
}

// Add adds o to t.
func (t *Totals) Add(o Totals) {
	t.Envelopes += o.Envelopes
	t.Denies += o.Denies
	if t.Alerts == nil {
		t.Alerts = map[string]int{}
	}
	for r, n := range o.Alerts {
		t.Alerts[r] += n
	}
}

// AlertCount is the number of alerts of every rule.
func (t Totals) AlertCount() int {
	n := 0
	for c := range maps.Values(t.Alerts) {
		n += c
	}
	return n
}
