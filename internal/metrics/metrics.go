// Package metrics exposes the processor's Prometheus metrics, liveness and
// readiness on their own HTTP listener (processor --metrics).
//
// The processor's counters and status (stream.Stats, stream.Status) are
// read at scrape time, so the hot path pays nothing for them. The registry is the package's own, never prometheus' global one.
// Labels are bounded: a consumer's name (one per partition, plus the
// consumer of malformed subjects) and the rule set in force; never a
// tenant, session or turn.
//
// What only the workers see as it happens (decisions by hook and
// decision, refusals, rule alerts and denies, decision latency, batch
// sizes) comes through Observer, the stream.Observer implemented here and
// set through stream.Config; rule reloads, receipt signing and the ACS
// HTTP endpoint's requests have small hooks of their own (ReloadResult,
// ReceiptSigned, InstrumentHTTP, AttachGateway). Their label sets are
// bounded too: hooks of the ACS method table, dispositions, ACS error
// codes and reasons, severities, HTTP status codes and at most MaxRules
// rule ids, anything else counting as "other".
package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/gateway"
	"github.com/turnguard/turnguard/internal/stream"
)

// Namespace prefixes every turnguard metric.
const Namespace = "turnguard"

// DefaultBacklogTimeout bounds the consumer info requests of one scrape.
const DefaultBacklogTimeout = 2 * time.Second

// Source is what the metrics read from a processor at every scrape;
// *stream.Processor is one.
type Source interface {
	Stats() *stream.Stats
	Status() stream.Status
	Backlogs(ctx context.Context) []stream.Backlog
}

// Options are what Attach watches besides the processor.
type Options struct {
	// Rules holds the rule set in force (nil: no turnguard_rules_info).
	Rules *policy.Source
	// Connected reports whether the NATS connection is up (nil: not
	// checked). Readiness needs it, as the HTTP endpoint's does.
	Connected func() bool
	// BacklogTimeout bounds the consumer info requests of one scrape (0:
	// DefaultBacklogTimeout).
	BacklogTimeout time.Duration
}

// Metrics is the processor's registry and the handler serving it with
// /healthz and /readyz.
type Metrics struct {
	reg *prometheus.Registry
	obs *Observer
	// reloads counts rule reloads by result; signing times receipt
	// signatures; requests counts the ACS endpoint's answers by status.
	reloads  *prometheus.CounterVec
	reloadOK prometheus.Counter
	reloadNo prometheus.Counter
	signing  prometheus.Histogram
	requests *prometheus.CounterVec
	// ready is the readiness check once a processor is attached.
	ready atomic.Pointer[func() error]
}

// New returns metrics holding the Go runtime and process collectors; the
// processor's come with Attach, once it exists.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{reg: reg, obs: newObserver(reg),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "rules_reloads_total",
			Help: "Rule reloads (SIGHUP or a changed rule file), by result: success (the new set is in force) or failure (refused whole; the last good set keeps running)."},
			[]string{"result"}),
		signing: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: "receipt_sign_seconds",
			Help:    "Time of one Ed25519 receipt signature: of a batch of decisions and alerts (--receipt-format batch, its Merkle tree included) or of one message.",
			Buckets: SigningBuckets}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "http_requests_total",
			Help: "Requests the ACS HTTP endpoint (--http) answered, by HTTP status code."},
			[]string{"code"}),
	}
	// Both results exist from the start, so that a rate over them does.
	m.reloadOK, m.reloadNo = m.reloads.WithLabelValues("success"), m.reloads.WithLabelValues("failure")
	reg.MustRegister(m.reloads, m.signing, m.requests)
	return m
}

// SigningBuckets span an Ed25519 signature of a small body (tens of
// microseconds) to one held up by a starved CPU.
var SigningBuckets = []float64{.00001, .000025, .00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .1}

// Observer is the stream.Observer to set in stream.Config.Observer.
func (m *Metrics) Observer() *Observer { return m.obs }

// ReloadResult counts a rule reload: err is nil when the new set is in
// force, else why it was refused.
func (m *Metrics) ReloadResult(err error) {
	if err != nil {
		m.reloadNo.Inc()
		return
	}
	m.reloadOK.Inc()
}

// ReceiptSigned records how long a receipt signature took
// (receipt.Signer.WithObserver).
func (m *Metrics) ReceiptSigned(d time.Duration) { m.signing.Observe(d.Seconds()) }

// InstrumentHTTP counts the answers of h, the ACS HTTP endpoint, by
// status code.
func (m *Metrics) InstrumentHTTP(h http.Handler) http.Handler {
	return promhttp.InstrumentHandlerCounter(m.requests, h)
}

// AttachGateway exports the ACS HTTP endpoint's counters, read at scrape
// time.
func (m *Metrics) AttachGateway(st *gateway.Stats) error {
	if err := m.reg.Register(gatewayCollector{st}); err != nil {
		return fmt.Errorf("register the HTTP endpoint's metrics: %w", err)
	}
	return nil
}

// Registry is where further collectors go.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Attach exports src's metrics and has /readyz follow its readiness. A
// metrics value watches one processor: a second Attach fails.
func (m *Metrics) Attach(src Source, opts Options) error {
	if opts.BacklogTimeout <= 0 {
		opts.BacklogTimeout = DefaultBacklogTimeout
	}
	c := newCollector(src, opts)
	if err := m.reg.Register(c); err != nil {
		return fmt.Errorf("register the processor's metrics: %w", err)
	}
	ready := c.ready
	m.ready.Store(&ready)
	return nil
}

// errStarting is the readiness of metrics with no processor attached yet.
var errStarting = errors.New("starting: the processor is not running yet")

// Ready reports whether the attached processor is ready.
func (m *Metrics) Ready() error {
	r := m.ready.Load()
	if r == nil {
		return errStarting
	}
	return (*r)()
}

// Handler routes GET /metrics, GET /healthz (the process answers: 200
// "ok") and GET /readyz (200 "ready", or 503 with why not).
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		// A collector that fails leaves its metrics out; the rest are
		// still served.
		ErrorHandling: promhttp.ContinueOnError,
		// Scrapes do not pile up behind a slow one.
		MaxRequestsInFlight: 4,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { writeText(w, http.StatusOK, "ok\n") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := m.Ready(); err != nil {
			writeText(w, http.StatusServiceUnavailable, err.Error()+"\n")
			return
		}
		writeText(w, http.StatusOK, "ready\n")
	})
	return mux
}

func writeText(w http.ResponseWriter, status int, s string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, s)
}
