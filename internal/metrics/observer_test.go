package metrics

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/gateway"
)

// family returns the gathered family name (nil: not exported).
func family(t *testing.T, reg prometheus.Gatherer, name string) *dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	return nil
}

// labels renders a series' labels as k=v,k=v.
func labels(m *dto.Metric) string {
	var s []string
	for _, l := range m.GetLabel() {
		s = append(s, l.GetName()+"="+l.GetValue())
	}
	return strings.Join(s, ",")
}

// series maps the labels of every series of a counter family to its value.
func series(t *testing.T, reg prometheus.Gatherer, name string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	if mf := family(t, reg, name); mf != nil {
		for _, m := range mf.GetMetric() {
			out[labels(m)] = m.GetCounter().GetValue()
		}
	}
	return out
}

func TestObserverValues(t *testing.T) {
	m := New()
	o := m.Observer()
	o.Decided("toolCallRequest", "deny", 20*time.Millisecond)
	o.Decided("toolCallRequest", "deny", 30*time.Millisecond)
	o.Decided("turnStart", "allow", 2*time.Second)
	o.Decided("notAHook", "maybe", -time.Second) // clock skew: counts as 0
	o.Refused(acs.CodeParseError, acs.ReasonParseError)
	o.Refused(acs.CodeInternalError, "state_too_large")
	o.Refused(acs.Code(-1), "whatever the envelope said")
	o.Alerted("untrusted-shell", "High")
	o.Alerted("untrusted-shell", "high")
	o.Alerted("noisy", "Bogus")
	o.Denied("untrusted-shell")
	o.Batch(1)
	o.Batch(200)
	reg := m.Registry()

	want := map[string]map[string]float64{
		"turnguard_decisions_total": {
			"decision=deny,hook=toolCallRequest": 2, "decision=allow,hook=turnStart": 1, "decision=other,hook=other": 1},
		"turnguard_refusals_total": {
			"code=-32700,reason=parse_error": 1, "code=-32603,reason=state_too_large": 1, "code=other,reason=other": 1},
		"turnguard_rule_alerts_total": {"rule=untrusted-shell,severity=high": 2, "rule=noisy,severity=other": 1},
		"turnguard_rule_denies_total": {"rule=untrusted-shell": 1},
	}
	for name, w := range want {
		if got := series(t, reg, name); !equalMaps(got, w) {
			t.Errorf("%s = %v, want %v", name, got, w)
		}
	}
	lat := family(t, reg, "turnguard_decision_latency_seconds").GetMetric()[0].GetHistogram()
	if lat.GetSampleCount() != 4 || lat.GetSampleSum() < 2.05 || lat.GetSampleSum() > 2.051 {
		t.Errorf("latency: %d samples, sum %v; want 4, 2.05", lat.GetSampleCount(), lat.GetSampleSum())
	}
	for _, b := range lat.GetBucket() {
		if b.GetUpperBound() == .001 && b.GetCumulativeCount() != 1 {
			t.Errorf("latency bucket 1ms: %d, want 1 (the negative one)", b.GetCumulativeCount())
		}
	}
	bs := family(t, reg, "turnguard_batch_size_envelopes").GetMetric()[0].GetHistogram()
	if bs.GetSampleCount() != 2 || bs.GetSampleSum() != 201 {
		t.Errorf("batch sizes: %d samples, sum %v; want 2, 201", bs.GetSampleCount(), bs.GetSampleSum())
	}
	lint(t, reg)
}

// lint checks turnguard's metrics in reg against Prometheus' conventions.
func lint(t *testing.T, reg prometheus.Gatherer) {
	t.Helper()
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, Namespace+"_") {
			t.Errorf("%s: %s", p.Metric, p.Text)
		}
	}
}

func equalMaps(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestObserverCardinality throws unbounded label values at the observer:
// what it exports stays within its bounded sets.
func TestObserverCardinality(t *testing.T) {
	m := New()
	o := m.Observer()
	for i := range 3 * MaxRules {
		s := fmt.Sprintf("x%d", i)
		o.Decided("hook-"+s, "decision-"+s, time.Millisecond)
		o.Decided("toolCallRequest", "decision-"+s, time.Millisecond)
		o.Refused(acs.Code(-i), "reason-"+s)
		o.Alerted("rule-"+s, "sev-"+s)
		o.Denied("rule-" + s)
	}
	reg := m.Registry()
	hooks := hookLabels()
	allowed := map[string][]string{
		"hook":     append(hooks, Other),
		"decision": append(slices.Clone(decisionLabels), Other),
		"reason":   append(slices.Clone(reasonLabels), Other),
		"severity": append(slices.Clone(severityLabels), Other),
	}
	for _, c := range codeLabels {
		allowed["code"] = append(allowed["code"], fmt.Sprint(int(c)))
	}
	allowed["code"] = append(allowed["code"], Other)
	for name, most := range map[string]int{
		"turnguard_decisions_total":   (len(hooks) + 1) * (len(decisionLabels) + 1),
		"turnguard_refusals_total":    (len(codeLabels) + 1) * (len(reasonLabels) + 1),
		"turnguard_rule_alerts_total": (MaxRules + 1) * (len(severityLabels) + 1),
		"turnguard_rule_denies_total": MaxRules + 1,
	} {
		mf := family(t, reg, name)
		if n := len(mf.GetMetric()); n > most {
			t.Errorf("%s: %d series, at most %d", name, n, most)
		}
		rules := map[string]bool{}
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "rule" {
					rules[l.GetValue()] = true
					continue
				}
				if !slices.Contains(allowed[l.GetName()], l.GetValue()) {
					t.Errorf("%s: label %s=%q outside its set", name, l.GetName(), l.GetValue())
				}
			}
		}
		if len(rules) > MaxRules+1 {
			t.Errorf("%s: %d rule ids, at most %d", name, len(rules), MaxRules+1)
		}
	}
	if got := series(t, reg, "turnguard_rule_denies_total")["rule="+Other]; got != 2*MaxRules {
		t.Errorf("denies of rules past MaxRules: %v, want %d", got, 2*MaxRules)
	}
}

// TestObserverAllocs: once a series exists, observing it allocates
// nothing (the workers call the observer for every envelope).
func TestObserverAllocs(t *testing.T) {
	o := New().Observer()
	call := func() {
		o.Decided("toolCallRequest", "deny", time.Millisecond)
		o.Refused(acs.CodeInvalidParams, acs.ReasonPayloadInvalid)
		o.Alerted("untrusted-shell", "High")
		o.Denied("untrusted-shell")
		o.Batch(17)
	}
	call()
	if n := testing.AllocsPerRun(100, call); n != 0 {
		t.Errorf("%v allocations per round of calls, want 0", n)
	}
}

func TestReloadSigningHTTP(t *testing.T) {
	m := New()
	reg := m.Registry()
	if got := series(t, reg, "turnguard_rules_reloads_total"); !equalMaps(got, map[string]float64{"result=success": 0, "result=failure": 0}) {
		t.Errorf("reloads before any: %v", got)
	}
	m.ReloadResult(nil)
	m.ReloadResult(errors.New("bad rule"))
	m.ReloadResult(errors.New("bad rule"))
	if got := series(t, reg, "turnguard_rules_reloads_total"); !equalMaps(got, map[string]float64{"result=success": 1, "result=failure": 2}) {
		t.Errorf("reloads: %v", got)
	}

	m.ReceiptSigned(50 * time.Microsecond)
	if h := family(t, reg, "turnguard_receipt_sign_seconds").GetMetric()[0].GetHistogram(); h.GetSampleCount() != 1 {
		t.Errorf("receipt signing: %d samples", h.GetSampleCount())
	}

	h := m.InstrumentHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	for _, auth := range []string{"", "Bearer x", "Bearer y"} {
		req := httptest.NewRequest(http.MethodPost, "/acs", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	if got := series(t, reg, "turnguard_http_requests_total"); !equalMaps(got, map[string]float64{"code=200": 2, "code=401": 1}) {
		t.Errorf("HTTP requests: %v", got)
	}

	var st gateway.Stats
	st.Unauthenticated.Add(1)
	st.DeadLettered.Add(4)
	if err := m.AttachGateway(&st); err != nil {
		t.Fatal(err)
	}
	if err := m.AttachGateway(&st); err == nil {
		t.Error("a second AttachGateway succeeded")
	}
	for name, want := range map[string]float64{"turnguard_http_unauthenticated_total": 1, "turnguard_http_dead_letters_total": 4, "turnguard_http_dead_letters_omitted_total": 0} {
		if got := series(t, reg, name)[""]; got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	lint(t, reg)
}

// BenchmarkObserverEnvelope is what the observer costs a worker per
// denied envelope with a rule alert (a heavier one than most).
func BenchmarkObserverEnvelope(b *testing.B) {
	o := New().Observer()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			o.Decided("toolCallRequest", "deny", 3*time.Millisecond)
			o.Alerted("untrusted-shell", "High")
			o.Denied("untrusted-shell")
		}
	})
}
