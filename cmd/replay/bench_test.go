package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sampleRuns is the AgentDojo sample the agentdojo package's goldens use.
const sampleRuns = "../../internal/agentdojo/testdata/sample.jsonl"

func TestBenchAgentDojo(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "agentdojo", sampleRuns}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	want, err := os.ReadFile("../../internal/agentdojo/testdata/bench.golden")
	if err != nil {
		t.Fatal(err)
	}
	// The golden also holds the runs/ tree: the table's first line and
	// header are the same, and both have an overall row.
	gotLines, wantLines := strings.Split(stdout.String(), "\n"), strings.Split(string(want), "\n")
	if gotLines[0] != wantLines[0] || gotLines[1] != wantLines[1] {
		t.Errorf("table head\n%s\n%s\nwant\n%s\n%s", gotLines[0], gotLines[1], wantLines[0], wantLines[1])
	}
	if !strings.Contains(stdout.String(), "\nall                         all        32    ") {
		t.Errorf("no overall row of 32 runs:\n%s", stdout.String())
	}
	if !strings.Contains(stderr.String(), "32 runs decided in") {
		t.Errorf("stderr: %s", stderr.String())
	}

	// --json with explicit rules, to a file: every call carries its
	// decision.
	stdout.Reset()
	stderr.Reset()
	out := filepath.Join(t.TempDir(), "report.json")
	code = run(context.Background(), []string{"bench", "agentdojo", "--json", "--rules", "builtin:default", "--output", out, "--workers", "1", sampleRuns}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("--json: exit %d, stderr:\n%s", code, stderr.String())
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Rules string `json:"rules"`
		Runs  []struct {
			Calls []struct {
				Tool     string `json:"tool"`
				Decision string `json:"decision"`
			} `json:"calls"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Rules != "turnguard-default" || len(rep.Runs) != 32 {
		t.Fatalf("rules %q, %d runs", rep.Rules, len(rep.Runs))
	}
	calls := 0
	for _, r := range rep.Runs {
		for _, c := range r.Calls {
			if c.Tool == "" || c.Decision == "" {
				t.Errorf("a call without tool or decision: %+v", c)
			}
			calls++
		}
	}
	if calls == 0 {
		t.Error("no calls in the report")
	}
}

func TestBenchAgentDojoErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no benchmark", []string{"bench"}, exitError, "a benchmark is required"},
		{"unknown benchmark", []string{"bench", "webarena"}, exitError, `unknown benchmark "webarena"`},
		{"no files", []string{"bench", "agentdojo"}, exitError, "give the AgentDojo run files"},
		{"missing file", []string{"bench", "agentdojo", "nowhere.jsonl"}, exitError, "nowhere.jsonl"},
		{"bad rules", []string{"bench", "agentdojo", "--rules", "nowhere.yaml", sampleRuns}, exitError, "nowhere.yaml"},
		{"unreadable run", []string{"bench", "agentdojo", bad}, exitError, "unreadable: " + bad + ":1"},
		{"token without live", []string{"bench", "agentdojo", "--token", "t", sampleRuns}, exitError, "--token needs --live"},
		{"live endpoint down", []string{"bench", "agentdojo", "--live", "http://127.0.0.1:1/acs", sampleRuns}, exitError, "handshake: Post"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), tt.args, &stdout, &stderr); code != tt.code {
				t.Errorf("exit %d, want %d", code, tt.code)
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr %q, want %q", stderr.String(), tt.want)
			}
		})
	}
}
