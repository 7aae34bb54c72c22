package schema

import (
	"os"
	"path/filepath"
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
		q := quick(s, x, 0)
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
	valid := 0
	for _, raw := range testdataEnvelopes(t) {
		agreeWithLibrary(t, v, raw)
		doc, _ := Decode(raw)
		if quick(v.request, doc, 0) == 1 {
			valid++
		}
	}
	if valid == 0 {
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
