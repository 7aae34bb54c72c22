package acs

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"
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
		got, ok := appendCanonicalValue(nil, v)
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
		got, ok := appendCanonicalEntry(nil, &e)
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
