package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/testkit/syncbuf"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
)

const waitFor = 20 * time.Second

// poll calls cond until it holds, failing the test after waitFor.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.Eventually(t, waitFor, 25*time.Millisecond, "timed out waiting for "+what, cond)
}

// logField returns field of the first JSON log line whose message starts
// with msg.
func logField(logs, msg, field string) (string, bool) {
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		if m, _ := line["message"].(string); strings.HasPrefix(m, msg) {
			v, ok := line[field].(string)
			return v, ok
		}
	}
	return "", false
}

// get answers GET url: status and body (0 and the error's text when the
// request fails).
func get(url string) (int, string) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// sample returns the value of one series (name and labels exactly as the
// text exposition writes them) in a scrape.
func sample(scrape, series string) (float64, bool) {
	for line := range strings.Lines(scrape) {
		rest, ok := strings.CutPrefix(line, series+" ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		return v, err == nil
	}
	return 0, false
}

// servedProcessor is a processor run by serve in a goroutine.
type servedProcessor struct {
	metrics string // base URL of the --metrics listener
	http    string // URL of the ACS endpoint ("": no --http)
	nc      *nats.Conn
	logs    *syncbuf.Buffer
}

// startServed runs serve with its own embedded NATS (on a free loopback
// port, open) and --metrics on a free port, and the extra flags (with
// --http, its URL is learnt from the log).
func startServed(t *testing.T, stuckAfter time.Duration, extra ...string) *servedProcessor {
	t.Helper()
	cfg, err := parseFlags(append([]string{"--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--auth", "none", "--partitions", "4",
		"--metrics", "127.0.0.1:0", "--log-format", "json", "--log-level", "info"}, extra...), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg.processor.StuckAfter = stuckAfter
	logs := &syncbuf.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, logs) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(waitFor):
			t.Error("serve did not return")
		}
	})
	var addr, natsURL string
	poll(t, "the metrics and NATS addresses in the log", func() bool {
		var ok1, ok2 bool
		addr, ok1 = logField(logs.String(), "metrics and health listening", "addr")
		natsURL, ok2 = logField(logs.String(), "embedded NATS JetStream server started", "client_url")
		return ok1 && ok2
	})
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	sp := &servedProcessor{metrics: "http://" + addr, nc: nc, logs: logs}
	if cfg.httpAddr != "" {
		poll(t, "the ACS endpoint's URL in the log", func() bool {
			var ok bool
			sp.http, ok = logField(logs.String(), "ACS JSON-RPC endpoint listening", "url")
			return ok
		})
	}
	return sp
}

// TestMetricsListener runs the processor with --metrics and no --http:
// liveness, readiness and the metrics are served, the counters follow
// the envelopes processed, and readiness drops (in /readyz and in
// turnguard_ready) when a partition is stuck.
func TestMetricsListener(t *testing.T) {
	sp := startServed(t, time.Second)
	if code, body := get(sp.metrics + "/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	poll(t, "/readyz 200", func() bool { code, _ := get(sp.metrics + "/readyz"); return code == http.StatusOK })
	if code, body := get(sp.metrics + "/readyz"); body != "ready\n" {
		t.Fatalf("/readyz: %d %q", code, body)
	}

	js, err := jetstream.New(sp.nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sent := 0
	for i := range 3 {
		sid := fmt.Sprintf("6c2d0f3e-1a4b-4c5d-8e9f-%012d", i)
		for _, e := range examples.Session(sid) {
			if _, err := js.Publish(ctx, e.Subject("default", sid), examples.Stamp(e.Data, time.Now())); err != nil {
				t.Fatal(err)
			}
			sent++
		}
	}
	var scrape string
	poll(t, fmt.Sprintf("turnguard_envelopes_processed_total >= %d", sent), func() bool {
		_, scrape = get(sp.metrics + "/metrics")
		v, ok := sample(scrape, "turnguard_envelopes_processed_total")
		return ok && v >= float64(sent)
	})
	for _, tc := range []struct {
		series string
		want   func(float64) bool
	}{
		{"turnguard_ready", func(v float64) bool { return v == 1 }},
		{"turnguard_nats_connected", func(v float64) bool { return v == 1 }},
		{"turnguard_partitions", func(v float64) bool { return v == 4 }},
		{"turnguard_partitions_owned", func(v float64) bool { return v == 4 }},
		{"turnguard_consumers_stuck", func(v float64) bool { return v == 0 }},
		{"turnguard_stuck_threshold_seconds", func(v float64) bool { return v == 1 }},
		{"turnguard_dead_letters_total", func(v float64) bool { return v >= 0 }},
		{"turnguard_state_integrity_failures_total", func(v float64) bool { return v == 0 }},
		{`turnguard_consumer_failing_seconds{consumer="turnguard-p001"}`, func(v float64) bool { return v == 0 }},
		{`turnguard_consumer_failing_seconds{consumer="turnguard-unrouted"}`, func(v float64) bool { return v == 0 }},
		{`turnguard_consumer_pending_messages{consumer="turnguard-p000"}`, func(v float64) bool { return v >= 0 }},
		{`turnguard_consumer_ack_pending_messages{consumer="turnguard-p003"}`, func(v float64) bool { return v >= 0 }},
		{"go_goroutines", func(v float64) bool { return v > 0 }},
	} {
		if v, ok := sample(scrape, tc.series); !ok || !tc.want(v) {
			t.Errorf("%s = %v (present: %v)", tc.series, v, ok)
		}
	}
	if !strings.Contains(scrape, `turnguard_rules_info{revision="sha256:`) {
		t.Errorf("no turnguard_rules_info with the revision in:\n%s", scrape)
	}
	for _, leak := range []string{"6c2d0f3e", "session=", "session_id", "tenant="} {
		if strings.Contains(scrape, leak) {
			t.Errorf("the scrape mentions %q", leak)
		}
	}

	// ACS_DECISIONS replaced by a stream that takes no decision: the
	// processor cannot put it back (it never edits what exists), the
	// partition of the next envelope is stuck after StuckAfter, /readyz
	// says which and why, and the metrics agree.
	if err := js.DeleteStream(ctx, acs.DecisionsStream); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: acs.DecisionsStream, Subjects: []string{"elsewhere.>"}}); err != nil {
		t.Fatal(err)
	}
	sid := "6c2d0f3e-1a4b-4c5d-8e9f-000000000009"
	e := examples.Session(sid)[0]
	if _, err := js.Publish(ctx, e.Subject("default", sid), examples.Stamp(e.Data, time.Now())); err != nil {
		t.Fatal(err)
	}
	var body string
	poll(t, "/readyz 503 naming a stuck partition and "+acs.DecisionsStream, func() bool {
		var code int
		code, body = get(sp.metrics + "/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "stuck") && strings.Contains(body, acs.DecisionsStream)
	})
	t.Logf("/readyz: %s", strings.TrimSpace(body))
	_, scrape = get(sp.metrics + "/metrics")
	for series, want := range map[string]float64{"turnguard_ready": 0, "turnguard_consumers_stuck": 1} {
		if v, ok := sample(scrape, series); !ok || v != want {
			t.Errorf("%s = %v (present: %v), want %v", series, v, ok, want)
		}
	}
	// Liveness is not readiness: the process still answers.
	if code, _ := get(sp.metrics + "/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz after the deletion: %d", code)
	}
}

// TestMetricsAddressFailsAtStart: a malformed --metrics is a usage error,
// and one that cannot be bound stops the processor before NATS is
// reached.
func TestMetricsAddressFailsAtStart(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tc := range []struct {
		name     string
		metrics  string
		wantCode int
		wantErr  string
	}{
		{"no port", "127.0.0.1", 2, `--metrics "127.0.0.1"`},
		{"address in use", taken.Addr().String(), 1, "--metrics " + taken.Addr().String()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			// The NATS URL is unreachable: an error about it would mean
			// the metrics address was checked too late.
			code := run(context.Background(), []string{"--nats-url", "nats://127.0.0.1:1", "--data-dir", t.TempDir(), "--log-format", "json",
				"--metrics", tc.metrics}, &out, &errOut)
			if code != tc.wantCode || !strings.Contains(errOut.String(), tc.wantErr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, errOut.String(), tc.wantCode, tc.wantErr)
			}
		})
	}
}
