package policy

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// streamHandles reads the names a stop may give a streaming call's source
// from the host's fields and a short announcement, and no more than
// maxStreamHandles; a page-sized text is not an announcement.
func TestStreamHandles(t *testing.T) {
	out := func(v any) map[string]any { return map[string]any{"outputs": []any{map[string]any{"value": v}}} }
	for _, tc := range []struct {
		name    string
		payload any
		want    []string
	}{
		{"the host's field", out(map[string]any{"taskId": "bmon7x", "status": "running"}), []string{"bmon7x"}},
		{"a background task's field", out(map[string]any{"backgroundTaskId": "b12", "stdout": "id: evil"}), []string{"b12"}},
		{"an announcement with an id", out("Monitor started with ID: bmon7x. Events will be delivered as notifications."), []string{"bmon7x"}},
		{"Qwen Code's shape", out("Monitor started.\nid: mon_1a2b3c\ncommand: gh run watch"), []string{"mon_1a2b3c"}},
		{"a background command", out("Command running in background with ID: bt2kelt7i. Output is being written to: /tmp/claude-1000/x/tasks/bt2kelt7i.output"),
			[]string{"bt2kelt7i", "/tmp/claude-1000/x/tasks/bt2kelt7i.output"}},
		{"no id", out("Listening."), nil},
		{"a word ending in id is not an id", out("a valid stream"), nil},
		{"a page-sized text", out("task id: b1 " + strings.Repeat("x", maxAnnouncement)), nil},
		{"bounded", out(strings.Repeat("task id: abc", 1) + " id: b11 id: b22 id: b33 id: b44 id: b55"), []string{"abc", "b11", "b22", "b33"}},
		{"no outputs", map[string]any{}, nil},
	} {
		if got := streamHandles(tc.payload); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A held label keeps at most MaxHeldHandles names; a source past them is
// counted unnamed, so a stop of any task lets it go rather than none
// (fail closed would hold it for the session's life), and the count is
// bounded too. Each stop lets go what it names; the label's window starts
// at the stop that lets the last source go.
func TestHoldAndRelease(t *testing.T) {
	var s turnstate.Session
	hit := turnstate.TaintHit{Source: "shell-fetch", Tool: "Monitor"}
	for i := range turnstate.MaxHeldHandles + 2 {
		hold(&s, "l", hit, []string{fmt.Sprintf("B%d", i)})
	}
	hold(&s, "l", hit, nil)
	hold(&s, "l", hit, []string{"b0"}) // again: named, not counted twice
	if len(s.Held) != 1 {
		t.Fatalf("%d held entries, want one per label", len(s.Held))
	}
	h := s.Held[0]
	if len(h.Handles) != turnstate.MaxHeldHandles || h.Unnamed != 3 || h.Handles[0] != "b0" {
		t.Fatalf("held %+v: want %d names (lower-cased) and 3 unnamed", h, turnstate.MaxHeldHandles)
	}
	for range 2 * turnstate.MaxHeldUnnamed {
		hold(&s, "m", hit, nil)
	}
	if got := held(&s, "m").Unnamed; got != turnstate.MaxHeldUnnamed {
		t.Errorf("unnamed %d, want bounded at %d", got, turnstate.MaxHeldUnnamed)
	}

	stop := turnstate.TaintHit{Source: "shell-fetch:stopped", Seq: 99}
	var names []string
	for i := range turnstate.MaxHeldHandles {
		names = append(names, fmt.Sprintf("b%d", i))
	}
	release(&s, []Release{{Label: "l", Handles: names[:3], Hit: stop}})
	if h := held(&s, "l"); h == nil || len(h.Handles) != turnstate.MaxHeldHandles-3 {
		t.Fatalf("after a stop of three: %+v", h)
	}
	release(&s, []Release{{Label: "l", Handles: names[3:], Hit: stop}})
	for range 2 {
		release(&s, []Release{{Label: "l", Unnamed: true, Hit: stop}})
	}
	if h := held(&s, "l"); h == nil || h.Unnamed != 1 || len(h.Handles) != 0 {
		t.Fatalf("one unnamed source left: %+v", h)
	}
	if _, set := s.Taints["l"]; set {
		t.Fatal("the label was set before its last source was let go")
	}
	release(&s, []Release{{Label: "l", Unnamed: true, Hit: stop}})
	if held(&s, "l") != nil {
		t.Fatal("the last source let go, the label is still held")
	}
	if tt := s.Taints["l"]; tt == nil || tt.Last.Seq != 99 || tt.Last.Tool != "Monitor" {
		t.Fatalf("the label's window does not start at the stop: %+v", tt)
	}
	if held(&s, "m") == nil {
		t.Fatal("a stop of one label let another go")
	}
}

// A held label's note names the source and says how to end it.
func TestHeldNote(t *testing.T) {
	var s turnstate.Session
	if n := heldNote(&s, "l"); n != "" {
		t.Fatalf("not held: %q", n)
	}
	hold(&s, "l", turnstate.TaintHit{Tool: "Monitor"}, []string{"bmon7x"})
	if n := heldNote(&s, "l"); !strings.Contains(n, "Monitor bmon7x") || !strings.Contains(n, "TaskStop") {
		t.Fatalf("note %q", n)
	}
}
