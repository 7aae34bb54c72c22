package traffic_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/internal/testkit/guardiantest"
	"github.com/turnguard/turnguard/internal/traffic"
)

func newGenerator(t testing.TB, seed uint64, tenant string) *traffic.Generator {
	t.Helper()
	g, err := traffic.New(traffic.Config{Seed: seed, Tenant: tenant})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// decider runs sessions through the pure decision core with the default
// rule pack, as one partition of the processor would.
type decider struct {
	g   *guardian.Guardian
	rs  *policy.Set
	seq uint64
}

func newDecider(t testing.TB) *decider {
	t.Helper()
	rs := guardiantest.DefaultRules(t)
	return &decider{g: guardiantest.Pure(t), rs: rs}
}

// run decides the first k envelopes of s, checking each against its
// expectation, and returns the session's state.
func (d *decider) run(t *testing.T, s *traffic.Session, k int) *turnstate.Session {
	t.Helper()
	var state *turnstate.Session
	for j, e := range s.Envelopes[:k] {
		route, err := acs.ParseInbound(e.Subject)
		if err != nil {
			t.Fatalf("session %d envelope %d: %v", s.Index, j, err)
		}
		d.seq++
		out := d.g.Decide(d.rs, state, nil, route, guardian.Message{Subject: e.Subject, Data: e.Data, Seq: d.seq})
		if out.Refusal != nil || out.Response == nil || out.Response.Result == nil {
			t.Fatalf("session %d (%s) envelope %d %s refused: %v\n%s", s.Index, s.Kind, j, e.Hook, out.Refusal, e.Data)
		}
		var alerts []string
		for _, a := range out.Alerts {
			alerts = append(alerts, a.RuleID)
		}
		if got := out.Response.Result.Decision; got != e.Decision || !slices.Equal(alerts, e.Alerts) || len(out.Violations) > 0 {
			t.Fatalf("session %d (%s, provenance %v, gap %d) envelope %d %s: decision %s alerts %v violations %v; want %s %v\nreasoning: %s\n%s",
				s.Index, s.Kind, s.Provenance, s.Gap, j, e.Hook, got, alerts, out.Violations, e.Decision, e.Alerts, out.Response.Result.Reasoning, e.Data)
		}
		if out.RequestID != e.RequestID || e.MsgID != s.ID+":"+e.RequestID {
			t.Fatalf("session %d envelope %d: request id %s, msg id %s; generated %s", s.Index, j, out.RequestID, e.MsgID, e.RequestID)
		}
		state = out.State
	}
	return state
}

// TestDecisionsMatchTheCore holds the generator's model to the real core:
// every envelope of a few hundred sessions gets exactly the expected
// decision and alerts, and the final state (and a mid-session state) the
// expected counters. This is what makes loadgen's expected counts exact.
func TestDecisionsMatchTheCore(t *testing.T) {
	const sessions = 250
	g := newGenerator(t, 42, "traffic-test")
	d := newDecider(t)
	var total traffic.Totals
	kinds := map[traffic.Kind]int{}
	provenance := 0
	allowedAfterTaint := 0
	for i := range int64(sessions) {
		s := g.Session(i)
		kinds[s.Kind]++
		if s.Provenance {
			provenance++
		}
		state := d.run(t, s, len(s.Envelopes))
		if err := s.StateAfter(len(s.Envelopes)).Check(state); err != nil {
			t.Fatalf("session %d (%s) final state: %v", i, s.Kind, err)
		}
		// A prefix: what a run cut short by its duration leaves behind.
		if k := len(s.Envelopes) / 2; i%10 == 0 {
			if err := s.StateAfter(k).Check(d.run(t, s, k)); err != nil {
				t.Fatalf("session %d (%s) state after %d envelopes: %v", i, s.Kind, k, err)
			}
		}
		tot := s.TotalsAfter(len(s.Envelopes))
		total.Add(tot)
		if (s.Kind == traffic.Taint && s.Gap > 2 || s.Kind == traffic.TaintExpired) && tot.Denies == 0 {
			allowedAfterTaint++
		}
	}
	t.Logf("%d envelopes, %d denies, alerts %v, kinds %v, %d with provenance, %d consequential calls allowed after a taint",
		total.Envelopes, total.Denies, total.Alerts, kinds, provenance, allowedAfterTaint)
	// The mix the load generator relies on: every kind, both provenance
	// modes, denies of both rules, and calls allowed after their window.
	for _, k := range []traffic.Kind{traffic.Clean, traffic.Taint, traffic.TaintExpired, traffic.Runaway} {
		if kinds[k] == 0 {
			t.Errorf("no %s session in %d", k, sessions)
		}
	}
	if provenance == 0 || provenance == sessions {
		t.Errorf("%d of %d sessions carry provenance", provenance, sessions)
	}
	if total.Alerts[traffic.RuleTaint] == 0 || total.Alerts[traffic.RuleContinuation] == 0 || allowedAfterTaint == 0 {
		t.Errorf("alerts %v, %d calls allowed after a taint", total.Alerts, allowedAfterTaint)
	}
	if total.Denies != total.AlertCount() {
		t.Errorf("%d denies but %d alerts: every generated deny comes with exactly one alert", total.Denies, total.AlertCount())
	}
}

// TestDeterministic: the same seed and tenant give the same bytes; another
// seed or tenant gives other ids.
func TestDeterministic(t *testing.T) {
	a, b := newGenerator(t, 7, "t1"), newGenerator(t, 7, "t1")
	other, otherTenant := newGenerator(t, 8, "t1"), newGenerator(t, 7, "t2")
	for i := range int64(50) {
		sa, sb := a.Session(i), b.Session(i)
		if len(sa.Envelopes) != len(sb.Envelopes) || sa.ID != sb.ID {
			t.Fatalf("session %d differs between two generators", i)
		}
		for j := range sa.Envelopes {
			if !bytes.Equal(sa.Envelopes[j].Data, sb.Envelopes[j].Data) || sa.Envelopes[j].MsgID != sb.Envelopes[j].MsgID {
				t.Fatalf("session %d envelope %d differs", i, j)
			}
		}
		if sa.ID == other.Session(i).ID || sa.ID == otherTenant.Session(i).ID {
			t.Fatalf("session %d: the same id under another seed or tenant", i)
		}
	}
}

// TestStateAfter checks the prefix expectations on a table of cut points.
func TestStateAfter(t *testing.T) {
	g := newGenerator(t, 1, "t1")
	s := g.Session(3)
	n := len(s.Envelopes)
	for _, tc := range []struct {
		k      int
		status turnstate.Status
		open   bool
	}{
		{k: 1, status: turnstate.StatusOpen},
		{k: 2, status: turnstate.StatusOpen, open: true}, // sessionStart, turnStart
		{k: n - 1, status: turnstate.StatusOpen},
		{k: n, status: turnstate.StatusClosed},
	} {
		st := s.StateAfter(tc.k)
		if st.Envelopes != uint64(tc.k) || st.Status != tc.status || (st.OpenTurns > 0) != tc.open {
			t.Errorf("after %d of %d: %+v", tc.k, n, st)
		}
	}
}

func TestConfig(t *testing.T) {
	for _, tenant := range []string{"", "a.b", "_unrouted"} {
		if _, err := traffic.New(traffic.Config{Tenant: tenant}); err == nil {
			t.Errorf("tenant %q accepted", tenant)
		}
	}
}

func BenchmarkSession(b *testing.B) {
	g := newGenerator(b, 1, "bench")
	envs := 0
	for i := range b.N {
		envs += len(g.Session(int64(i)).Envelopes)
	}
	b.ReportMetric(float64(envs)/float64(b.N), "envelopes/session")
}
