package membership_test

import (
	"fmt"
	"slices"
	"testing"

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
