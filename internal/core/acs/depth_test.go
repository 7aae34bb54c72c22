package acs_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/core/acs"
)

// nested is n arrays or objects inside one another around a scalar.
func nested(n int, obj bool) string {
	open, close := strings.Repeat("[", n), strings.Repeat("]", n)
	if obj {
		open, close = strings.Repeat(`{"a":`, n), strings.Repeat("}", n)
	}
	return open + "1" + close
}

func TestCheckDepth(t *testing.T) {
	tests := []struct {
		name string
		data string
		max  int
		want bool // refused
	}{
		{"scalar", `1`, 1, false},
		{"flat object", `{"a":1,"b":[1,2]}`, 2, false},
		{"one too deep", `{"a":1,"b":[1,2]}`, 1, true},
		{"at the limit (arrays)", nested(64, false), 64, false},
		{"past the limit (arrays)", nested(65, false), 64, true},
		{"at the limit (objects)", nested(64, true), 64, false},
		{"past the limit (objects)", nested(65, true), 64, true},
		{"brackets in strings do not count", `{"a":"[[[[{{{{"}`, 1, false},
		{"escaped quote keeps the string open", `{"a":"\"[[["}`, 1, false},
		{"escaped backslash ends before the quote", `{"a":"\\","b":[[1]]}`, 2, true},
		{"siblings do not add up", `[[1],[1],[1],[1]]`, 2, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := acs.CheckDepth([]byte(tc.data), tc.max)
			if (err != nil) != tc.want {
				t.Fatalf("CheckDepth(%.40q, %d) = %v, want refused %v", tc.data, tc.max, err, tc.want)
			}
			if err != nil && (err.Code != acs.CodeInvalidRequest || err.Reason != acs.ReasonTooDeep) {
				t.Fatalf("refusal %d %s", err.Code, err.Reason)
			}
		})
	}
}

// TestCheckDepthCheap: a 10,000-deep envelope of 20 KB is refused without
// an allocation beyond the refusal itself, whatever its size.
func TestCheckDepthCheap(t *testing.T) {
	deep := []byte(`{"jsonrpc":"2.0","method":"steps/turnStart","params":{"payload":` + nested(10_000, false) + `}}`)
	if len(deep) < 20_000 {
		t.Fatalf("%d bytes", len(deep))
	}
	allocs := testing.AllocsPerRun(100, func() {
		if acs.CheckDepth(deep, acs.MaxDepth) == nil {
			t.Fatal("not refused")
		}
	})
	// The *Error and its message.
	if allocs > 3 {
		t.Fatalf("%v allocations to refuse it", allocs)
	}
}

// depthOf is the nesting depth of a valid JSON document, by decoding it.
func depthOf(v any) int {
	switch x := v.(type) {
	case map[string]any:
		d := 0
		for _, e := range x {
			d = max(d, depthOf(e))
		}
		return d + 1
	case []any:
		d := 0
		for _, e := range x {
			d = max(d, depthOf(e))
		}
		return d + 1
	}
	return 0
}

// FuzzCheckDepth: on every valid JSON document CheckDepth agrees with the
// depth the decoder finds; on any input it neither panics nor reads past
// the end.
func FuzzCheckDepth(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":[{"b":"[\"]"}]}`, `"\\"`, `[[[[1]]]]`, `{"a":"\u005b"}`, `"\`, nested(70, true)} {
		f.Add([]byte(s), 3)
	}
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		max = max%80 + 1
		if max <= 0 {
			max += 80
		}
		err := acs.CheckDepth(data, max)
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		if d := depthOf(v); (d > max) != (err != nil) {
			t.Fatalf("depth %d, max %d: CheckDepth says %v", d, max, err)
		}
	})
}
