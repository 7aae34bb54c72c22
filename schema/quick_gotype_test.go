package schema

import (
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The fast check mirrors number keywords for json.Number only: a Go float64
// or int against a schema with bounds but no "type" must be left to the
// library, never called valid.
func TestQuickLeavesGoNumbersToTheLibrary(t *testing.T) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	doc, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"properties":{"n":{"minimum":0}}}`))
	c.AddResource("x.json", doc)
	s, err := c.Compile("x.json")
	if err != nil {
		t.Fatal(err)
	}
	q := newQuicker(s)
	for _, n := range []any{float64(-1), -1, int64(-1)} {
		inst := map[string]any{"n": n}
		if s.Validate(inst) == nil {
			t.Fatalf("the library accepts %T %v", n, n)
		}
		if got := q.check(s, inst, 0); got == valid {
			t.Errorf("quick calls {n: %T(-1)} valid", n)
		}
	}
}
