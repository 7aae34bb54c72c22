package metrics

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/stream"
)

// Other is the label value standing for anything outside a label's bounded
// set: an unknown hook, reason or code, a rule beyond MaxRules.
const Other = "other"

// MaxRules bounds the rule ids the per-rule series keep apart (reloads may
// bring new ones); the rules seen after that count under rule="other".
const MaxRules = 512

// Label sets. Every label value the observer exports is one of these, or
// Other, or one of at most MaxRules rule ids.
var (
	// decisionLabels are the ACS dispositions, and "error" for a
	// refusal's answer.
	decisionLabels = []string{string(acs.Allow), string(acs.Deny), string(acs.Modify), string(acs.Ask), string(acs.Defer), "error"}
	// severityLabels are alert.SeverityID's names, lowercased.
	severityLabels = []string{"informational", "low", "medium", "high", "critical", "unknown"}
	// codeLabels are the ACS error codes turnguard produces.
	codeLabels = []acs.Code{acs.CodeParseError, acs.CodeInvalidRequest, acs.CodeMethodNotFound, acs.CodeInvalidParams, acs.CodeInternalError,
		acs.CodeSessionRefused, acs.CodeUnsupportedVersion, acs.CodeProvenanceRequired, acs.CodeCapabilityNotNegotiated,
		acs.CodeSignatureInvalid, acs.CodeReplayDetected, acs.CodeTimestampOutOfWindow, acs.CodeChainMismatch}
	// reasonLabels are the reasons of the refusals the processor makes
	// (acs.Reason*, the processor's own, the guardian core's).
	reasonLabels = []string{
		acs.ReasonParseError, acs.ReasonTooLarge, acs.ReasonEnvelopeInvalid, acs.ReasonPayloadInvalid, acs.ReasonFieldTooLong,
		acs.ReasonUnknownMethod, acs.ReasonMethodNotFound, acs.ReasonReplayed, acs.ReasonNonceReplayed, acs.ReasonTooDeep,
		acs.ReasonHandshakeRequired, acs.ReasonNotNegotiated, acs.ReasonTransport, acs.ReasonAlreadyNegotiated,
		acs.ReasonKeyNotBound, acs.ReasonAgentNotBound, acs.ReasonVersion, acs.ReasonSignature, acs.ReasonSkew,
		acs.ReasonSubjectMismatch, acs.ReasonBadSubject, acs.ReasonUnauthenticated, acs.ReasonCallerNotBound,
		acs.ReasonContentType, acs.ReasonBatchTooLarge, acs.ReasonDeadLetterLimit,
		stream.ReasonStateTooLarge, stream.ReasonUnappliable, stream.ReasonStateUnverifiable,
		// The guardian core's own (internal/core/guardian).
		"validation_failed", "chain_failed",
	}
)

// hookLabels are the hook tokens of subjects (acs.HookToken) of the ACS
// methods: the method table's, the handshake and the wrapped protocols'.
func hookLabels() []string {
	var out []string
	seen := map[string]bool{}
	add := func(hook string) {
		if !seen[hook] {
			seen[hook] = true
			out = append(out, hook)
		}
	}
	for _, m := range acs.Methods() {
		add(acs.HookToken(m.Method))
	}
	for _, m := range []string{acs.HandshakeMethod, "protocols/MCP/x", "wrapped:x"} {
		add(acs.HookToken(m))
	}
	return out
}

// index maps a bounded label set to positions; anything else is at
// len(labels), which stands for Other.
type index struct {
	pos   map[string]int
	other int
}

func newIndex(labels []string) index {
	ix := index{pos: make(map[string]int, len(labels)), other: len(labels)}
	for i, l := range labels {
		ix.pos[l] = i
	}
	return ix
}

func (ix index) of(v string) int {
	if i, ok := ix.pos[v]; ok {
		return i
	}
	return ix.other
}

// label is the label value at position i of labels (Other past its end).
func label(labels []string, i int) string {
	if i < len(labels) {
		return labels[i]
	}
	return Other
}

// child is a counter of a vector, looked up once: the first use pays
// WithLabelValues, every later one an atomic load.
type child struct {
	p atomic.Pointer[prometheus.Counter]
}

func (c *child) get(vec *prometheus.CounterVec, a string) prometheus.Counter {
	if p := c.p.Load(); p != nil {
		return *p
	}
	return c.store(vec.WithLabelValues(a))
}

func (c *child) get2(vec *prometheus.CounterVec, a, b string) prometheus.Counter {
	if p := c.p.Load(); p != nil {
		return *p
	}
	return c.store(vec.WithLabelValues(a, b))
}

func (c *child) store(k prometheus.Counter) prometheus.Counter {
	c.p.Store(&k)
	return k
}

// ruleChildren are one rule's series.
type ruleChildren struct {
	id     string
	alerts []child // by severity, Other last
	denies child
}

// Observer is the stream.Observer exporting what the partition workers
// made durable. Its label sets are bounded: hooks of the ACS method table,
// dispositions, ACS error codes and reasons, severities, and at most
// MaxRules rule ids; anything else is "other". Series appear when first
// counted. Safe for concurrent use; after the first use of a series, a
// call costs map lookups and atomic adds, no allocation.
type Observer struct {
	decisions *prometheus.CounterVec
	latency   prometheus.Histogram
	batches   prometheus.Histogram
	refusals  *prometheus.CounterVec
	alerts    *prometheus.CounterVec
	denies    *prometheus.CounterVec

	hooks, decisionIx, severityIx, reasonIx index
	hookNames                               []string
	codeIx                                  map[acs.Code]int
	// codeNames are the codes' labels, their numbers ("-32602").
	codeNames []string
	// byDecision is [hook][decision]; byRefusal [code][reason]; each
	// dimension has a last slot for Other.
	byDecision [][]child
	byRefusal  [][]child

	// rules maps a rule id to its series; it is replaced whole (copy on
	// write) when a rule is first seen, so lookups take no lock.
	rules   atomic.Pointer[map[string]*ruleChildren]
	rulesMu sync.Mutex
	other   *ruleChildren
}

var _ stream.Observer = (*Observer)(nil)

// Buckets of the observer's histograms.
var (
	// LatencyBuckets span a decision made in a millisecond to one that
	// waited out a minute of backlog or retries.
	LatencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	// BatchBuckets span one envelope to a few times the default batch
	// size (256).
	BatchBuckets = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}
)

// newObserver returns an observer whose collectors are registered on reg.
func newObserver(reg prometheus.Registerer) *Observer {
	o := &Observer{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "decisions_total",
			Help: "Decisions stored in ACS_DECISIONS, by the envelope's hook and the decision (allow, deny, modify, ask, defer, or error for a refusal)."},
			[]string{"hook", "decision"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: "decision_latency_seconds",
			Help:    "Time from an envelope's timestamp in ACS_HOOKS to its decision stored in ACS_DECISIONS (publications acknowledged).",
			Buckets: LatencyBuckets}),
		batches: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: "batch_size_envelopes",
			Help:    "Envelopes per batch whose effects a partition worker made durable together.",
			Buckets: BatchBuckets}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "refusals_total",
			Help: "Envelopes refused and dead-lettered by the processor, by ACS error code and reason (unknown ones: other)."},
			[]string{"code", "reason"}),
		alerts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "rule_alerts_total",
			Help: "Rule alerts published, by rule id (at most " + strconv.Itoa(MaxRules) + " apart, then other) and severity."},
			[]string{"rule", "severity"}),
		denies: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "rule_denies_total",
			Help: "Envelopes denied, once per enforcing deny rule that hit them, by rule id (at most " + strconv.Itoa(MaxRules) + " apart, then other)."},
			[]string{"rule"}),
		decisionIx: newIndex(decisionLabels),
		severityIx: severityIndex(),
		reasonIx:   newIndex(reasonLabels),
		hookNames:  hookLabels(),
		codeIx:     map[acs.Code]int{},
	}
	o.hooks = newIndex(o.hookNames)
	for i, c := range codeLabels {
		o.codeIx[c] = i
		o.codeNames = append(o.codeNames, strconv.Itoa(int(c)))
	}
	o.byDecision = grid(len(o.hookNames)+1, len(decisionLabels)+1)
	o.byRefusal = grid(len(codeLabels)+1, len(reasonLabels)+1)
	o.other = o.newRule(Other)
	empty := map[string]*ruleChildren{}
	o.rules.Store(&empty)
	reg.MustRegister(o.decisions, o.latency, o.batches, o.refusals, o.alerts, o.denies)
	return o
}

// severityIndex finds a severity by its label or by the capitalised name
// alert.SeverityID gives it (Finding.Severity).
func severityIndex() index {
	ix := newIndex(severityLabels)
	for i, l := range severityLabels {
		ix.pos[strings.ToUpper(l[:1])+l[1:]] = i
	}
	return ix
}

func grid(rows, cols int) [][]child {
	g := make([][]child, rows)
	for i := range g {
		g[i] = make([]child, cols)
	}
	return g
}

func (o *Observer) newRule(id string) *ruleChildren {
	return &ruleChildren{id: id, alerts: make([]child, len(severityLabels)+1)}
}

// Batch implements stream.Observer.
func (o *Observer) Batch(size int) { o.batches.Observe(float64(size)) }

// Decided implements stream.Observer.
func (o *Observer) Decided(hook, decision string, latency time.Duration) {
	h, d := o.hooks.of(hook), o.decisionIx.of(decision)
	o.byDecision[h][d].get2(o.decisions, label(o.hookNames, h), label(decisionLabels, d)).Inc()
	// Clocks of different hosts may put a decision before its envelope.
	o.latency.Observe(max(latency, 0).Seconds())
}

// Refused implements stream.Observer.
func (o *Observer) Refused(code acs.Code, reason string) {
	c, ok := o.codeIx[code]
	if !ok {
		c = len(codeLabels)
	}
	r := o.reasonIx.of(reason)
	o.byRefusal[c][r].get2(o.refusals, label(o.codeNames, c), label(reasonLabels, r)).Inc()
}

// Alerted implements stream.Observer.
func (o *Observer) Alerted(rule, severity string) {
	s := o.severityIx.of(severity)
	rc := o.rule(rule)
	rc.alerts[s].get2(o.alerts, rc.id, label(severityLabels, s)).Inc()
}

// Denied implements stream.Observer.
func (o *Observer) Denied(rule string) {
	rc := o.rule(rule)
	rc.denies.get(o.denies, rc.id).Inc()
}

// rule returns the series of a rule id: its own among the first MaxRules
// ids seen, else those of "other".
func (o *Observer) rule(id string) *ruleChildren {
	if rc, ok := (*o.rules.Load())[id]; ok {
		return rc
	}
	o.rulesMu.Lock()
	defer o.rulesMu.Unlock()
	cur := *o.rules.Load()
	if rc, ok := cur[id]; ok {
		return rc
	}
	if len(cur) >= MaxRules || id == "" {
		return o.other
	}
	next := make(map[string]*ruleChildren, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	rc := o.newRule(id)
	next[id] = rc
	o.rules.Store(&next)
	return rc
}
