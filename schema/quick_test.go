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
