package policy

import (
	"encoding/json"
	"strings"
	"testing"
)

// b64 is n characters of base64; wrapped breaks it into JSON-escaped
// lines of 60, as an API wraps a file's contents.
func b64(n int) string { return strings.Repeat("QUJD", n/4+1)[:n] }

func wrapped(s string) string {
	var b strings.Builder
	for len(s) > 60 {
		b.WriteString(s[:60] + `\n`)
		s = s[60:]
	}
	return b.String() + s
}

// holdsUnreadable finds an image, a recording, a video, a PDF or encoded
// data in the shapes agents pass them on, and not in a record that merely
// names such a file, nor in text.
func TestHoldsUnreadable(t *testing.T) {
	for _, tc := range []struct {
		name, js string
		want     bool
	}{
		{"MCP image content", `[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}]`, true},
		{"MCP audio content", `{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"}`, true},
		{"MCP embedded resource blob", `{"type":"resource","resource":{"uri":"file:///a.png","mimeType":"image/png","blob":"iVBORw0KGgo="}}`, true},
		{"Anthropic image block", `{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/4AAQ"}}`, true},
		{"OpenAI image_url part", `{"type":"image_url","image_url":{"url":"https://cdn.example/x.png"}}`, true},
		{"OpenAI input_audio part", `{"type":"input_audio","input_audio":{"data":"UklGRg==","format":"wav"}}`, true},
		{"ACS image part", `{"type":"image","value":"https://cdn.example/x.png"}`, true},
		{"data URI", `"data:image/png;base64,iVBORw0KGgo="`, true},
		{"data URI, upper case", `"DATA:Image/PNG;base64,iVBORw0KGgo="`, true},
		{"nested in a tool's JSON", `{"result":{"content":[{"type":"text","text":"see"},{"type":"image","data":"AA==","mimeType":"image/png"}]}}`, true},
		{"Anthropic PDF document", `{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0x"}}`, true},
		{"OpenAI input_file", `{"type":"input_file","filename":"a.pdf","file_data":"data:application/pdf;base64,JVBERi0x"}`, true},
		{"MCP PDF resource", `{"type":"resource","resource":{"uri":"file:///a.pdf","mimeType":"application/pdf","blob":"JVBERi0x"}}`, true},
		{"MCP text resource", `{"type":"resource","resource":{"uri":"file:///a.md","mimeType":"text/markdown","text":"# hi"}}`, false},
		{"a listing naming an image file", `{"files":[{"name":"logo.png","mimeType":"image/png","id":"1"}]}`, false},
		{"a record whose type is image, nothing carried", `{"type":"image","name":"logo.png"}`, false},
		{"a data URI quoted in prose", `"the logo is data:image/png;base64,iVBOR"`, false},
		{"text part", `{"type":"text","value":"hello"}`, false},
		{"a file's contents as an API returns them", `{"stdout":"{\"name\": \"README.md\", \"encoding\": \"base64\", \"content\": \"` + wrapped(b64(1500)) + `\"}"}`, true},
		{"a blob an adapter shortened", `{"type":"text","text":"iVBORw0KGgo…[turnguard: 183412 bytes of encoded data left out]"}`, true},
		{"commit hashes, one a line", `"` + strings.Repeat("3f1c9a7be0d24c51a8e6f2b9d0c7a4e1f5b8c3d2\\n", 40) + `"`, false},
		{"names, one a line", `"` + strings.Repeat("internal\\ncmd\\ndocs\\nexamples\\nschema\\n", 40) + `"`, false},
		{"a short token", `"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl"`, false},
		{"a long URL", `"https://example.com/a?` + b64(300) + `&b=` + b64(300) + `&c=` + b64(300) + `&d=` + b64(300) + `"`, false},
		{"a data URI of text", `"data:text/plain,hello"`, false},
	} {
		var v any
		if err := json.Unmarshal([]byte(tc.js), &v); err != nil {
			t.Fatal(err)
		}
		if got := holdsUnreadable(v); got != tc.want {
			t.Errorf("%s: holdsUnreadable %v, want %v", tc.name, got, tc.want)
		}
	}
	if !holdsUnreadable("iVBORw0KGgo" + LeftOut(183412)) {
		t.Error("LeftOut's note is not taken for data left out")
	}
	if !holdsUnreadable("Issue 12 <!-- <<<" + CutShort(131072, 160000)) {
		t.Error("CutShort's note is not taken for content lineage did not see")
	}
}
