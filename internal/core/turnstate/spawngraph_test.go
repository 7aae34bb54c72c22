package turnstate_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// A subagent spawned by two sessions (resumed by the second) joins their
// graphs: replaying (or rebuilding) any of them decides all three, and one
// replay worker decides them, so that both spawns are applied before the
// subagent's envelopes.
func TestSpawnGraph(t *testing.T) {
	links := map[string][]string{
		"t.child":      {"t.a", "t.b"},
		"t.grandchild": {"t.child"},
		"t.x":          {"t.y"},
	}
	for _, tc := range []struct {
		from []string
		want []string
	}{
		{[]string{"t.child"}, []string{"t.a", "t.b", "t.child", "t.grandchild"}},
		// The child's state starts from a's spawn: b's replay needs it.
		{[]string{"t.b"}, []string{"t.a", "t.b", "t.child", "t.grandchild"}},
		{[]string{"t.grandchild"}, []string{"t.a", "t.b", "t.child", "t.grandchild"}},
		{[]string{"t.y"}, []string{"t.x", "t.y"}},
		{[]string{"t.alone"}, []string{"t.alone"}},
	} {
		in := map[string]bool{}
		for _, k := range tc.from {
			in[k] = true
		}
		if got := slices.Sorted(maps.Keys(turnstate.SpawnConnected(in, links))); !slices.Equal(got, tc.want) {
			t.Errorf("spawn tree of %v: %v, want %v", tc.from, got, tc.want)
		}
	}
	roots := turnstate.SpawnRoots(links)
	for _, k := range []string{"t.a", "t.b", "t.child", "t.grandchild"} {
		if roots[k] != "t.a" {
			t.Errorf("root of %s: %q, want t.a (one worker for the joined trees)", k, roots[k])
		}
	}
	if roots["t.x"] != "t.x" || roots["t.y"] != "t.x" {
		t.Errorf("roots of x, y: %q, %q, want t.x", roots["t.x"], roots["t.y"])
	}
}
