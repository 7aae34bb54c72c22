package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.yaml.in/yaml/v3"

	"github.com/turnguard/turnguard/examples"
)

const (
	dashboardFile = "../../deploy/grafana/turnguard-dashboard.json"
	alertsFile    = "../../deploy/prometheus/alerts.yml"
)

// metricName matches turnguard's metric names in PromQL.
var metricName = regexp.MustCompile(`turnguard_[a-z0-9_]+`)

// dashboardExprs returns the PromQL of every target of the dashboard, by
// panel title, after checking the dashboard's frame: a Prometheus
// datasource variable every target uses.
func dashboardExprs(t *testing.T) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	type datasource struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	}
	var d struct {
		SchemaVersion int    `json:"schemaVersion"`
		UID           string `json:"uid"`
		Title         string `json:"title"`
		Templating    struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Type       string     `json:"type"`
			Title      string     `json:"title"`
			Datasource datasource `json:"datasource"`
			Targets    []struct {
				Expr       string     `json:"expr"`
				Datasource datasource `json:"datasource"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.SchemaVersion < 36 || d.UID == "" || d.Title == "" {
		t.Errorf("dashboard: schemaVersion %d, uid %q, title %q", d.SchemaVersion, d.UID, d.Title)
	}
	if !slices.ContainsFunc(d.Templating.List, func(v struct {
		Name  string `json:"name"`
		Type  string `json:"type"`
		Query any    `json:"query"`
	}) bool {
		return v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus"
	}) {
		t.Error("the dashboard has no Prometheus datasource variable named datasource")
	}
	want := datasource{Type: "prometheus", UID: "${datasource}"}
	exprs := map[string][]string{}
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if p.Datasource != want || len(p.Targets) == 0 {
			t.Errorf("panel %q: datasource %+v, %d targets", p.Title, p.Datasource, len(p.Targets))
		}
		for _, tg := range p.Targets {
			if tg.Datasource != want || tg.Expr == "" {
				t.Errorf("panel %q: a target with datasource %+v, expr %q", p.Title, tg.Datasource, tg.Expr)
			}
			exprs[p.Title] = append(exprs[p.Title], tg.Expr)
		}
	}
	return exprs
}

// alertExprs returns the expression of every alerting rule, by alert name.
func alertExprs(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(raw)))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	exprs := map[string]string{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Expr == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("group %s: rule %q lacks an alert name, expr, severity, summary or description", g.Name, r.Alert)
			}
			if r.For != "" {
				if _, err := time.ParseDuration(r.For); err != nil {
					t.Errorf("%s: for %q: %v", r.Alert, r.For, err)
				}
			}
			if _, dup := exprs[r.Alert]; dup {
				t.Errorf("alert %s twice", r.Alert)
			}
			exprs[r.Alert] = r.Expr
		}
	}
	for _, a := range []string{"TurnguardNotReady", "TurnguardPartitionStuck", "TurnguardDeadLettersGrowing", "TurnguardStateIntegrityFailures",
		"TurnguardAssetsRecreated", "TurnguardEnvelopesIsolated", "TurnguardNoDecisionsWhilePending"} {
		if exprs[a] == "" {
			t.Errorf("no alert %s", a)
		}
	}
	return exprs
}

// exported maps the metric families of a scrape to their types.
func exported(scrape string) map[string]string {
	out := map[string]string{}
	for line := range strings.Lines(scrape) {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			if f := strings.Fields(rest); len(f) == 2 {
				out[f[0]] = f[1]
			}
		}
	}
	return out
}

// family is the metric family a name in an expression belongs to: a
// histogram's _bucket, _sum and _count series are its own.
func family(name string, types map[string]string) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && types[base] == "histogram" {
			return base
		}
	}
	return name
}

// TestDashboardAndAlertsUseExportedMetrics runs the processor with
// --metrics and --http, has it decide an allowed session, a denied one
// and a refusal and answer an HTTP request, so that the labelled series
// exist, and checks that every metric the Grafana dashboard and the
// Prometheus alert rules use is exported.
func TestDashboardAndAlertsUseExportedMetrics(t *testing.T) {
	dash, alerts := dashboardExprs(t), alertExprs(t)

	sp := startServed(t, 10*time.Second, "--http", "127.0.0.1:0")
	poll(t, "/readyz 200", func() bool { code, _ := get(sp.metrics + "/readyz"); return code == http.StatusOK })
	js, err := jetstream.New(sp.nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	publish := func(subject string, data []byte) {
		t.Helper()
		if _, err := js.Publish(ctx, subject, data); err != nil {
			t.Fatal(err)
		}
	}
	allowed, denied := "5a0e4c1d-2b3f-4a6e-9d8c-000000000001", "5a0e4c1d-2b3f-4a6e-9d8c-000000000002"
	for _, e := range examples.Session(allowed) {
		publish(e.Subject("default", allowed), examples.Stamp(e.Data, time.Now()))
	}
	for _, e := range examples.Taint(denied) {
		publish(e.Subject("default", denied), examples.Stamp(e.Data, time.Now()))
	}
	publish(examples.Session(allowed)[0].Subject("default", "5a0e4c1d-2b3f-4a6e-9d8c-000000000003"), []byte("not json"))
	resp, err := http.Post(sp.http, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	var scrape string
	poll(t, "the labelled series of an allow, a deny, a rule alert, a refusal and an HTTP request", func() bool {
		_, scrape = get(sp.metrics + "/metrics")
		for _, s := range []string{`turnguard_decisions_total{decision="allow",hook="sessionStart"}`, `turnguard_decisions_total{decision="deny",hook="toolCallRequest"}`,
			`turnguard_refusals_total{code="-32700",reason="parse_error"}`, "turnguard_rule_alerts_total{", "turnguard_rule_denies_total{",
			"turnguard_http_requests_total{", "turnguard_decision_latency_seconds_count ", "turnguard_receipt_sign_seconds_count "} {
			if !strings.Contains(scrape, s) {
				return false
			}
		}
		return true
	})
	types := exported(scrape)
	check := func(where, expr string) int {
		names := metricName.FindAllString(expr, -1)
		for _, n := range names {
			if _, ok := types[family(n, types)]; !ok {
				t.Errorf("%s uses %s, which the processor does not export", where, n)
			}
		}
		return len(names)
	}
	used := 0
	for panel, exprs := range dash {
		for _, e := range exprs {
			if check(fmt.Sprintf("dashboard panel %q", panel), e) == 0 {
				t.Errorf("dashboard panel %q: %q uses no turnguard metric", panel, e)
			}
			used++
		}
	}
	for name, e := range alerts {
		if check("alert "+name, e) == 0 {
			t.Errorf("alert %s: %q uses no turnguard metric", name, e)
		}
		used++
	}
	t.Logf("%d dashboard and alert expressions checked against %d exported families", used, len(types))
	// The counts behind the series: one deny and its alert at least, a
	// refusal, no session id in any label.
	for _, s := range []string{`turnguard_decisions_total{decision="deny",hook="toolCallRequest"}`, `turnguard_refusals_total{code="-32700",reason="parse_error"}`} {
		if v, ok := sample(scrape, s); !ok || v < 1 {
			t.Errorf("%s = %v (present: %v)", s, v, ok)
		}
	}
	if strings.Contains(scrape, "5a0e4c1d") {
		t.Error("the scrape mentions a session id")
	}
}
