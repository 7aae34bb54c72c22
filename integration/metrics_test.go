package integration

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/examples"
)

// scrapeValue is the value of one series (name and labels as the text
// exposition writes them) in a scrape of ep's /metrics, or -1 when absent.
func scrapeValue(t *testing.T, ep endpoint, series string) float64 {
	t.Helper()
	code, _, body := ep.get(t, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	for line := range strings.Lines(string(body)) {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return v
		}
	}
	return -1
}

// TestMetricsOfInstances: two processor binaries sharing the partitions of
// one nats-server, each with --metrics and neither with --http. Each is
// ready, the partitions they own add up to all of them, and each reports
// the envelopes it decided.
func TestMetricsOfInstances(t *testing.T) {
	url, _ := natsServer(t, t.TempDir())
	var eps []endpoint
	for _, name := range []string{"m-a", "m-b"} {
		p := startProcessor(t, "--nats-url", url, "--instance", name, "--metrics", "127.0.0.1:0")
		eps = append(eps, endpoint{base: "http://" + addrOf(t, p, metricsListener)})
	}
	for _, ep := range eps {
		awaitReady(t, ep)
		if code, _, body := ep.get(t, "/healthz"); code != http.StatusOK || string(body) != "ok\n" {
			t.Fatalf("%s/healthz: %d %q", ep.base, code, body)
		}
	}
	poll(t, 30*time.Second, "the instances owning 2 partitions each", func() bool {
		return scrapeValue(t, eps[0], "turnguard_partitions_owned") == 2 && scrapeValue(t, eps[1], "turnguard_partitions_owned") == 2
	})
	js, err := jetstream.New(connect(t, url))
	if err != nil {
		t.Fatal(err)
	}
	ctx := withTimeout(t, time.Minute)
	sent := 0
	for i := range 8 {
		sid := sessionID(700 + i)
		for _, e := range examples.Session(sid) {
			if _, err := js.Publish(ctx, e.Subject("default", sid), e.Data); err != nil {
				t.Fatal(err)
			}
			sent++
		}
	}
	poll(t, 30*time.Second, fmt.Sprintf("%d envelopes counted as processed", sent), func() bool {
		a, b := scrapeValue(t, eps[0], "turnguard_envelopes_processed_total"), scrapeValue(t, eps[1], "turnguard_envelopes_processed_total")
		return a >= 0 && b >= 0 && a+b >= float64(sent)
	})
	for _, ep := range eps {
		for series, want := range map[string]float64{"turnguard_ready": 1, "turnguard_partitions": 4, "turnguard_consumers_stuck": 0} {
			if v := scrapeValue(t, ep, series); v != want {
				t.Errorf("%s %s = %v, want %v", ep.base, series, v, want)
			}
		}
	}
}
