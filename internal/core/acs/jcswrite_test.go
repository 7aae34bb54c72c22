package acs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

var canonicalSeeds = []string{
	`{"b":1,"a":[true,false,null,"x\u0001\u001f\n\t\b\f\r\"\\/<>&\u2028é😀"],"c":{"d":-0.5e+10,"e":1E3,"f":-0,"g":123456789012345678}}`,
	`{"é":1,"z":2}`, `[0.1,1e21,1e-7,100,-100,0,9007199254740993]`, `{"a":{"b":{"c":[]}}}`, `"\u007f"`,
}

// FuzzCanonicalValue checks the direct canonical writer against the
// jsontext reference on every JSON text: where it answers, it answers the
// same bytes.
func FuzzCanonicalValue(f *testing.F) {
	for _, s := range canonicalSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var v any
		if d.Decode(&v) != nil || d.More() {
			return
		}
		want, err := CanonicalRaw(raw)
		got, ok := appendCanonicalGo(nil, v, 0)
		if !ok {
			return
		}
		if err != nil {
			// encoding/json keeps the last duplicate name and replaces
			// invalid UTF-8; jsontext refuses both. Not a fast-path bug.
			return
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s:\nfast     %s\njsontext %s", raw, got, want)
		}
	})
}

func FuzzCanonicalEntry(f *testing.F) {
	f.Add("1", "step", "steps/toolCallRequest", "ab", "2026-01-01T00:00:00Z", "t1", true, 3, "user", 2, "tool")
	f.Add("2", "s\"\\\n\x01é", "m", "", "", "", false, 0, "", 0, "")
	f.Add("3", "s", "m", "", "", "", true, -1, "\xff", 1<<60, "é")
	f.Fuzz(func(t *testing.T, id, step, typ, rh, ts, turn string, prov bool, count int, origin string, n int, seen string) {
		e := ContextEntry{EntryID: id, StepID: step, StepType: typ, RequestHash: rh, Timestamp: ts, TurnID: turn}
		if prov {
			p := &ProvenanceSummary{}
			if count >= 0 {
				p.EntryCount = &count
			}
			if origin != "" {
				p.EntryCountByOrigin = map[string]int{origin: n, "a" + origin: 1, "z": 2}
			}
			if seen != "" {
				p.OriginsSeen = []string{seen, "user"}
			}
			e.ProvenanceSummary = p
		}
		want, err := Canonical(e)
		got, ok := appendCanonicalEntry(nil, &e, nil)
		if !ok {
			return
		}
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%+v:\nfast      %s\nreference %s (%v)", e, got, want, err)
		}
	})
}

// provenanceOfReference is ProvenanceOf as it was before it skipped
// sorting scalar members: every member name sorted.
func provenanceOfReference(payload any) []Provenance {
	var out []Provenance
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			if p, ok := t["provenance"].(map[string]any); ok {
				if pv, ok := asProvenance(p); ok {
					out = append(out, pv)
				}
			}
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				if k != "provenance" {
					walk(t[k])
				}
			}
		case []any:
			for _, x := range t {
				walk(x)
			}
		}
	}
	walk(payload)
	return out
}

func FuzzProvenanceOf(f *testing.F) {
	f.Add([]byte(`{"b":{"provenance":{"origin":"user","provenance_id":"p1"}},"a":[{"provenance":{"origin":"tool_output","derived_from":["x"]}}],"c":1,"d":{"e":{"provenance":{"origin":"retrieved"}},"a":{"provenance":{"origin":"external"}}}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return
		}
		if got, want := ProvenanceOf(v), provenanceOfReference(v); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %v, want %v", raw, got, want)
		}
	})
}

// checkResponse compares the direct writer and Canonical with the
// reference path on r, and reports whether the direct writer answered.
func checkResponse(t *testing.T, r *Response) bool {
	t.Helper()
	want, werr := canonicalReference(r)
	got, ok := appendCanonicalResponse(nil, r)
	if ok && (werr != nil || !bytes.Equal(got, want)) {
		t.Fatalf("fast      %s\nreference %s (%v)", got, want, werr)
	}
	c, err := Canonical(r)
	switch {
	case werr != nil && err == nil:
		t.Fatalf("Canonical %s, reference fails: %v", c, werr)
	case werr == nil && (err != nil || !bytes.Equal(c, want)):
		t.Fatalf("Canonical %s (%v)\nreference %s", c, err, want)
	}
	return ok
}

// mode stands for the named string types the core puts in policy_data.
type mode string

// textMode marshals itself, so it must not be written as a plain string.
type textMode string

func (m textMode) MarshalText() ([]byte, error) { return []byte("text:" + string(m)), nil }

type hitRecord struct {
	Rule  string  `json:"rule"`
	Score float64 `json:"score,omitempty"`
	Note  string  `json:"note,omitempty"`
}

func sig() *Signature {
	return &Signature{Algorithm: "ed25519", KeyID: "k1", Value: "c2lnbmF0dXJl/+=="}
}

func allowResponse() *Response {
	return &Response{JSONRPC: "2.0", ID: json.RawMessage(`"req-1"`), Result: &Result{
		Type: ResultTypeFinal, ACSVersion: Version, RequestID: "01J0000000000000000000000", Decision: Allow,
		ChainHash: strings.Repeat("ab", 32), Signature: sig(), Metadata: &ResultMetadata{Evaluator: "turnguard"},
	}}
}

func denyResponse() *Response {
	return &Response{JSONRPC: "2.0", ID: json.RawMessage(`42`), Result: &Result{
		Type: ResultTypeFinal, ACSVersion: Version, RequestID: "01J0000000000000000000001", Decision: Deny,
		Reasoning:   "rule no-exfil: tool output <script> & \"quotes\" must not leave the session",
		ReasonCodes: []string{"rule_hit", "taint_window"},
		PolicyReferences: []PolicyReference{
			{PolicyID: "turnguard/rules", PolicyName: "default", PolicyVersion: "7", RuleID: "no-exfil"},
			{RuleID: "taint"},
		},
		CitedProvenanceIDs: []string{"p1", "p2"},
		PolicyData: map[string]any{
			"turnguard": map[string]any{
				"ruleset": map[string]any{"name": "default", "revision": 7},
				"hits": []map[string]any{
					{"rule_id": "no-exfil", "mode": mode("enforce"), "decision": mode("deny"), "message": "exfiltration"},
				},
				"evaluation_errors": []string{"rule x: undefined field"},
			},
			"aarm": map[string]any{"taint": "untrusted", "earliest_untrusted_turn": 3, "lookback_distance": 2},
		},
		Payload:   map[string]any{"status": "ok", "n": json.Number("12"), "list": []any{true, nil, "x"}},
		ChainHash: strings.Repeat("cd", 32), Signature: sig(),
	}}
}

func TestCanonicalResponse(t *testing.T) {
	type tc struct {
		name string
		r    *Response
		fast bool // the direct writer must answer
	}
	with := func(f func(r *Response)) *Response {
		r := denyResponse()
		f(r)
		return r
	}
	cases := []tc{
		{"allow", allowResponse(), true},
		{"deny", denyResponse(), true},
		{"minimal", &Response{JSONRPC: "2.0", ID: json.RawMessage(`1`), Result: &Result{Type: "final", Decision: Allow}}, true},
		{"empty", &Response{}, true},
		{"ask", &Response{JSONRPC: "2.0", ID: json.RawMessage(`"a"`), Result: &Result{Type: "final", ACSVersion: Version, RequestID: "r",
			Decision: Ask, AskDetails: &AskDetails{Approver: Approver{Type: "human", ID: "ops"}, Question: "ok?"}}}, true},
		{"ask full", &Response{JSONRPC: "2.0", ID: json.RawMessage(`"a"`), Result: &Result{Type: "final", ACSVersion: Version, RequestID: "r",
			Decision: Ask, AskDetails: &AskDetails{Approver: Approver{Type: "human", ID: "ops", Endpoint: "https://x/y?a=1&b=<2>"},
				Question: "ok?", Context: "ctx\u2028\u2029", Options: []string{"yes", "no"}, TimeoutSeconds: 30, TimeoutDisposition: "deny"}}}, true},
		{"ask empty options", &Response{JSONRPC: "2.0", ID: json.RawMessage(`"a"`), Result: &Result{Decision: Ask,
			AskDetails: &AskDetails{Options: []string{}, TimeoutSeconds: -5}}}, true},
		{"modify", with(func(r *Response) {
			r.Result.Decision = Modify
			r.Result.Payload = map[string]any{"tool": map[string]any{"name": "sh", "args": []any{"-c", "echo \x00\x01\x1f\x7f"}}}
		}), true},
		{"empty slices and maps", with(func(r *Response) {
			r.Result.ReasonCodes = []string{}
			r.Result.PolicyReferences = []PolicyReference{}
			r.Result.CitedProvenanceIDs = []string{}
			r.Result.PolicyData = map[string]any{}
			r.Result.Payload = map[string]any{}
		}), true},
		{"empty policy reference", with(func(r *Response) { r.Result.PolicyReferences = []PolicyReference{{}} }), true},
		{"empty metadata", with(func(r *Response) { r.Result.Metadata = &ResultMetadata{} }), true},
		{"empty signature", with(func(r *Response) { r.Result.Signature = &Signature{} }), true},
		{"nested nils", with(func(r *Response) {
			r.Result.PolicyData = map[string]any{"m": map[string]any(nil), "s": []any(nil), "ss": []string(nil),
				"ms": map[string]string(nil), "lm": []map[string]any(nil), "e": (*RPCError)(nil), "p": (*int)(nil), "n": nil}
		}), true},
		{"unicode and escapes", with(func(r *Response) {
			r.Result.Reasoning = "é😀\u2028\u2029<>&\"\\/\b\f\n\r\t\x00\x1f\u007f\ufeff"
			r.Result.PolicyData = map[string]any{"k\n\"<": "v", "a": map[string]string{"z": "1", "\t": "2"}}
		}), true},
		{"numbers", with(func(r *Response) {
			r.Result.Payload = map[string]any{"a": json.Number("-0.5e+10"), "b": json.Number("1E3"), "c": json.Number("123456789012345678"),
				"d": json.Number("-0"), "e": json.Number("0.1"), "i": -7, "i64": int64(1 << 40), "u8": uint8(200), "i32": int32(-3)}
		}), true},
		{"floats", with(func(r *Response) {
			r.Result.Payload = map[string]any{"f": 0.1, "g": 1e21, "h": math.Copysign(0, -1), "i": 3.0, "j": float32(0.1)}
		}), true},
		{"structs and marshalers", with(func(r *Response) {
			r.Result.PolicyData = map[string]any{"hits": []hitRecord{{Rule: "a", Score: 0.25, Note: "<b>"}}, "m": textMode("x"),
				"t": time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), "raw": json.RawMessage(` {"b":1, "a":2} `), "bytes": []byte("hi"),
				"mi": map[string]int{"b": 1, "a": 2}, "named": map[mode]any{"z": 1, "y": mode("x")}}
		}), true},
		{"rpc error in policy data", with(func(r *Response) {
			r.Result.PolicyData = map[string]any{"turnguard": map[string]any{"error": (&Error{Code: -32006, Reason: "skew", Message: "clock",
				SkewWindowMS: 300000}).RPC("steps/toolCallRequest")}}
		}), true},
		{"error", &Response{JSONRPC: "2.0", ID: NullID, Error: &RPCError{Code: -32600, Message: "invalid request"}}, true},
		{"error full", &Response{JSONRPC: "2.0", ID: json.RawMessage(`"x"`), Error: &RPCError{Code: -32001, Message: "unsupported <version>",
			Data: &RPCErrData{Reason: "version", Method: "steps/x", SupportedVersions: []string{"0.1.0"}, SkewWindowMS: 1500,
				Violations: []Violation{{Pointer: "/params/acs_version", Message: "must be \"0.1.0\""}, {}}},
			Signature: sig()}}, true},
		{"error empty data", &Response{JSONRPC: "2.0", ID: json.RawMessage(`7`), Error: &RPCError{Data: &RPCErrData{SupportedVersions: []string{}, Violations: []Violation{}}}}, true},
		{"result and error", with(func(r *Response) { r.Error = &RPCError{Code: 1, Message: "m"} }), true},

		// ids
		{"id nil", with(func(r *Response) { r.ID = nil }), true},
		{"id null", with(func(r *Response) { r.ID = json.RawMessage(`null`) }), true},
		{"id zero", with(func(r *Response) { r.ID = json.RawMessage(`0`) }), true},
		{"id negative", with(func(r *Response) { r.ID = json.RawMessage(`-123`) }), true},
		{"id 15 digits", with(func(r *Response) { r.ID = json.RawMessage(`999999999999999`) }), true},
		{"id escaped string", with(func(r *Response) { r.ID = json.RawMessage(`"a\u0041\/\n\u00e9\ud83d\ude00<"`) }), true},
		{"id unicode string", with(func(r *Response) { r.ID = json.RawMessage(`"é😀\u2028"`) }), true},
		{"id 16 digits", with(func(r *Response) { r.ID = json.RawMessage(`9007199254740993`) }), false},
		{"id float", with(func(r *Response) { r.ID = json.RawMessage(`1.0`) }), false},
		{"id exponent", with(func(r *Response) { r.ID = json.RawMessage(`1e2`) }), false},
		{"id minus zero", with(func(r *Response) { r.ID = json.RawMessage(`-0`) }), false},
		{"id leading zero", with(func(r *Response) { r.ID = json.RawMessage(`01`) }), false},
		{"id spaces", with(func(r *Response) { r.ID = json.RawMessage(` 1 `) }), false},
		{"id string space", with(func(r *Response) { r.ID = json.RawMessage(`"a" `) }), false},
		{"id object", with(func(r *Response) { r.ID = json.RawMessage(`{"b":1,"a":2}`) }), false},
		{"id true", with(func(r *Response) { r.ID = json.RawMessage(`true`) }), false},
		{"id empty", with(func(r *Response) { r.ID = json.RawMessage{} }), false},
		{"id lone surrogate", with(func(r *Response) { r.ID = json.RawMessage(`"\ud800"`) }), false},
		{"id invalid utf8", with(func(r *Response) { r.ID = json.RawMessage("\"\xff\"") }), false},
		{"id control", with(func(r *Response) { r.ID = json.RawMessage("\"\x01\"") }), false},
		{"id garbage", with(func(r *Response) { r.ID = json.RawMessage(`"a`) }), false},
		{"id minus", with(func(r *Response) { r.ID = json.RawMessage(`-`) }), false},

		// fallbacks
		{"invalid utf8", with(func(r *Response) { r.Result.Reasoning = "a\xffb" }), false},
		{"invalid utf8 in policy data", with(func(r *Response) { r.Result.PolicyData["x"] = "\xc3" }), false},
		{"non-ascii key", with(func(r *Response) { r.Result.PolicyData["é"] = 1 }), false},
		{"large int", with(func(r *Response) { r.Result.Payload["big"] = 1 << 60 }), false},
		{"large uint", with(func(r *Response) { r.Result.Payload["big"] = uint64(1 << 60) }), false},
		{"empty number", with(func(r *Response) { r.Result.Payload["n"] = json.Number("") }), false},
		{"invalid number", with(func(r *Response) { r.Result.Payload["n"] = json.Number(" 1") }), false},
		{"huge number", with(func(r *Response) { r.Result.Payload["n"] = json.Number("1e400") }), true},
		{"nan", with(func(r *Response) { r.Result.Payload["n"] = math.NaN() }), false},
		{"large timeout", &Response{Result: &Result{AskDetails: &AskDetails{TimeoutSeconds: 1 << 60}}}, false},
		{"large code", &Response{Error: &RPCError{Code: -1 << 60, Message: "m"}}, false},
		{"large skew", &Response{Error: &RPCError{Data: &RPCErrData{SkewWindowMS: 1 << 60}}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if ok := checkResponse(t, c.r); ok != c.fast {
				t.Errorf("direct writer answered %v, want %v", ok, c.fast)
			}
		})
	}
}

// TestCanonicalResponseAllocs: a decision's canonical form costs the one
// allocation of the returned slice. More means the writer's buffer has
// escaped to the heap (recursion through a second function does that).
func TestCanonicalResponseAllocs(t *testing.T) {
	for name, r := range map[string]*Response{"allow": allowResponse(), "deny": denyResponse()} {
		if n := testing.AllocsPerRun(100, func() {
			if _, err := Canonical(r); err != nil {
				t.Fatal(err)
			}
		}); n != 1 {
			t.Errorf("%s: %.1f allocations, want 1", name, n)
		}
	}
}

func TestCanonicalResponseCycle(t *testing.T) {
	r := denyResponse()
	loop := map[string]any{}
	loop["self"] = loop
	r.Result.PolicyData["loop"] = loop
	if checkResponse(t, r) {
		t.Error("direct writer answered a cyclic policy_data")
	}
}

func TestCanonicalResponseDeep(t *testing.T) {
	for _, n := range []int{100, 300, 9990, 10010} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			r := denyResponse()
			var v any = "x"
			var raw = `"x"`
			for range n {
				v = map[string]any{"a": v}
				raw = `{"a":` + raw + `}`
			}
			r.Result.Payload = map[string]any{"deep": v, "raw": json.RawMessage(raw)}
			checkResponse(t, r)
		})
	}
}

func FuzzCanonicalResponse(f *testing.F) {
	f.Add([]byte(`"req-1"`), "allow", "reason <&> \u2028", "k", "v\x00", "12.5e3", 3, int64(1500), uint8(0))
	f.Add([]byte(`42`), "deny", "", "", "", "", 0, int64(0), uint8(255))
	f.Add([]byte(`-0`), "\xff", "é", "é", "\xed\xa0\x80", "-0", -1, int64(1<<60), uint8(7))
	f.Add([]byte(` "a\u00e9" `), "ask", "x", "a\"b", "\\", "1E400", 1<<62, int64(-1), uint8(128))
	f.Fuzz(func(t *testing.T, id []byte, s1, s2, key, val, num string, n int, n64 int64, flags uint8) {
		r := &Response{JSONRPC: "2.0", ID: json.RawMessage(id)}
		if flags&1 != 0 && len(id) == 0 {
			r.ID = nil
		}
		if flags&2 == 0 {
			res := &Result{Type: ResultTypeFinal, ACSVersion: Version, RequestID: s1, Decision: Disposition(s1), Reasoning: s2,
				ChainHash: val, Metadata: &ResultMetadata{Evaluator: s2}}
			if flags&4 != 0 {
				res.ReasonCodes = []string{s1, key}
				res.PolicyReferences = []PolicyReference{{PolicyID: s1, RuleID: val}, {PolicyName: s2, PolicyVersion: key}}
				res.CitedProvenanceIDs = []string{val}
			}
			if flags&8 != 0 {
				res.AskDetails = &AskDetails{Approver: Approver{Type: s1, ID: key, Endpoint: val}, Question: s2,
					Context: key, Options: []string{val, s1}, TimeoutSeconds: n, TimeoutDisposition: s2}
			}
			if flags&16 != 0 {
				res.PolicyData = map[string]any{
					key: map[string]any{val: json.Number(num), "n": n, "n64": n64, "m": mode(s2)},
					"a": []any{s1, json.Number(num), nil, true, []map[string]any{{key: val}}},
				}
			}
			if flags&32 != 0 {
				res.Payload = map[string]any{"s": []string{s1, s2}, key: map[string]string{val: s1}, "f": float64(n64) / 7, "u": uint(n)}
			}
			if flags&64 != 0 {
				res.Signature = &Signature{Algorithm: s1, KeyID: key, Value: val}
			}
			r.Result = res
		}
		if flags&128 != 0 {
			r.Error = &RPCError{Code: n, Message: s2, Data: &RPCErrData{Reason: s1, Method: key, SkewWindowMS: n64,
				SupportedVersions: []string{val}, Violations: []Violation{{Pointer: key, Message: val}}}}
			if flags&64 != 0 {
				r.Error.Signature = &Signature{Algorithm: s1, KeyID: key, Value: val}
			}
		}
		checkResponse(t, r)
	})
}

func BenchmarkCanonicalResponse(b *testing.B) {
	for _, c := range []struct {
		name string
		r    *Response
	}{{"allow", allowResponse()}, {"deny", denyResponse()}} {
		b.Run(c.name+"/reference", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := canonicalReference(c.r); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/fast", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Canonical(c.r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
