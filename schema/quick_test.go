package schema

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// agreeWithLibrary fails when quick is sure of a verdict the library does
// not share, for the request envelope and, where the method is known, its
// payload schema.
func agreeWithLibrary(t *testing.T, v *Validator, raw []byte) {
	t.Helper()
	doc, err := Decode(raw)
	if err != nil {
		return
	}
	check := func(what string, s *jsonschema.Schema, x any) {
		q := v.quick.check(s, x, 0)
		lib := s.Validate(x) == nil
		if q == valid && !lib || q == invalid && lib {
			t.Fatalf("%s of %s: quick says %d, library valid=%v", what, raw, q, lib)
		}
	}
	check("request", v.request, doc)
	for _, s := range v.payloads {
		check("payload", s, doc)
	}
	obj, _ := doc.(map[string]any)
	params, _ := obj["params"].(map[string]any)
	if m, ok := obj["method"].(string); ok && v.payloads[m] != nil {
		check("payload", v.payloads[m], params["payload"])
	}
	if params != nil {
		for _, s := range v.payloads {
			check("payload", s, params["payload"])
		}
	}
}

func testdataEnvelopes(tb testing.TB) [][]byte {
	paths, _ := filepath.Glob(filepath.Join("testdata", "envelopes", "*", "*.json"))
	var out [][]byte
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, raw)
	}
	if len(out) == 0 {
		tb.Fatal("no envelopes under testdata")
	}
	return out
}

func TestQuickAgreesWithLibrary(t *testing.T) {
	v, err := New()
	if err != nil {
		t.Fatal(err)
	}
	decided := 0
	for _, raw := range testdataEnvelopes(t) {
		agreeWithLibrary(t, v, raw)
		doc, _ := Decode(raw)
		if v.quick.check(v.request, doc, 0) == valid {
			decided++
		}
	}
	if decided == 0 {
		t.Fatal("quick decided no envelope valid")
	}
}

// FuzzQuick mutates the testdata envelopes: quick may be unsure, never
// wrong.
func FuzzQuick(f *testing.F) {
	for _, raw := range testdataEnvelopes(f) {
		f.Add(raw)
	}
	v, err := New()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw []byte) { agreeWithLibrary(t, v, raw) })
}

// FuzzQuickFormat checks the allocation-free format checks against the
// library's: they may decline, never accept what the library refuses.
func FuzzQuickFormat(f *testing.F) {
	for _, s := range []string{"2026-01-02T03:04:05Z", "2026-01-02T03:04:05.123456Z", "2024-02-29T23:59:59Z", "2023-02-29T00:00:00Z",
		"2026-13-01T00:00:00Z", "2026-01-02T03:04:60Z", "0000-01-01T00:00:00Z", "2026-01-02t03:04:05z",
		"123e4567-e89b-12d3-a456-426614174000", "123e4567-e89b-12d3-a456-42661417400g", "123e4567e89b-12d3-a456-4266141740000"} {
		f.Add(s)
	}
	v, err := New()
	if err != nil {
		f.Fatal(err)
	}
	formats := map[string]*jsonschema.Format{}
	var walk func(s *jsonschema.Schema)
	walk = func(s *jsonschema.Schema) {
		if s == nil || (s.Format != nil && formats[s.Format.Name] != nil) {
			return
		}
		if s.Format != nil {
			formats[s.Format.Name] = s.Format
		}
		walk(s.Ref)
		for _, p := range s.Properties {
			walk(p)
		}
	}
	walk(v.request)
	for _, name := range []string{"uuid", "date-time"} {
		if formats[name] == nil {
			f.Fatalf("no %s format in the request envelope schema", name)
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		for name, fm := range formats {
			if quickFormat(fm, s) != (fm.Validate(s) == nil) {
				t.Fatalf("%s %q: quick %v, library %v", name, s, quickFormat(fm, s), fm.Validate(s))
			}
		}
	})
}

// TestQuickAgreesOnMutations mutates every member and element of every
// testdata envelope — deleted, or replaced by a value of each JSON type —
// and checks quick against the library on the request envelope and on the
// payload schema of the envelope's method.
func TestQuickAgreesOnMutations(t *testing.T) {
	v, err := New()
	if err != nil {
		t.Fatal(err)
	}
	replacements := []any{"x", "", json.Number("1"), json.Number("-1.5"), json.Number("1e400"), true, nil,
		map[string]any{}, []any{}, []any{"a", "a"}, "123e4567-e89b-12d3-a456-426614174000", "2026-01-02T03:04:05Z"}
	agree := func(doc any) {
		t.Helper()
		check := func(what string, s *jsonschema.Schema, x any) {
			q := v.quick.check(s, x, 0)
			lib := s.Validate(x) == nil
			if q == valid && !lib || q == invalid && lib {
				t.Fatalf("%s: quick says %d, library valid=%v for %#v", what, q, lib, x)
			}
		}
		check("request", v.request, doc)
		obj := doc.(map[string]any)
		params, _ := obj["params"].(map[string]any)
		m, _ := obj["method"].(string)
		if s := v.payloads[m]; s != nil && params != nil {
			check(m, s, params["payload"])
		}
	}
	n := 0
	for _, raw := range testdataEnvelopes(t) {
		doc, err := Decode(raw)
		if err != nil {
			continue
		}
		if _, ok := doc.(map[string]any); !ok {
			continue
		}
		// mutate changes doc at one place at a time, checks it, and
		// restores it.
		var mutate func(x any)
		mutate = func(x any) {
			switch x := x.(type) {
			case map[string]any:
				for k, old := range x {
					delete(x, k)
					agree(doc)
					for _, r := range replacements {
						x[k] = r
						agree(doc)
						n++
					}
					x[k] = old
					mutate(old)
				}
				x["unexpected_member"] = "x"
				agree(doc)
				delete(x, "unexpected_member")
			case []any:
				for i, old := range x {
					for _, r := range replacements {
						x[i] = r
						agree(doc)
						n++
					}
					x[i] = old
					mutate(old)
				}
			}
		}
		mutate(doc)
	}
	t.Logf("%d mutations", n)
}

// FuzzPlainPatterns checks the pattern shortcuts against the compiled
// regexps: they may decline, never accept what the regexp refuses.
func FuzzPlainPatterns(f *testing.F) {
	for _, s := range []string{"0.1.0", "10.20.30", "1.2", "1.2.3.4", "1.2.3\n", "a.b.c", "steps/turnStart", "steps/", "steps/\nx",
		"wrapped:a2a", "x" + strings.Repeat("a", 63), strings.Repeat("0f", 32), strings.Repeat("0F", 32), "\u0661.1.1"} {
		f.Add(s)
	}
	res := map[string]*regexp.Regexp{}
	for pattern := range plainPatterns {
		res[pattern] = regexp.MustCompile(pattern)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for pattern, fast := range plainPatterns {
			if fast(s) && !res[pattern].MatchString(s) {
				t.Fatalf("%s: shortcut accepts %q, regexp refuses it", pattern, s)
			}
		}
	})
}

// Every pattern on a property the ACS schemas name has a shortcut, so none
// costs a regexp run on valid input.
func TestEveryPatternHasAShortcut(t *testing.T) {
	v, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for s := range v.quick.props {
		for _, p := range v.quick.props[s] {
			if re := p.schema.Pattern; re != nil && plainPatterns[re.String()] == nil {
				t.Errorf("%s: pattern %s has no shortcut", p.schema.Location, re)
			}
		}
	}
}
