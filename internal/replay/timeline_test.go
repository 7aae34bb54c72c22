package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/replay"
	"github.com/turnguard/turnguard/internal/testkit/guardiantest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestTimelineGolden records every scenario with a real processor and lays
// each of its sessions out as a timeline, as a table and as JSON Lines,
// compared with golden files. Replaying the live rules must reproduce
// every recorded decision, and every recorded chain hash must match.
func TestTimelineGolden(t *testing.T) {
	for _, path := range scenarioPaths(t) {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sc, built := loadScenario(t, path)
			rs := guardiantest.DefaultRules(t)
			rec := newRecorder(t, rs)
			rec.publishStepwise(built.Messages)
			rec.finish()
			src := rec.source()
			// The whole recording re-decided with the live rules, by
			// parallel workers: nothing changes.
			rep, err := replay.BackTest(context.Background(), src, rec.guardian(), rs, wholeRange(t, src), replay.Selection{Tenant: sc.Tenant}, replay.Options{Workers: 3})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Differs() || rep.Compared == 0 {
				t.Errorf("back-test with the live rules: %d compared, changes %+v", rep.Compared, rep.Changes)
			}
			// Whatever the scenario does — refusals, subagents, dead
			// letters — the audit of the streams finds nothing forged.
			_, signer := testKeys(t)
			if v, err := replay.VerifyAll(context.Background(), src, signer.Public(), replay.SweepOptions{}); err != nil || !v.OK() || !v.Complete() {
				t.Errorf("verify --all of the untouched recording: %v %+v %v", err, v.Messages, v.Problems)
			}
			for _, alias := range append([]string{"main"}, sc.Sessions...) {
				tl, err := replay.BuildTimeline(context.Background(), src, rec.guardian(), rs, wholeRange(t, src), sc.Tenant, sc.SessionID(alias))
				if err != nil {
					t.Fatal(err)
				}
				if len(tl.Steps) == 0 {
					t.Fatalf("session %s: empty timeline", alias)
				}
				for _, s := range tl.Steps {
					if s.Replayed != "" {
						t.Errorf("seq %d: recorded %s, the same rules now decide %s", s.Seq, s.Decision, s.Replayed)
					}
					if s.Chain == "broken" {
						t.Errorf("seq %d: recorded chain hash does not match the recomputed one", s.Seq)
					}
				}
				// Stream times differ from run to run; everything else is
				// determined by the scenario.
				for i := range tl.Steps {
					tl.Steps[i].Stored = ""
				}
				base := name
				if alias != "main" {
					base += "." + alias
				}
				var table, lines bytes.Buffer
				if err := replay.WriteTable(&table, tl); err != nil {
					t.Fatal(err)
				}
				if err := replay.WriteJSON(&lines, tl); err != nil {
					t.Fatal(err)
				}
				golden(t, filepath.Join("testdata", "timeline", base+".txt"), table.Bytes())
				golden(t, filepath.Join("testdata", "timeline", base+".jsonl"), lines.Bytes())
				checkJSONLines(t, lines.Bytes(), len(tl.Steps))
			}
		})
	}
}

// checkJSONLines checks the JSON output is one object per step, each with
// the stable field names a consumer relies on.
func checkJSONLines(t *testing.T, out []byte, steps int) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != steps {
		t.Fatalf("%d JSON lines for %d steps", len(lines), steps)
	}
	for i, l := range lines {
		var obj map[string]any
		if err := json.Unmarshal([]byte(l), &obj); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		for _, k := range []string{"seq", "time", "hook", "turn", "depth", "decision", "chain"} {
			if _, ok := obj[k]; !ok {
				t.Fatalf("line %d lacks %q: %s", i+1, k, l)
			}
		}
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// A timeline re-decided with other rules than the ones that decided says
// so plainly, naming the rule set that decided: its "(now …)" marks are
// the other rules' decisions, not a change of the session.
func TestTimelineSaysWhichRulesDecided(t *testing.T) {
	sc, built := loadScenario(t, filepath.Join("..", "..", "testdata", "scenarios", "taint-window.yaml"))
	live := guardiantest.DefaultRules(t)
	rec := newRecorder(t, live)
	rec.publishStepwise(built.Messages)
	rec.finish()
	f, err := policy.ParseFile("other.yaml", []byte("apiVersion: turnguard/v1\nkind: RuleSet\nmetadata: {name: other}\nrules: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := policy.Compile([]*policy.File{f})
	if err != nil {
		t.Fatal(err)
	}
	src := rec.source()
	for _, tc := range []struct {
		name    string
		rs      *policy.Set
		notice  bool
		changed bool
	}{
		{"the rules that decided", live, false, false},
		{"other rules", other, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl, err := replay.BuildTimeline(context.Background(), src, rec.guardian(), tc.rs, wholeRange(t, src), sc.Tenant, sc.SessionID("main"))
			if err != nil {
				t.Fatal(err)
			}
			var table bytes.Buffer
			if err := replay.WriteTable(&table, tl); err != nil {
				t.Fatal(err)
			}
			out := table.String()
			want := "decided " + live.Name + " " + live.Revision + " — not the rules above"
			if strings.Contains(out, want) != tc.notice || strings.Contains(out, "(now ") != tc.changed {
				t.Fatalf("notice %v (want %v), changes %v (want %v):\n%s", strings.Contains(out, want), tc.notice, strings.Contains(out, "(now "), tc.changed, out)
			}
			if len(tl.DecidedBy) != 1 || tl.DecidedBy[0] != live.Name+" "+live.Revision {
				t.Fatalf("decided_by %q", tl.DecidedBy)
			}
		})
	}
}
