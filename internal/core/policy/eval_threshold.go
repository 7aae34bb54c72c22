package policy

import (
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// Threshold counters: per turn, per session, consecutive, and sliding
// windows keyed by session or by agent.

// count adds the envelope to a threshold rule's counter and returns the
// count in the rule's scope, this envelope included.
func (e *evalCtx) count(id string, th *Threshold) int {
	c := counter(&e.sess.Counters, id)
	switch {
	case th.Consecutive, th.Per == "session":
		c.Count++
		return c.Count
	case th.Per == "turn":
		if c.Turn != e.turn {
			c.Turn, c.Count = e.turn, 0
		}
		c.Count++
		return c.Count
	}
	// A sliding window. Entries of a session are in time and turn order, so
	// both lists are suffixes of the same hits and the shorter one is the
	// count within both bounds.
	w := th.Within
	bound := min(th.Max+1, turnstate.MaxWindowEntries)
	if w.Duration != nil {
		c.Times = slide(c.Times, e.in.Time, func(t time.Time) bool { return e.in.Time.Sub(t) <= *w.Duration }, true, bound)
	}
	if w.Turns != nil {
		c.Turns = slide(c.Turns, e.turn, func(t int) bool { return e.turn-t <= *w.Turns }, true, bound)
	}
	switch {
	case w.Duration != nil && w.Turns != nil:
		return min(len(c.Times), len(c.Turns))
	case w.Duration != nil:
		return len(c.Times)
	}
	return len(c.Turns)
}

var errNoAgent = errors.New("the agent's shared state was not supplied")

// countAgent counts the envelope in an agent-keyed sliding window, unless
// this partition already counted it (a redelivery decided again), and
// returns the count in the window.
func (e *evalCtx) countAgent(id string, th *Threshold) int {
	c := counter(&e.agent.Counters, id)
	add := e.in.Seq > e.agent.Applied[strconv.Itoa(e.in.Partition)]
	// Sessions interleave, so entries later than this envelope may exist;
	// they stay.
	c.Times = slide(c.Times, e.in.Time, func(t time.Time) bool { return e.in.Time.Sub(t) <= *th.Within.Duration }, add, min(th.Max+1, turnstate.MaxWindowEntries))
	e.agentCounted = e.agentCounted || add
	return len(c.Times)
}

// counter returns a rule's counter in a counter map, creating both.
func counter(m *map[string]*turnstate.Counter, id string) *turnstate.Counter {
	if *m == nil {
		*m = map[string]*turnstate.Counter{}
	}
	c := (*m)[id]
	if c == nil {
		c = &turnstate.Counter{}
		(*m)[id] = c
	}
	return c
}

// slide keeps the window entries still inside, adds the new one when add,
// and keeps at most bound of the newest.
func slide[T any](entries []T, now T, inside func(T) bool, add bool, bound int) []T {
	keep := entries[:0]
	for _, x := range entries {
		if inside(x) {
			keep = append(keep, x)
		}
	}
	if add {
		keep = append(keep, now)
	}
	return keep[max(0, len(keep)-bound):]
}

// pruneCounters drops counters of rules no longer in the set, so a
// reloaded rule set does not leave state behind forever.
func (e *evalCtx) pruneCounters() {
	for id := range e.sess.Counters {
		if !slices.ContainsFunc(e.set.Rules, func(r *Rule) bool { return r.ID == id && r.Threshold != nil }) {
			delete(e.sess.Counters, id)
		}
	}
}
