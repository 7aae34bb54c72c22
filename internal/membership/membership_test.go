package membership_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/membership"
)

func TestAssign(t *testing.T) {
	for _, tc := range []struct {
		partitions int
		members    []string
	}{
		{16, []string{"a"}},
		{16, []string{"a", "b"}},
		{16, []string{"a", "b", "c"}},
		{4, []string{"a", "b", "c", "d", "e"}},
		{1, []string{"x", "y"}},
		{1024, []string{"h1-1", "h1-2", "h2-1"}},
	} {
		t.Run(fmt.Sprintf("%d over %d", tc.partitions, len(tc.members)), func(t *testing.T) {
			got := membership.Assign(tc.partitions, tc.members)
			if len(got) != tc.partitions {
				t.Fatalf("%d assignments for %d partitions", len(got), tc.partitions)
			}
			load := map[string]int{}
			for p, id := range got {
				if !slices.Contains(tc.members, id) {
					t.Fatalf("partition %d went to %q, not a member", p, id)
				}
				load[id]++
			}
			most := (tc.partitions + len(tc.members) - 1) / len(tc.members)
			for id, n := range load {
				if n > most {
					t.Errorf("%s got %d partitions, more than %d", id, n, most)
				}
			}
			// Every instance computes it from its own listing: the order
			// it lists the members in must not matter.
			reversed := slices.Clone(tc.members)
			slices.Reverse(reversed)
			if again := membership.Assign(tc.partitions, reversed); !slices.Equal(again, got) {
				t.Errorf("member order changed the assignment:\n%v\n%v", got, again)
			}
		})
	}
}

// A member joining takes partitions only from the others' surplus: the
// partitions that stay with their member are most of them.
func TestAssignMovesFewPartitions(t *testing.T) {
	before := membership.Assign(16, []string{"a", "b"})
	after := membership.Assign(16, []string{"a", "b", "c"})
	moved := 0
	for p := range before {
		if after[p] != before[p] && after[p] != "c" {
			moved++
		}
	}
	if moved > 3 {
		t.Errorf("%d partitions moved between the old members when c joined:\n%v\n%v", moved, before, after)
	}
	if membership.Assign(3, nil)[0] != "" {
		t.Error("no members must assign nobody")
	}
}

// TestLivenessNeedsAnAdvancingBeat: a member is alive while its sealed
// beat advances; a record that stops advancing — the same one stored
// again, an older one put back, or one that comes back after it expired —
// is dead one TTL after its beat last moved.
func TestLivenessNeedsAnAdvancingBeat(t *testing.T) {
	const ttl = 5 * time.Second
	t0 := time.Unix(1000, 0)
	rec := func(beat uint64) map[string]membership.Member {
		return map[string]membership.Member{"b": {ID: "b", Beat: beat}}
	}
	type step struct {
		at    time.Duration
		recs  map[string]membership.Member
		alive bool
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"renewing", []step{{0, rec(10), true}, {4 * time.Second, rec(11), true}, {8 * time.Second, rec(12), true}, {12 * time.Second, rec(13), true}}},
		{"the same record stored again", []step{{0, rec(10), true}, {time.Second, rec(10), true}, {4 * time.Second, rec(10), true}, {5 * time.Second, rec(10), false}, {60 * time.Second, rec(10), false}}},
		{"an older record put back", []step{{0, rec(10), true}, {time.Second, rec(11), true}, {2 * time.Second, rec(9), true}, {5 * time.Second, rec(10), true}, {6 * time.Second, rec(10), false}, {7 * time.Second, rec(11), false}}},
		{"back after it expired", []step{{0, rec(10), true}, {3 * time.Second, nil, false}, {30 * time.Second, rec(10), false}}},
		{"a new beat after silence", []step{{0, rec(10), true}, {10 * time.Second, rec(10), false}, {11 * time.Second, rec(20), true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := membership.NewLiveness(ttl)
			for i, s := range tc.steps {
				alive, silence := l.Observe(s.recs, t0.Add(s.at))
				if _, ok := alive["b"]; ok != s.alive {
					t.Fatalf("step %d (at %s): alive %v, want %v", i, s.at, ok, s.alive)
				}
				if s.alive && silence["b"] >= ttl {
					t.Fatalf("step %d: alive with a silence of %s", i, silence["b"])
				}
			}
		})
	}
}

func TestNextBeatIncreases(t *testing.T) {
	t0 := time.Unix(1000, 0)
	b1 := membership.NextBeat(0, t0)
	for _, now := range []time.Time{t0, t0.Add(-time.Hour), t0.Add(time.Nanosecond), {}} {
		b2 := membership.NextBeat(b1, now)
		if b2 <= b1 {
			t.Fatalf("beat after %d at %v: %d", b1, now, b2)
		}
		b1 = b2
	}
}
