package guardian

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/turnguard/turnguard/examples"
)

var ijsonSeeds = []string{
	`{}`, `[]`, `{"a":1,"b":[true,false,null,"x"],"c":{"d":-0.5e+10}}`, ` {"params" : {"x": 1} } `,
	`{"a":1,"a":2}`, `{"a":"\u0061","\u0061":1}`, `"\ud83d\ude00"`, `"\ud83d"`, `"\u00e9\n\t\"\\\/"`,
	`01`, `1.`, `-`, `1e`, `[1,]`, `{"a":1,}`, `"a` + "\x01" + `"`, "\"\xff\"", `{"a" 1}`, `nul`, `true x`,
	"\xef\xbb\xbf{}", ``, ` `, `[[[[[[]]]]]]`, `{"params":[1,2]}`,
}

// FuzzDecodeIJSON checks the fast parser against the jsontext reference:
// whatever it accepts, the reference accepts with the same document and
// params bytes. (Where it declines, the reference decides.)
func FuzzDecodeIJSON(f *testing.F) {
	for _, s := range ijsonSeeds {
		f.Add([]byte(s))
	}
	for _, e := range examples.Session("") {
		f.Add(e.Data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Known strings the seeds and examples repeat: the values that
		// share them are the same.
		v, params, ok := fastDecodeIJSON(data, examples.SessionID, "x")
		want, wantParams, err := slowDecodeIJSON(data)
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("fast path accepted %q, jsontext refuses it: %v", data, err)
		}
		if !reflect.DeepEqual(v, want) {
			t.Fatalf("%q: fast %#v, jsontext %#v", data, v, want)
		}
		if !bytes.Equal(params, wantParams) {
			t.Fatalf("%q: params %q, jsontext %q", data, params, wantParams)
		}
	})
}

func TestFastDecodeIJSONExamples(t *testing.T) {
	for _, e := range examples.Session("") {
		if _, _, ok := fastDecodeIJSON(e.Data); !ok {
			t.Errorf("%s: fast path declined a valid envelope", e.Hook)
		}
	}
}

func FuzzMarshalID(f *testing.F) {
	for _, s := range []string{"a1c7e9f0-3b2d-4c5e-8f61-0d2e4a6b8c03", "<&>", "\"\\", "é", "\u2028", "\xff", "", "x\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := marshalID(s); !bytes.Equal(got, want) {
			t.Fatalf("marshalID(%q) = %s, json.Marshal %s", s, got, want)
		}
	})
}
