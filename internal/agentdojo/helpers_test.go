package agentdojo_test

import (
	"encoding/json"
	"testing"

	"github.com/turnguard/turnguard/internal/agentdojo"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/schema"
)

func newGuardian(t testing.TB) *guardian.Guardian {
	t.Helper()
	v, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	return guardian.New(v, guardian.Config{})
}

func benchRules(t testing.TB) *policy.Set {
	t.Helper()
	rs, err := agentdojo.LoadRules(agentdojo.DefaultRules...)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// runJSON encodes a hand-made run file the way AgentDojo writes one.
func runJSON(t testing.TB, run map[string]any) []byte {
	t.Helper()
	full := map[string]any{"suite_name": "banking", "pipeline_name": "model-x", "user_task_id": "user_task_7",
		"injection_task_id": nil, "attack_type": nil, "injections": map[string]any{}, "error": nil,
		"utility": true, "security": false}
	for k, v := range run {
		full[k] = v
	}
	data, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func parse(t testing.TB, run map[string]any) *agentdojo.Run {
	t.Helper()
	r, err := agentdojo.ParseRun("test", runJSON(t, run))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func sys(text string) map[string]any  { return map[string]any{"role": "system", "content": text} }
func user(text string) map[string]any { return map[string]any{"role": "user", "content": text} }
func say(text string) map[string]any {
	return map[string]any{"role": "assistant", "content": text, "tool_calls": nil}
}

// calls is an assistant message calling tools.
func calls(cs ...map[string]any) map[string]any {
	list := make([]any, len(cs))
	for i, c := range cs {
		list[i] = c
	}
	return map[string]any{"role": "assistant", "content": nil, "tool_calls": list}
}

func call(id, fn string, args map[string]any) map[string]any {
	c := map[string]any{"function": fn, "args": args}
	if id != "" {
		c["id"] = id
	}
	return c
}

// result is a tool message answering call c; errText non-empty makes it
// a failure.
func result(c map[string]any, content, errText string) map[string]any {
	m := map[string]any{"role": "tool", "content": content, "tool_call_id": c["id"], "tool_call": c, "error": nil}
	if errText != "" {
		m["error"] = errText
	}
	return m
}

func inProcess(t testing.TB) agentdojo.InProcess {
	t.Helper()
	return agentdojo.InProcess{Guardian: newGuardian(t), Rules: benchRules(t)}
}
