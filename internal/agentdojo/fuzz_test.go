package agentdojo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/agentdojo"
)

// FuzzParseRun: any bytes either fail to parse with an error, or parse
// into a run that builds (or fails to build with an error) into envelopes
// that are JSON and name their calls consistently.
func FuzzParseRun(f *testing.F) {
	sample, err := os.ReadFile("testdata/sample.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	for _, line := range bytes.Split(sample, []byte("\n"))[:6] {
		f.Add(line)
	}
	f.Add([]byte(`{"suite_name":"s","pipeline_name":"m","user_task_id":"u","utility":true,"security":false,"messages":[{"role":"user","content":[{"type":"text","content":"x"}]},{"role":"tool","content":"r","tool_call":{"function":"f","args":{}}}]}`))
	f.Add([]byte(`{"suite_name":"s","pipeline_name":"m","user_task_id":"u","utility":true,"security":true,"attack_type":"a","injections":{"p":"x"},"messages":[{"role":"user","content":"x"},{"role":"assistant","content":null,"tool_calls":[{"function":"f","args":{"a":[1,{"b":null}]},"id":null}]}]}`))
	rs := benchRules(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		run, err := agentdojo.ParseRun("fuzz", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz: ") {
				t.Fatalf("error %q does not name the source", err)
			}
			return
		}
		s, err := agentdojo.Build(run)
		if err != nil {
			return
		}
		calls := 0
		for i, e := range s.Envelopes {
			if !json.Valid(e.Data) {
				t.Fatalf("envelope %d is not JSON: %s", i+1, e.Data)
			}
			if e.Call >= 0 {
				if e.Call != calls || e.Hook != "toolCallRequest" {
					t.Fatalf("envelope %d: call %d (%s), want call %d", i+1, e.Call, e.Hook, calls)
				}
				calls++
			}
		}
		if calls != len(s.Calls) {
			t.Fatalf("%d requests for %d calls", calls, len(s.Calls))
		}
		// Scoring reads the labels and arguments of any run that parsed.
		agentdojo.ScoreRun(run, s, make([]agentdojo.Decision, len(s.Calls)), rs)
	})
}

// FuzzReadLines: any stream splits into lines without losing or inventing
// bytes.
func FuzzReadLines(f *testing.F) {
	f.Add([]byte("a\nb\n\n c \n"))
	f.Add([]byte("no newline"))
	f.Add([]byte("\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var got [][]byte
		err := agentdojo.ReadLines(context.Background(), "f", bytes.NewReader(data), func(it agentdojo.Item) error {
			got = append(got, it.Data)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var want [][]byte
		for _, l := range bytes.Split(data, []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 {
				want = append(want, l)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%d lines, want %d", len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("line %d: %q, want %q", i+1, got[i], want[i])
			}
		}
	})
}
