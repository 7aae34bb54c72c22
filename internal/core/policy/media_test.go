package policy

import (
	"encoding/json"
	"testing"
)

// holdsMedia finds an image, a recording or a video in the shapes agents
// pass them on, and not in a record that merely names such a file.
func TestHoldsMedia(t *testing.T) {
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
		{"a data URI of text", `"data:text/plain,hello"`, false},
	} {
		var v any
		if err := json.Unmarshal([]byte(tc.js), &v); err != nil {
			t.Fatal(err)
		}
		if got := holdsMedia(v); got != tc.want {
			t.Errorf("%s: holdsMedia %v, want %v", tc.name, got, tc.want)
		}
	}
}
