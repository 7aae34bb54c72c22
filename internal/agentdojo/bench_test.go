package agentdojo_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/agentdojo"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/ruletest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -run %s -update rewrites it)\n got:\n%s", path, t.Name(), got)
	}
}

// TestBenchSample benchmarks the sample (runs of every suite, copied from
// AgentDojo's recorded runs: attacks that succeeded, failed attacks, benign
// runs) with the default pack and the AgentDojo operator file, against
// goldens of the table and the JSON report.
func TestBenchSample(t *testing.T) {
	paths := []string{"testdata/sample.jsonl", "testdata/runs"}
	rep, err := agentdojo.Bench(context.Background(), inProcess(t), benchRules(t), paths, agentdojo.Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Unreadable) != 0 {
		t.Fatalf("unreadable: %+v", rep.Unreadable)
	}
	if got := len(rep.Runs); got != 34 {
		t.Fatalf("%d runs, want 34 (32 lines of sample.jsonl, 2 files of runs/)", got)
	}
	total := rep.Rows[len(rep.Rows)-1]
	if total.Model != agentdojo.All || total.Suite != agentdojo.All || total.Refused != 0 {
		t.Fatalf("last row %+v: want the overall row, nothing refused", total)
	}
	// The sample holds stopped attacks, an attack without a serving call,
	// benign runs asked about and allowed: every column but the denied
	// one means something (the pack denies no benign run of the sample;
	// TestTabulate counts denied ones).
	if total.Stopped == 0 || total.Attacks == total.ServedAttacks || total.Asked == 0 || total.Asked+total.Denied == total.Benign {
		t.Errorf("the sample does not exercise the score: %+v", total)
	}
	var table bytes.Buffer
	if err := agentdojo.WriteTable(&table, rep); err != nil {
		t.Fatal(err)
	}
	golden(t, "bench.golden", table.Bytes())
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "bench.json.golden", append(js, '\n'))

	// The same runs decided one worker at a time give the same report.
	one, err := agentdojo.Bench(context.Background(), inProcess(t), benchRules(t), paths, agentdojo.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	js1, _ := json.MarshalIndent(one, "", "  ")
	if !bytes.Equal(js, js1) {
		t.Error("one worker and two give different reports")
	}
}

func TestReadSources(t *testing.T) {
	dir := t.TempDir()
	sample, err := os.ReadFile("testdata/sample.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSpace(string(sample)), "\n")
	two := strings.TrimSpace(lines[0]) + "\n  \n" + lines[1] // a blank line between
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(two))
	zw.Close()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gzPath := write("a.jsonl.gz", gz.Bytes())
	jsonl := write("b.jsonl", []byte(two))
	bad := write("bad/c.jsonl.gz", []byte("not gzip"))
	other := write("d.txt", []byte("x"))
	read := func(paths ...string) ([]string, error) {
		var got []string
		err := agentdojo.Read(context.Background(), paths, func(it agentdojo.Item) error {
			got = append(got, strings.TrimPrefix(it.Source, dir+"/"))
			return nil
		})
		return got, err
	}
	got, err := read(gzPath, jsonl)
	if err != nil {
		t.Fatal(err)
	}
	if want := "a.jsonl.gz:1 a.jsonl.gz:3 b.jsonl:1 b.jsonl:3"; strings.Join(got, " ") != want {
		t.Errorf("sources %v, want %s", got, want)
	}
	if _, err := read(bad); err == nil || !strings.Contains(err.Error(), "c.jsonl.gz") {
		t.Errorf("corrupt gzip: error %v, want one naming the file", err)
	}
	if _, err := read(other); err == nil || !strings.Contains(err.Error(), "not a run file") {
		t.Errorf("a .txt named explicitly: error %v", err)
	}
	if _, err := read(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("a missing file: no error")
	}
	// A directory: run files found, others skipped, the corrupt one an error.
	if _, err := read(dir); err == nil || !strings.Contains(err.Error(), "c.jsonl.gz") {
		t.Errorf("directory with a corrupt file: error %v", err)
	}
	os.Remove(bad)
	got, err = read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Errorf("directory: %v, want the 4 runs of a.jsonl.gz and b.jsonl", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := agentdojo.Read(ctx, []string{dir}, func(agentdojo.Item) error { return nil }); err == nil {
		t.Error("a cancelled read: no error")
	}
}

// TestBenchUnreadable: a run that cannot be read is listed, not dropped,
// and the others are still decided.
func TestBenchUnreadable(t *testing.T) {
	dir := t.TempDir()
	sample, err := os.ReadFile("testdata/sample.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(sample), "\n")
	p := filepath.Join(dir, "x.jsonl")
	if err := os.WriteFile(p, []byte(first+"\n{\"suite_name\": 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := agentdojo.Bench(context.Background(), inProcess(t), benchRules(t), []string{p}, agentdojo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 1 || len(rep.Unreadable) != 1 || rep.Unreadable[0].Source != p+":2" {
		t.Fatalf("runs %d, unreadable %+v", len(rep.Runs), rep.Unreadable)
	}
	var table bytes.Buffer
	if err := agentdojo.WriteTable(&table, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "1 run(s) could not be read") {
		t.Errorf("the table does not say a run was unreadable:\n%s", table.String())
	}
}

// TestOperatorFileCases runs the test cases examples/agentdojo/rules.yaml
// carries, with the default pack.
func TestOperatorFileCases(t *testing.T) {
	results := ruletest.RunSet(newGuardian(t), benchRules(t))
	n := 0
	for _, r := range results {
		if !strings.Contains(r.File, "agentdojo") {
			continue
		}
		n++
		for _, f := range r.Failures {
			t.Errorf("%s:%d: %s: %s", r.File, r.Pos.Line, r.Name, f)
		}
	}
	if n == 0 {
		t.Fatal("the AgentDojo operator file carries no test case")
	}
}

func TestLoadRulesErrors(t *testing.T) {
	if _, err := agentdojo.LoadRules("testdata/missing.yaml"); err == nil {
		t.Error("a missing rule file: no error")
	}
	p := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(p, []byte("apiVersion: turnguard/v1\nkind: RuleSet\nmetadata: {name: bad}\ntools: [{match: x, classes: 7}]\n"), 0o644)
	if _, err := agentdojo.LoadRules(agentdojo.DefaultRules[0], p); err == nil || !strings.Contains(err.Error(), "bad.yaml") {
		t.Errorf("a bad rule file: error %v, want one naming it", err)
	}
}

// BenchmarkBench measures the benchmark itself on the sample: reading,
// mapping, deciding in-process with the default pack and the operator
// file, scoring. The metric is runs a second, everything included.
func BenchmarkBench(b *testing.B) {
	d := inProcess(b)
	lineageRules, err := agentdojo.LoadRules(append(slices.Clone(agentdojo.DefaultRules), filepath.Join("..", "..", "examples", "lineage", "rules.yaml"))...)
	if err != nil {
		b.Fatal(err)
	}
	paths := []string{"testdata/sample.jsonl"}
	// The default pack, and the argument-level taint pack beside it: what
	// indexing the session's contents and tracing each argument costs.
	for _, tc := range []struct {
		name string
		rs   *policy.Set
	}{{"default", benchRules(b)}, {"lineage", lineageRules}} {
		b.Run(tc.name, func(b *testing.B) {
			d.Rules = tc.rs
			b.ReportAllocs()
			runs := 0
			for b.Loop() {
				rep, err := agentdojo.Bench(context.Background(), d, tc.rs, paths, agentdojo.Options{})
				if err != nil || len(rep.Runs) != 32 {
					b.Fatalf("%v, %d runs", err, len(rep.Runs))
				}
				runs += len(rep.Runs)
			}
			b.ReportMetric(float64(runs)/b.Elapsed().Seconds(), "runs/s")
		})
	}
}
