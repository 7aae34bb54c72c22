package guardian_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

const (
	testSession = "59d80ff6-ce6f-4a67-992d-f8fba22c6164"
	testRequest = "56ac493d-c42d-48cb-90b5-aa3efd192565"
)

var testRoute = acs.Route{Tenant: "default", SessionID: testSession}

func envelope(method, payload string, extra ...string) []byte {
	md := `"agent_id":"a","session_id":"` + testSession + `"`
	for _, e := range extra {
		md += "," + e
	}
	return []byte(`{"jsonrpc":"2.0","method":"` + method + `","id":7,"params":{"acs_version":"0.1.0","request_id":"` + testRequest +
		`","timestamp":"2026-09-19T10:00:00Z","metadata":{` + md + `},"payload":` + payload + `}}`)
}

func routeFor(method string) acs.Route {
	r := testRoute
	r.Hook = acs.HookToken(method)
	return r
}

func TestDecideSkipsAppliedMessages(t *testing.T) {
	g := guardian.New(newValidator(t), guardian.Config{})
	state := turnstate.New("default", testSession)
	state.LastSeq = 9
	out := g.Decide(defaultRules(t), state, nil, routeFor("steps/sessionStart"), guardian.Message{Data: envelope("steps/sessionStart", `{}`), Seq: 9})
	if !out.Skipped || out.Response != nil || out.State != nil || out.Refusal != nil {
		t.Fatalf("redelivery of seq 9 was not skipped: %+v", out)
	}
	out = g.Decide(defaultRules(t), state, nil, routeFor("steps/sessionStart"), guardian.Message{Data: envelope("steps/sessionStart", `{}`), Seq: 10})
	if out.Skipped || out.State == nil || out.State.LastSeq != 10 {
		t.Fatalf("seq 10 was not applied: %+v", out)
	}
}

func TestRefusalLeavesStateAlone(t *testing.T) {
	g := guardian.New(newValidator(t), guardian.Config{})
	state := turnstate.New("default", testSession)
	out := g.Decide(defaultRules(t), state, nil, routeFor("steps/turnStart"), guardian.Message{Data: envelope("steps/turnStart", `{"turn_id":"x","triggered_by":"whim"}`), Seq: 1})
	if out.Refusal == nil || out.Refusal.Code != acs.CodeInvalidParams || out.State != nil {
		t.Fatalf("want a -32602 refusal without a state change, got %+v", out)
	}
	if state.Envelopes != 0 || state.LastSeq != 0 {
		t.Fatalf("refusal changed the state: %+v", state)
	}
	res := out.Response.Result
	if res == nil || res.Decision != acs.Deny || res.RequestID != testRequest || string(out.Response.ID) != "7" {
		t.Fatalf("want a deny for request %s with id 7, got %+v", testRequest, out.Response)
	}
	if !strings.Contains(res.Reasoning, "INVALID_PARAMS") || !strings.Contains(res.Reasoning, "hooks/turn-start.json") {
		t.Errorf("reasoning does not say why: %q", res.Reasoning)
	}
	raw, _ := json.Marshal(res.PolicyData)
	if !strings.Contains(string(raw), `"/params/payload/triggered_by"`) {
		t.Errorf("policy_data does not locate the violation: %s", raw)
	}
}

func TestPingIsAnsweredWithoutState(t *testing.T) {
	g := guardian.New(newValidator(t), guardian.Config{})
	at := time.Date(2026, 12, 2, 8, 0, 0, 123, time.UTC)
	out := g.Decide(defaultRules(t), nil, nil, routeFor("system/ping"), guardian.Message{Data: envelope("system/ping", `{"echo":"hi"}`), Seq: 3, Time: at})
	if out.State != nil || out.Refusal != nil || out.Response == nil || out.Response.Result == nil {
		t.Fatalf("ping outcome %+v", out)
	}
	res := out.Response.Result
	if res.Decision != acs.Allow || res.Payload["status"] != "ok" || res.Payload["echo"] != "hi" || res.Payload["server_timestamp"] != "2026-12-02T08:00:00.000000123Z" {
		t.Fatalf("ping result %+v", res)
	}
}

// A subagentStart the session cannot apply (it is closed) spawns and
// links nothing. (A spawn the rules deny creates the subagent's state all
// the same, linked and tainted, since a framework may run it anyway:
// ruletest's TestSubagentDeniedSpawn.)
func TestSubagentStartOnClosedSessionSpawnsNothing(t *testing.T) {
	g := guardian.New(newValidator(t), guardian.Config{})
	closed := turnstate.New("default", testSession)
	closed.Status = turnstate.StatusClosed
	closed.Envelopes, closed.LastSeq = 3, 3
	payload := `{"subagent_session_id":"bf9b906b-a7a5-4cd4-89ce-82d223b09586","parent_session_id":"` + testSession + `","parent_step_id":"s","intent_derivation":"fresh"}`
	out := g.Decide(defaultRules(t), closed, nil, routeFor("steps/subagentStart"), guardian.Message{Data: envelope("steps/subagentStart", payload), Seq: 4})
	if out.Response.Result.Decision != acs.Deny || out.Spawned != nil {
		t.Fatalf("subagentStart on a closed session: decision %s, spawned %+v", out.Response.Result.Decision, out.Spawned)
	}
	if len(out.State.Subagents) != 0 {
		t.Fatalf("subagentStart on a closed session: subagents %v", out.State.Subagents)
	}
	open := turnstate.New("default", testSession)
	out = g.Decide(defaultRules(t), open, nil, routeFor("steps/subagentStart"), guardian.Message{Data: envelope("steps/subagentStart", payload), Seq: 1})
	if out.Spawned == nil || out.Spawned.SessionID != "bf9b906b-a7a5-4cd4-89ce-82d223b09586" {
		t.Fatalf("allowed subagentStart spawned %+v", out.Spawned)
	}
}

func TestOversizeIsRefusedUnread(t *testing.T) {
	g := guardian.New(newValidator(t), guardian.Config{MaxEnvelopeBytes: 2048})
	big := envelope("steps/userMessage", `{"content":[{"type":"text","value":"`+strings.Repeat("a", 4096)+`"}]}`)
	out := g.Decide(defaultRules(t), nil, nil, routeFor("steps/userMessage"), guardian.Message{Data: big, Seq: 1})
	if !errors.Is(out.Refusal, &acs.Error{Code: acs.CodeInvalidRequest, Reason: acs.ReasonTooLarge}) {
		t.Fatalf("want envelope_too_large, got %v", out.Refusal)
	}
	if out.Response.Error == nil || string(out.Response.ID) != "null" {
		t.Fatalf("an unread envelope can only get an error with a null id: %+v", out.Response)
	}
}

func TestUnroutable(t *testing.T) {
	g := guardian.New(newValidator(t), guardian.Config{})
	_, err := acs.ParseInbound("acs.hooks.only-two")
	out := g.Unroutable(err)
	if out.Response != nil || out.Refusal == nil || out.Refusal.Reason != acs.ReasonBadSubject {
		t.Fatalf("unroutable outcome %+v", out)
	}
}

// The core reads nothing but its inputs: the same inputs give byte-identical
// responses and states.
func TestDecideIsDeterministic(t *testing.T) {
	g := guardian.New(newValidator(t), guardian.Config{})
	rs := defaultRules(t)
	paths, _ := filepath.Glob("../../../schema/testdata/envelopes/*/*.json")
	if len(paths) == 0 {
		t.Fatal("no envelope fixtures found")
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var env acs.Request
		_ = json.Unmarshal(data, &env)
		route := acs.Route{Tenant: "default", SessionID: env.Params.Metadata.SessionID, Hook: acs.HookToken(env.Method)}
		run := func() []byte {
			out := g.Decide(rs, nil, nil, route, guardian.Message{Data: data, Seq: 42, Time: time.Unix(0, 0)})
			b, _ := json.Marshal(out)
			return b
		}
		if a, b := run(), run(); string(a) != string(b) {
			t.Errorf("%s: two runs differ:\n%s\n%s", p, a, b)
		}
	}
}

// FuzzDecide throws arbitrary bytes at the core on a fixed route. It must
// never panic, must answer or dead-letter every message, and every answer
// must be a valid ACS response envelope.
func FuzzDecide(f *testing.F) {
	paths, _ := filepath.Glob("../../../schema/testdata/envelopes/*/*.json")
	if len(paths) == 0 {
		f.Fatal("no envelope fixtures found")
	}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw, "turnStart")
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"steps/turnEnd","params":{"payload":{"turn_id":1}}}`), "turnEnd")
	v := newValidator(f)
	g := guardian.New(v, guardian.Config{MaxEnvelopeBytes: 64 << 10})
	rs := defaultRules(f)
	f.Fuzz(func(t *testing.T, data []byte, hook string) {
		route := acs.Route{Tenant: "default", SessionID: "59d80ff6-ce6f-4a67-992d-f8fba22c6164", Hook: hook}
		state := turnstate.New(route.Tenant, route.SessionID)
		out := g.Decide(rs, state, nil, route, guardian.Message{Data: data, Seq: 1})
		if out.Response == nil {
			t.Fatalf("no response for %q", data)
		}
		if out.Refusal == nil && out.State == nil && out.Response.Result.Payload == nil {
			t.Fatalf("accepted message changed no state: %q", data)
		}
		checkResponse(t, v, out.Response)
	})
}

// TestTooDeepIsRefusedUnread: an envelope nesting deeper than acs.MaxDepth
// is refused (-32600 envelope_too_deep) before it is decoded, so a 10,000
// deep one of 20 KB costs about what a flat one does, not a container a
// level.
func TestTooDeepIsRefusedUnread(t *testing.T) {
	g := guardian.New(newValidator(t), guardian.Config{})
	rs := defaultRules(t)
	nest := func(n int) string { return strings.Repeat(`[`, n) + `1` + strings.Repeat(`]`, n) }
	deep := envelope("steps/userMessage", `{"content":[{"type":"text","value":"x"}],"extra":`+nest(10_000)+`}`)
	if len(deep) < 20_000 {
		t.Fatalf("%d bytes", len(deep))
	}
	tests := []struct {
		name string
		data []byte
		want bool
	}{
		{"10,000 deep", deep, true},
		{"just past the limit", envelope("steps/userMessage", `{"content":`+nest(acs.MaxDepth-2)+`}`), true},
		{"at the limit", envelope("steps/userMessage", `{"content":`+nest(acs.MaxDepth-3)+`}`), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := g.Decide(rs, nil, nil, routeFor("steps/userMessage"), guardian.Message{Data: tc.data, Seq: 1})
			tooDeep := errors.Is(out.Refusal, &acs.Error{Code: acs.CodeInvalidRequest, Reason: acs.ReasonTooDeep})
			if tooDeep != tc.want {
				t.Fatalf("refusal %v, want envelope_too_deep %v", out.Refusal, tc.want)
			}
		})
	}
	// Refusing it costs no more than refusing a flat envelope too large to
	// read: the allocations of the refusal itself, not of the tree.
	big := guardian.New(newValidator(t), guardian.Config{MaxEnvelopeBytes: 100})
	flat := envelope("steps/userMessage", `{"content":[{"type":"text","value":"x"}]}`)
	base := testing.AllocsPerRun(20, func() {
		_ = big.Decide(rs, nil, nil, routeFor("steps/userMessage"), guardian.Message{Data: flat, Seq: 1})
	})
	got := testing.AllocsPerRun(20, func() {
		_ = g.Decide(rs, nil, nil, routeFor("steps/userMessage"), guardian.Message{Data: deep, Seq: 1})
	})
	if got > base+5 {
		t.Fatalf("refusing the 10,000-deep envelope took %v allocations; refusing an oversized one %v", got, base)
	}
	t.Logf("allocations: too deep %v, too large %v", got, base)
}

// TestCostlyConditionFollowsOnRuleError: a rule condition stopped by the
// CEL cost limit is a failed evaluation, decided by --on-rule-error.
func TestCostlyConditionFollowsOnRuleError(t *testing.T) {
	f, err := policy.ParseFile("cost.yaml", []byte(`apiVersion: turnguard/v1
kind: RuleSet
metadata: {name: t}
rules:
  - {id: R, title: r, severity: low, on: [toolCallRequest], decision: deny,
     when: 'payload.arguments.items.value.exists(x, x == -1) || payload.arguments.items.value.exists(x, x == -2) || payload.arguments.items.value.exists(x, x == -3) || payload.arguments.items.value.exists(x, x == -4) || payload.arguments.items.value.exists(x, x == -5) || payload.arguments.items.value.exists(x, x == -6) || payload.arguments.items.value.exists(x, x == -7) || payload.arguments.items.value.exists(x, x == -8)'}
`))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := policy.Compile([]*policy.File{f})
	if err != nil {
		t.Fatal(err)
	}
	items := make([]string, 100_000)
	for i := range items {
		items[i] = strconv.Itoa(i % 10)
	}
	data := envelope("steps/toolCallRequest", `{"tool":{"name":"Read"},"arguments":{"items":{"value":[`+strings.Join(items, ",")+`]}}}`)
	for _, tc := range []struct {
		onError acs.Disposition
		want    acs.Disposition
	}{{acs.Deny, acs.Deny}, {acs.Allow, acs.Allow}} {
		t.Run(string(tc.onError), func(t *testing.T) {
			g := guardian.New(newValidator(t), guardian.Config{MaxEnvelopeBytes: 1 << 20, OnRuleError: tc.onError})
			out := g.Decide(rs, turnstate.New("default", testSession), nil, routeFor("steps/toolCallRequest"), guardian.Message{Data: data, Seq: 1})
			if out.Refusal != nil || out.Response == nil || out.Response.Result == nil {
				t.Fatalf("outcome %+v", out)
			}
			res := out.Response.Result
			// A deny says why; an allow only carries the reason code.
			if res.Decision != tc.want || !slices.Contains(res.ReasonCodes, "evaluation_failed") || tc.want == acs.Deny && !strings.Contains(res.Reasoning, "cost") {
				t.Fatalf("decision %s %v %q, want %s for a condition over its cost limit", res.Decision, res.ReasonCodes, res.Reasoning, tc.want)
			}
		})
	}
}

// SubagentOf names the subagent session of a subagentStop only: that is
// the one message whose rules may read another session's state.
func TestSubagentOf(t *testing.T) {
	stop := []byte(`{"params":{"payload":{"subagent_session_id":"child-1","outcome":"completed"}}}`)
	tests := []struct {
		name string
		hook string
		data []byte
		want string
	}{
		{"subagentStop", "subagentStop", stop, "child-1"},
		{"another hook with the same payload", "subagentStart", stop, ""},
		{"no subagent_session_id", "subagentStop", []byte(`{"params":{"payload":{}}}`), ""},
		{"not JSON", "subagentStop", []byte(`{`), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := guardian.SubagentOf(acs.Route{Tenant: "t", SessionID: "s", Hook: tc.hook}, tc.data); got != tc.want {
				t.Errorf("SubagentOf = %q, want %q", got, tc.want)
			}
		})
	}
}
