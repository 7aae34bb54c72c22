package gateway

import (
	"fmt"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/hosthook"
)

// Codex's UserPromptSubmit opens the turn it names as the user's: three
// prompts after a fetch end its window, as on Claude Code, and the turns
// in between that no prompt opened (goal continuations) age nothing.
func TestCodexPromptsAgeTheWindow(t *testing.T) {
	h := newNativeHost(t, hosthook.Codex)
	turns := []string{codexTurnA, codexTurnB, codexTurnC, codexTurnD}
	h.event(codexTurn(codexTurnA, "UserPromptSubmit", "prompt", "read the migration notes at blog.example.net"))
	fetch := map[string]any{"command": "curl -s https://blog.example.net/post"}
	h.event(codexTurn(codexTurnA, "PreToolUse", "tool_name", "Bash", "tool_use_id", "call_f1", "tool_input", fetch))
	h.event(codexTurn(codexTurnA, "PostToolUse", "tool_name", "Bash", "tool_use_id", "call_f1", "tool_input", fetch, "tool_response", injected))
	for i, turn := range turns[1:] {
		h.event(codexTurn(turn, "UserPromptSubmit", "prompt", fmt.Sprintf("next step %d", i)))
		// Continuation turns between the prompts age nothing.
		var cont string
		for j := range 2 {
			cont = fmt.Sprintf("0199b7c2-5a10-7c3e-8d21-0000000000%d%d", i, j)
			if r := codexBash(h, cont, fmt.Sprintf("call_g%d%d", i, j), "git status"); r.Decision != "allow" {
				t.Fatalf("git status in continuation turn %d.%d: %+v", i, j, r)
			}
		}
		r := codexBash(h, cont, fmt.Sprintf("call_e%d", i), "go generate ./...")
		want := "deny"
		if i == 2 {
			want = "allow"
		}
		if r.Decision != want {
			t.Errorf("go generate after %d prompt(s) since the page: %s %v (%s), want %s", i+1, r.Decision, r.Rules, r.Reason, want)
		}
	}
}

// Input the user adds to a running Codex turn fires UserPromptSubmit with
// that turn's turn_id (codex-rs/core/src/hook_runtime.rs,
// inspect_pending_input): it is the user's words in the turn, not a new
// turn, and the turn goes on.
func TestCodexPromptInARunningTurn(t *testing.T) {
	h := newNativeHost(t, hosthook.Codex)
	h.event(codexTurn(codexTurnA, "UserPromptSubmit", "prompt", "run the tests"))
	codexBash(h, codexTurnA, "call_1", "go test ./...")
	if r := h.event(codexTurn(codexTurnA, "UserPromptSubmit", "prompt", "and the linter")); r.Decision != "allow" || len(r.Steps) != 1 {
		t.Errorf("a prompt added to the running turn: %+v, want one allowed userMessage", r)
	}
	if r := codexBash(h, codexTurnA, "call_2", "go vet ./..."); r.Decision != "allow" {
		t.Errorf("the turn's next call: %+v", r)
	}
	if got := h.sessionState("0199b7c2-4d1e-7a3f-9b8c-5e2d1f0a4c6b"); got != "turns_started=1 window_turns=1 open=1" {
		t.Errorf("state: %s", got)
	}
}

// Once the root's turns are declared, a child agent's call is sent in the
// root's open turn: a step without a turn id inside a declared turn is
// refused (turn_id_missing), and the child's own turn_id would close the
// root's turn.
func TestCodexChildInADeclaredTurn(t *testing.T) {
	h := newNativeHost(t, hosthook.Codex)
	h.event(codexTurn(codexTurnA, "UserPromptSubmit", "prompt", "split the work between two agents"))
	codexBash(h, codexTurnA, "call_1", "git status")
	for i := range 2 {
		ev := codexTurn(fmt.Sprintf("0199b7c2-c0%02d-7c3e-8d21-6f3e2a1b5d70", i), "PreToolUse", "tool_name", "Bash", "tool_use_id", fmt.Sprintf("call_c%d", i),
			"tool_input", map[string]any{"command": "go vet ./..."})
		ev["agent_id"], ev["agent_type"] = fmt.Sprintf("0199b7c2-aaaa-7000-8000-00000000000%d", i), "default"
		if r := h.event(ev); r.Decision != "allow" {
			t.Errorf("child %d's command: %+v", i, r)
		}
		ev = codexTurn(fmt.Sprintf("0199b7c2-c0%02d-7c3e-8d21-6f3e2a1b5d70", i), "UserPromptSubmit", "prompt", "vet the module")
		ev["agent_id"], ev["agent_type"] = fmt.Sprintf("0199b7c2-aaaa-7000-8000-00000000000%d", i), "default"
		if r := h.event(ev); r.Decision != "allow" || len(r.Steps) != 0 {
			t.Errorf("child %d's prompt: %+v, want nothing sent", i, r)
		}
	}
	if r := codexBash(h, codexTurnA, "call_2", "go test ./..."); r.Decision != "allow" {
		t.Errorf("the root's command in its own turn after its children ran: %+v", r)
	}
	if got := h.sessionState("0199b7c2-4d1e-7a3f-9b8c-5e2d1f0a4c6b"); got != "turns_started=1 window_turns=1 open=1" {
		t.Errorf("state: %s", got)
	}
}

// A yielded Codex fetch's hold ends at its PostToolUse (a write_stdin
// poll that saw it end): its window starts there and ages as any other.
// One whose result never comes (declined at Codex's prompt, pruned) is
// let go by time, the label's window duration after it was settled.
func TestCodexYieldedFetchHoldEnds(t *testing.T) {
	fetch := map[string]any{"command": "curl -sN https://feeds.example.net/stream"}
	turn := func(i int) string { return fmt.Sprintf("0199b7c2-5a10-7c3e-8d21-0000000001%02d", i) }
	start := func(h *nativeHost) {
		h.event(codexTurn(turn(0), "PreToolUse", "tool_name", "Bash", "tool_use_id", "call_f1", "tool_input", fetch))
		for i := 1; i <= 3; i++ {
			codexBash(h, turn(i), fmt.Sprintf("call_s%d", i), "git status")
		}
	}
	t.Run("at its result", func(t *testing.T) {
		h := newNativeHost(t, hosthook.Codex)
		start(h)
		h.event(codexTurn(turn(3), "PostToolUse", "tool_name", "Bash", "tool_use_id", "call_f1", "tool_input", fetch, "tool_response", injected))
		for i := 4; i <= 6; i++ {
			codexBash(h, turn(i), fmt.Sprintf("call_g%d", i), "git status")
			r := codexBash(h, turn(i), fmt.Sprintf("call_e%d", i), "go generate ./...")
			want := "deny"
			if i == 6 {
				want = "allow"
			}
			if r.Decision != want {
				t.Errorf("go generate %d turn(s) after the stream's result: %s %v (%s), want %s", i-3, r.Decision, r.Rules, r.Reason, want)
			}
		}
	})
	t.Run("by time, with no result", func(t *testing.T) {
		h := newNativeHost(t, hosthook.Codex)
		start(h)
		if r := codexBash(h, turn(4), "call_e4", "go generate ./..."); r.Decision != "deny" {
			t.Errorf("go generate while the stream may still feed the model: %+v", r)
		}
		h.now = h.now.Add(31 * time.Minute)
		if r := codexBash(h, turn(5), "call_e5", "go generate ./..."); r.Decision != "allow" {
			t.Errorf("go generate 31 minutes after the stream was settled, no result: %+v", r)
		}
	})
}
