package hosthook

import (
	"strings"
	"testing"
)

// Review of stop 45's askedNobody: Claude Code's auto mode (the built-in
// starting mode of interactive sessions since v2.1.283) has a classifier,
// not a person, review what would prompt. An ask answered there is not a
// person's approval either, yet it is answered ask, and when the call runs
// its result makes its values trusted (lineage Approve). askedNobody is a
// deny-list of two modes; any mode it does not know (auto, a future one)
// counts as someone asked.
func TestReview45AskInAutoMode(t *testing.T) {
	ev := readEvent(t, "pre-tool-use")
	ev.PermissionMode = "auto"
	got := string(ev.Answer(Outcome{Decision: "ask", Reason: "r"}, true))
	if !strings.Contains(got, `"permissionDecision":"deny"`) {
		t.Errorf("ask in auto mode: %s, want deny (a classifier, not a person, would answer it)", got)
	}
}
