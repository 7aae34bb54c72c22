package replay_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/replay"
	"github.com/turnguard/turnguard/internal/testkit/guardiantest"
	rulepack "github.com/turnguard/turnguard/rules"
)

// backtestSessions is how many sessions the back-test records: gaps from
// -1 (clean) to 6 turns between taint and shell call, 35 sessions each.
const backtestSessions = 280

// recordedHistory is a recording of the generated sessions with the
// default rules, and where each session's shell call landed.
type recordedHistory struct {
	rec *recorder
	// shell maps a session id to the stream sequence of its shell call;
	// gap to the turns between taint and call.
	shell map[string]uint64
	gap   map[string]int
	// firstSeq is each session's first envelope.
	firstSeq map[string]uint64
	order    []string
}

func recordHistory(t testing.TB, n int) *recordedHistory {
	t.Helper()
	h := &recordedHistory{rec: newRecorder(t, guardiantest.DefaultRules(t)), shell: map[string]uint64{}, gap: map[string]int{}, firstSeq: map[string]uint64{}}
	for i := range n {
		gap := i%8 - 1
		sc := backtestSession(i, gap)
		if err := sc.Prepare(false); err != nil {
			t.Fatal(err)
		}
		built, err := sc.Build()
		if err != nil {
			t.Fatal(err)
		}
		id := sc.SessionID("main")
		h.order = append(h.order, id)
		h.gap[id] = gap
		for j, m := range built.Messages {
			seq := h.rec.publish(m.Subject, m.Data)
			if j == 0 {
				h.firstSeq[id] = seq
			}
			if strings.HasSuffix(m.Subject, ".toolCallRequest") {
				h.shell[id] = seq
			}
		}
	}
	h.rec.finish()
	return h
}

// stricterRules is the default pack with a 4-turn taint window instead of 2.
func stricterRules(t testing.TB) *policy.Set {
	t.Helper()
	raw := rulepack.Default()
	const from, to = "within: {turns: 2, duration: 30m}", "within: {turns: 4, duration: 30m}"
	if !strings.Contains(string(raw), from) {
		t.Fatalf("the default pack no longer says %q", from)
	}
	path := filepath.Join(t.TempDir(), "stricter.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(string(raw), from, to, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	rs, err := rulepack.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestBackTest records a few hundred sessions with the default rules and
// replays them: with the same rules nothing changes; with a 4-turn window
// exactly the shell calls 3 and 4 turns after the taint become denies, each
// with a new TG-TAINT-001 alert.
func TestBackTest(t *testing.T) {
	h := recordHistory(t, backtestSessions)
	src := h.rec.source()
	g := h.rec.guardian()
	ctx := context.Background()
	whole := wholeRange(t, src)
	all := replay.Selection{Tenant: "default"}

	predicted := func(from uint64, only string) []uint64 {
		var seqs []uint64
		for _, id := range h.order {
			if (only == "" || id == only) && (h.gap[id] == 3 || h.gap[id] == 4) && h.shell[id] >= from {
				seqs = append(seqs, h.shell[id])
			}
		}
		return seqs
	}
	mid := h.order[len(h.order)/2]
	cases := []struct {
		name  string
		rules *policy.Set
		r     replay.Range
		sel   replay.Selection
		want  []uint64
		// warm says the run must start before the range; window is the
		// rules' taint window in turns.
		warm   bool
		window int
	}{
		{name: "live rules reproduce every decision", rules: guardiantest.DefaultRules(t), r: whole, sel: all, window: 2},
		{name: "stricter window", rules: stricterRules(t), r: whole, sel: all, want: predicted(0, ""), window: 4},
		{name: "range starting mid-session warms up", rules: stricterRules(t), r: replay.Range{From: h.firstSeq[mid] + 3, To: whole.To},
			sel: all, want: predicted(h.firstSeq[mid]+3, ""), warm: true},
		{name: "one session", rules: stricterRules(t), r: whole, sel: replay.Selection{Tenant: "default", SessionID: firstWithGap(h, 3)},
			want: predicted(0, firstWithGap(h, 3))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := replay.BackTest(ctx, src, g, tc.rules, tc.r, tc.sel, replay.Options{Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			// Session trees are independent: any number of workers gives
			// the report one worker gives.
			parallel, err := replay.BackTest(ctx, src, g, tc.rules, tc.r, tc.sel, replay.Options{Workers: 3})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(rep, parallel) {
				t.Fatalf("3 workers report\n%+v\n1 worker\n%+v", parallel, rep)
			}
			var got []uint64
			for _, c := range rep.Changes {
				got = append(got, c.Seq)
				if c.Recorded != "allow" || c.Replayed != "deny" || c.Hook != "toolCallRequest" || c.Tool != "Bash" ||
					!slices.Equal(c.AlertsAdded, []string{"TG-TAINT-001"}) || len(c.AlertsRemoved) != 0 ||
					len(c.Rules) != 1 || !strings.HasPrefix(c.Rules[0], "TG-TAINT-001: Blocked Bash") {
					t.Errorf("change at seq %d lacks its evidence: %+v", c.Seq, c)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("changed seqs %v\nwant %v", got, tc.want)
			}
			if rep.Transitions["allow→deny"] != len(tc.want) || len(rep.Transitions) > 1 || rep.AlertsAdded["TG-TAINT-001"] != len(tc.want) {
				t.Errorf("transitions %v, alerts added %v; want %d allow→deny", rep.Transitions, rep.AlertsAdded, len(tc.want))
			}
			if rep.Unrecorded != 0 || rep.Compared == 0 {
				t.Errorf("compared %d, unrecorded %d", rep.Compared, rep.Unrecorded)
			}
			if tc.warm != (rep.WarmFrom < tc.r.From) || tc.warm != (rep.WarmUp > 0) {
				t.Errorf("warm-up from %d for a range from %d (%d envelopes), want warm-up %v", rep.WarmFrom, tc.r.From, rep.WarmUp, tc.warm)
			}
			// Hits count what the replayed rules saw, changed or not: every
			// tainted session's shell call within the window.
			if hits := rep.Hits["TG-TAINT-001"].Hits; tc.sel.SessionID == "" && tc.r.From == whole.From && hits != windowHits(h, tc.window) {
				t.Errorf("TG-TAINT-001 hits %d", hits)
			}
		})
	}
}

// windowHits is how many shell calls fall within a taint window of limit
// turns.
func windowHits(h *recordedHistory, limit int) int {
	n := 0
	for _, id := range h.order {
		if g := h.gap[id]; g >= 0 && g <= limit {
			n++
		}
	}
	return n
}

func firstWithGap(h *recordedHistory, gap int) string {
	for _, id := range h.order {
		if h.gap[id] == gap {
			return id
		}
	}
	return ""
}

// TestBackTestInterrupted stops a run through its context: it ends with
// the context's error and a report marked interrupted.
func TestBackTestInterrupted(t *testing.T) {
	h := recordHistory(t, 16)
	src := h.rec.source()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := replay.BackTest(ctx, src, h.rec.guardian(), guardiantest.DefaultRules(t), wholeRange(t, src), replay.Selection{Tenant: "default"}, replay.Options{})
	if err == nil || !rep.Interrupted {
		t.Fatalf("err %v, interrupted %v", err, rep.Interrupted)
	}
}
