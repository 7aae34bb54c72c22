package guardian_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// boundedEnvelope is an envelope of method whose metadata is md (agent_id
// and session_id added unless set) and whose payload is payload, marshalled.
func boundedEnvelope(t *testing.T, method string, md map[string]string, payload any) []byte {
	t.Helper()
	m := map[string]string{"agent_id": "a", "session_id": testSession}
	for k, v := range md {
		m[k] = v
	}
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "id": 7, "params": map[string]any{
		"acs_version": "0.1.0", "request_id": testRequest, "timestamp": "2026-09-19T10:00:00Z", "metadata": m, "payload": payload}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// toolCall is a toolCallRequest payload whose one argument carries prov
// (none when nil).
func toolCall(prov map[string]any) map[string]any {
	arg := map[string]any{"value": "README.md"}
	if prov != nil {
		arg["provenance"] = prov
	}
	return map[string]any{"tool": map[string]any{"name": "Read"}, "arguments": map[string]any{"path": arg}}
}

// TestFieldBounds: every identifier kept in state is accepted at its bound
// and refused one byte over it, with ReasonFieldTooLong, the code of its
// place (envelope -32600, payload -32602), and a pointer naming it; the
// refusal changes no state and is still answered.
func TestFieldBounds(t *testing.T) {
	g := guardian.New(newValidator(t), guardian.Config{})
	rs := defaultRules(t)
	const id, item = acs.MaxIDBytes, acs.MaxExpectedInputBytes
	inputs := func(n int, s string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = "toolCallRequest"
		}
		out[0] = s
		return out
	}
	for _, tc := range []struct {
		name    string
		method  string
		bound   int
		build   func(s string) (map[string]string, any)
		code    acs.Code
		pointer string
	}{
		{"metadata.agent_id", "steps/sessionStart", id,
			func(s string) (map[string]string, any) { return map[string]string{"agent_id": s}, map[string]any{} },
			acs.CodeInvalidRequest, "/params/metadata/agent_id"},
		{"metadata.turn_id", "steps/toolCallRequest", id,
			func(s string) (map[string]string, any) { return map[string]string{"turn_id": s}, toolCall(nil) },
			acs.CodeInvalidRequest, "/params/metadata/turn_id"},
		{"metadata.parent_turn_id", "steps/toolCallRequest", id,
			func(s string) (map[string]string, any) { return map[string]string{"parent_turn_id": s}, toolCall(nil) },
			acs.CodeInvalidRequest, "/params/metadata/parent_turn_id"},
		{"turnStart turn_id", "steps/turnStart", id,
			func(s string) (map[string]string, any) {
				return map[string]string{"turn_id": "t"}, map[string]any{"turn_id": s, "triggered_by": "user_message"}
			},
			acs.CodeInvalidParams, "/params/payload/turn_id"},
		{"turnStart parent_turn_id", "steps/turnStart", id,
			func(s string) (map[string]string, any) {
				return map[string]string{"turn_id": "t"}, map[string]any{"turn_id": "t", "triggered_by": "user_message", "parent_turn_id": s}
			},
			acs.CodeInvalidParams, "/params/payload/parent_turn_id"},
		{"turnStart expected_inputs item", "steps/turnStart", item,
			func(s string) (map[string]string, any) {
				return map[string]string{"turn_id": "t"}, map[string]any{"turn_id": "t", "triggered_by": "user_message", "expected_inputs": inputs(3, s)}
			},
			acs.CodeInvalidParams, "/params/payload/expected_inputs/0"},
		{"turnStart expected_inputs count", "steps/turnStart", acs.MaxExpectedInputs,
			// The bound is a count here: s stands for as many items as it has bytes.
			func(s string) (map[string]string, any) {
				return map[string]string{"turn_id": "t"}, map[string]any{"turn_id": "t", "triggered_by": "user_message", "expected_inputs": inputs(len(s), "userMessage")}
			},
			acs.CodeInvalidParams, "/params/payload/expected_inputs"},
		{"turnEnd turn_id", "steps/turnEnd", id,
			func(s string) (map[string]string, any) {
				return map[string]string{"turn_id": "t"}, map[string]any{"turn_id": s, "outcome": "completed"}
			},
			acs.CodeInvalidParams, "/params/payload/turn_id"},
		{"subagentStart parent_step_id", "steps/subagentStart", id,
			func(s string) (map[string]string, any) {
				return map[string]string{"turn_id": "t"}, map[string]any{"subagent_session_id": "0f6d2a4e-8d1c-4b39-9a57-3c2f1e0d9b88",
					"parent_session_id": testSession, "parent_step_id": s, "intent_derivation": "fresh"}
			},
			acs.CodeInvalidParams, "/params/payload/parent_step_id"},
		{"provenance_id", "steps/toolCallRequest", id,
			func(s string) (map[string]string, any) {
				return nil, toolCall(map[string]any{"provenance_id": s, "origin": "tool_output"})
			},
			acs.CodeInvalidParams, "/params/payload/arguments/path/provenance/provenance_id"},
		{"source_id", "steps/toolCallRequest", id,
			func(s string) (map[string]string, any) {
				return nil, toolCall(map[string]any{"provenance_id": "p1", "origin": "retrieved", "source_id": s})
			},
			acs.CodeInvalidParams, "/params/payload/arguments/path/provenance/source_id"},
		{"derived_from entry", "steps/toolCallRequest", id,
			func(s string) (map[string]string, any) {
				return nil, toolCall(map[string]any{"provenance_id": "p2", "origin": "agent_generated", "derived_from": []string{"p1", s}})
			},
			acs.CodeInvalidParams, "/params/payload/arguments/path/provenance/derived_from/1"},
	} {
		for _, v := range []struct {
			name string
			s    string
			over bool
		}{
			{"at the bound", strings.Repeat("a", tc.bound), false},
			{"one byte over", strings.Repeat("a", tc.bound+1), true},
			// '<' is stored as \u003c: six bytes, however few it has.
			{"escaped at the bound", strings.Repeat("<", tc.bound/6) + strings.Repeat("a", tc.bound%6), false},
			{"escaped one byte over", strings.Repeat("<", tc.bound/6) + strings.Repeat("a", tc.bound%6+1), true},
		} {
			if tc.name == "turnStart expected_inputs count" && strings.HasPrefix(v.name, "escaped") {
				continue
			}
			t.Run(tc.name+"/"+v.name, func(t *testing.T) {
				md, payload := tc.build(v.s)
				data := boundedEnvelope(t, tc.method, md, payload)
				state := turnstate.New("default", testSession)
				out := g.Decide(rs, state, nil, routeFor(tc.method), guardian.Message{Data: data, Seq: 1})
				if !v.over {
					if out.Refusal != nil || out.State == nil {
						t.Fatalf("at the bound: refused %v", out.Refusal)
					}
					return
				}
				ref := out.Refusal
				if ref == nil || ref.Code != tc.code || ref.Reason != acs.ReasonFieldTooLong {
					t.Fatalf("want %s %s, got %v", tc.code, acs.ReasonFieldTooLong, ref)
				}
				if len(ref.Violations) != 1 || ref.Violations[0].Pointer != tc.pointer {
					t.Fatalf("violations %+v, want one at %s", ref.Violations, tc.pointer)
				}
				if out.State != nil || state.Envelopes != 0 || state.ChainLength != 0 {
					t.Fatalf("the refusal changed the state: %+v", state)
				}
				if out.Response == nil || out.RequestID != testRequest || len(out.TurnID) > acs.MaxIDBytes {
					t.Fatalf("refusal not answered to its request: %+v", out)
				}
			})
		}
	}
}

// TestFieldTooLongAnswer: the attack of issue 12, a 120,000-character turn
// id, is answered compactly (the answer names the field and its length,
// never echoes it), deny for a decision-eligible hook.
func TestFieldTooLongAnswer(t *testing.T) {
	g := guardian.New(newValidator(t), guardian.Config{})
	long := strings.Repeat("x", 120000)
	data := boundedEnvelope(t, "steps/turnStart", map[string]string{"turn_id": long}, map[string]any{"turn_id": long, "triggered_by": "user_message"})
	out := g.Decide(defaultRules(t), nil, nil, routeFor("steps/turnStart"), guardian.Message{Data: data, Seq: 1})
	if out.Refusal == nil || out.Refusal.Code != acs.CodeInvalidRequest || out.Refusal.Reason != acs.ReasonFieldTooLong {
		t.Fatalf("refusal %v", out.Refusal)
	}
	if out.TurnID != "" {
		t.Errorf("outcome carries the %d-byte turn id", len(out.TurnID))
	}
	b, err := json.Marshal(out.Response)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 4096 || !strings.Contains(string(b), "120000 bytes") || !strings.Contains(string(b), acs.ReasonFieldTooLong) {
		t.Fatalf("answer (%d bytes): %.600s", len(b), b)
	}
	if res := out.Response.Result; res == nil || res.Decision != acs.Deny {
		t.Fatalf("want a deny, got %s", b)
	}
}

// FuzzFieldBounds: whatever the strings, an envelope is refused
// field_too_long exactly when one of its kept identifiers is stored longer
// than its bound, each such field is named by its pointer, and a refusal
// changes no state.
func FuzzFieldBounds(f *testing.F) {
	f.Add("turn-1", "p-1", "web", "p-0", 1)
	f.Add(strings.Repeat("<", 43), "p", "", "", 300)
	f.Add("t", strings.Repeat("a", 257), strings.Repeat("\u2028", 86), "x", 0)
	g := guardian.New(newValidator(f), guardian.Config{})
	rs := defaultRules(f)
	f.Fuzz(func(t *testing.T, turnID, provID, sourceID, derived string, pad int) {
		if pad < 0 || pad > 400 {
			pad = 0
		}
		for _, s := range []string{turnID, provID, sourceID, derived} {
			if !utf8.ValidString(s) {
				t.Skip("json.Marshal would replace its invalid bytes: the envelope would not carry it")
			}
		}
		// pad moves the ids across the bound.
		provID += strings.Repeat("a", pad)
		prov := map[string]any{"provenance_id": provID, "origin": "agent_generated", "source_id": sourceID, "derived_from": []string{derived}}
		data := boundedEnvelope(t, "steps/toolCallRequest", map[string]string{"turn_id": turnID}, toolCall(prov))
		state := turnstate.New("default", testSession)
		out := g.Decide(rs, state, nil, routeFor("steps/toolCallRequest"), guardian.Message{Data: data, Seq: 1})
		if out.Response == nil {
			t.Fatal("no answer")
		}
		if out.Refusal != nil && out.Refusal.Reason != acs.ReasonFieldTooLong {
			return // invalid for another reason (a string json.Marshal had to fix)
		}
		const base = "/params/payload/arguments/path/provenance/"
		want := map[string]bool{}
		if acs.StoredLen(turnID) > acs.MaxIDBytes {
			want["/params/metadata/turn_id"] = true
		} else {
			for p, s := range map[string]string{base + "provenance_id": provID, base + "source_id": sourceID, base + "derived_from/0": derived} {
				if acs.StoredLen(s) > acs.MaxIDBytes {
					want[p] = true
				}
			}
		}
		if len(want) == 0 {
			if out.Refusal != nil {
				t.Fatalf("refused within the bounds: %v", out.Refusal)
			}
			return
		}
		if out.Refusal == nil || out.State != nil || state.Envelopes != 0 {
			t.Fatalf("not refused, or the state changed: %+v", out)
		}
		got := map[string]bool{}
		for _, v := range out.Refusal.Violations {
			got[v.Pointer] = true
		}
		if len(got) != len(want) {
			t.Fatalf("violations %+v, want pointers %v", out.Refusal.Violations, want)
		}
		for p := range want {
			if !got[p] {
				t.Fatalf("violations %+v, want pointers %v", out.Refusal.Violations, want)
			}
		}
	})
}
