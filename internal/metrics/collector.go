package metrics

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/turnguard/turnguard/internal/gateway"
	"github.com/turnguard/turnguard/internal/stream"
)

// counter is one of stream.Stats' counters, exported as name_total.
type counter struct {
	desc *prometheus.Desc
	read func(*stream.Stats) uint64
}

func newCounter(name, help string, read func(*stream.Stats) uint64) counter {
	return counter{desc: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", name+"_total"), help, nil, nil), read: read}
}

// counters are stream.Stats, each under a name saying what it counts.
var counters = []counter{
	newCounter("envelopes_processed", "Inbound envelopes whose effects were made durable and that were acknowledged, redeliveries included.",
		func(s *stream.Stats) uint64 { return s.Processed.Load() }),
	newCounter("envelopes_skipped", "Redelivered envelopes found already applied and acknowledged without effect.",
		func(s *stream.Stats) uint64 { return s.Skipped.Load() }),
	newCounter("envelopes_recovered", "Envelopes read back from ACS_HOOKS after a restart, a handover or a delivery gap.",
		func(s *stream.Stats) uint64 { return s.Recovered.Load() }),
	newCounter("dead_letters", "Refusals sent to ACS_DLQ (a retried batch may count one twice; the stream keeps one).",
		func(s *stream.Stats) uint64 { return s.DeadLettered.Load() }),
	newCounter("state_conflicts", "Batch attempts that lost a state write to another writer (KV revision check) and were decided again.",
		func(s *stream.Stats) uint64 { return s.Conflicts.Load() }),
	newCounter("groups", "Groups of live batches of several partitions applied together (one decision pass, one receipt signature, one round of writes).",
		func(s *stream.Stats) uint64 { return s.Groups.Load() }),
	newCounter("grouped_batches", "Partition batches applied in groups.",
		func(s *stream.Stats) uint64 { return s.GroupedBatches.Load() }),
	newCounter("grouped_envelopes", "Envelopes applied in groups.",
		func(s *stream.Stats) uint64 { return s.GroupedEnvelopes.Load() }),
	newCounter("group_fallbacks", "Live batches whose group attempt failed (a lost revision check, an error) and that were applied alone.",
		func(s *stream.Stats) uint64 { return s.GroupFallbacks.Load() }),
	newCounter("batch_retries", "Batch attempts whose effects could not be made durable and that were retried after a pause.",
		func(s *stream.Stats) uint64 { return s.Retries.Load() }),
	newCounter("outbox_republished", "Publications sent again from an outbox found with a state, after a crash or a handover.",
		func(s *stream.Stats) uint64 { return s.Republished.Load() }),
	newCounter("outbox_refused", "Publications of verified outboxes not sent because their subject is not one of turnguard's outputs.",
		func(s *stream.Stats) uint64 { return s.OutboxRefused.Load() }),
	newCounter("state_integrity_failures", "Stored values (sessions, agent states) that did not verify against the state key.",
		func(s *stream.Stats) uint64 { return s.IntegrityFailures.Load() }),
	newCounter("sessions_rebuilt", "Sessions rebuilt from ACS_HOOKS after their stored value failed to verify.",
		func(s *stream.Stats) uint64 { return s.Rebuilt.Load() }),
	newCounter("sessions_unverifiable", "Sessions whose value failed to verify and whose history was gone; their steps were refused.",
		func(s *stream.Stats) uint64 { return s.Unverifiable.Load() }),
	newCounter("envelopes_isolated", "Envelopes refused because they could not be applied (state_too_large, envelope_unappliable), and publications the server refused for good; each is alerted envelope_isolated.",
		func(s *stream.Stats) uint64 { return s.Isolated.Load() }),
	newCounter("assets_recreated", "Streams, buckets and consumers this instance recreated after they disappeared while it ran; each is alerted asset_recreated.",
		func(s *stream.Stats) uint64 { return s.Recreated.Load() }),
	newCounter("members_rejected", "Records of the member bucket left out of the member set because they did not verify (fake members).",
		func(s *stream.Stats) uint64 { return s.MembersRejected.Load() }),
	newCounter("subagents_unknown", "subagentStops decided without a current state of their subagent (its partition had not applied its envelopes within the wait): the subagent counted as carrying every taint.",
		func(s *stream.Stats) uint64 { return s.SubagentsUnknown.Load() }),
	newCounter("subagents_adopted", "Subagent sessions that began before their parent's subagentStart was applied (a framework that does not wait for the spawn's decision) and were linked to their parent then, with its live taints.",
		func(s *stream.Stats) uint64 { return s.SubagentsAdopted.Load() }),
}

var (
	descReady = prometheus.NewDesc(Namespace+"_ready",
		"1 when the processor is ready (what GET /readyz answers 200 to): consuming, connected, no owned consumer stuck; else 0.", nil, nil)
	descConnected = prometheus.NewDesc(Namespace+"_nats_connected",
		"1 while the processor's NATS connection is up, else 0.", nil, nil)
	descPartitions = prometheus.NewDesc(Namespace+"_partitions",
		"Partitions of ACS_HOOKS in the topology, across all instances.", nil, nil)
	descOwned = prometheus.NewDesc(Namespace+"_partitions_owned",
		"Partitions assigned to this instance now.", nil, nil)
	descStuck = prometheus.NewDesc(Namespace+"_consumers_stuck",
		"Consumers this instance owns that have been failing for at least the stuck threshold (partitions and the consumer of malformed subjects); readiness fails while it is above 0.", nil, nil)
	descStuckAfter = prometheus.NewDesc(Namespace+"_stuck_threshold_seconds",
		"How long an owned consumer may keep failing before it counts as stuck.", nil, nil)
	descFailing = prometheus.NewDesc(Namespace+"_consumer_failing_seconds",
		"How long an owned consumer's current failure streak has lasted (0: healthy).", []string{"consumer"}, nil)
	descPending = prometheus.NewDesc(Namespace+"_consumer_pending_messages",
		"Messages of an owned consumer not yet delivered, as the server counts them at scrape time.", []string{"consumer"}, nil)
	descAckPending = prometheus.NewDesc(Namespace+"_consumer_ack_pending_messages",
		"Messages of an owned consumer delivered and not yet acknowledged, as the server counts them at scrape time.", []string{"consumer"}, nil)
	descRules = prometheus.NewDesc(Namespace+"_rules_info",
		"The rule set in force: always 1, with its name and revision as labels.", []string{"ruleset", "revision"}, nil)
)

// errNotConnected is the readiness of a processor whose NATS connection
// is down.
var errNotConnected = errors.New("not connected to NATS")

// collector reads a processor at scrape time.
type collector struct {
	src  Source
	opts Options
}

func newCollector(src Source, opts Options) *collector { return &collector{src: src, opts: opts} }

// ready is the processor's readiness: its own verdict and the
// connection's.
func (c *collector) ready() error { return c.readiness(c.src.Status()) }

func (c *collector) readiness(s stream.Status) error {
	if c.opts.Connected != nil && !c.opts.Connected() {
		return errNotConnected
	}
	return s.Err()
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, k := range counters {
		ch <- k.desc
	}
	for _, d := range []*prometheus.Desc{descReady, descPartitions, descOwned, descStuck, descStuckAfter, descFailing, descPending, descAckPending} {
		ch <- d
	}
	if c.opts.Connected != nil {
		ch <- descConnected
	}
	if c.opts.Rules != nil {
		ch <- descRules
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	stats := c.src.Stats()
	for _, k := range counters {
		ch <- prometheus.MustNewConstMetric(k.desc, prometheus.CounterValue, float64(k.read(stats)))
	}
	s := c.src.Status()
	ch <- prometheus.MustNewConstMetric(descReady, prometheus.GaugeValue, boolValue(c.readiness(s) == nil))
	if c.opts.Connected != nil {
		ch <- prometheus.MustNewConstMetric(descConnected, prometheus.GaugeValue, boolValue(c.opts.Connected()))
	}
	ch <- prometheus.MustNewConstMetric(descPartitions, prometheus.GaugeValue, float64(s.Partitions))
	ch <- prometheus.MustNewConstMetric(descOwned, prometheus.GaugeValue, float64(s.Owned()))
	ch <- prometheus.MustNewConstMetric(descStuck, prometheus.GaugeValue, float64(len(s.Stuck())))
	ch <- prometheus.MustNewConstMetric(descStuckAfter, prometheus.GaugeValue, s.StuckAfter.Seconds())
	for _, cs := range s.Consumers {
		ch <- prometheus.MustNewConstMetric(descFailing, prometheus.GaugeValue, cs.Failing.Seconds(), cs.Consumer)
	}
	if c.opts.Rules != nil {
		if rs := c.opts.Rules.Current(); rs != nil {
			ch <- prometheus.MustNewConstMetric(descRules, prometheus.GaugeValue, 1, rs.Name, rs.Revision)
		}
	}
	if !s.Running {
		return // no consumers to ask about
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.BacklogTimeout)
	defer cancel()
	for _, b := range c.src.Backlogs(ctx) {
		ch <- prometheus.MustNewConstMetric(descPending, prometheus.GaugeValue, float64(b.Pending), b.Consumer)
		ch <- prometheus.MustNewConstMetric(descAckPending, prometheus.GaugeValue, float64(b.AckPending), b.Consumer)
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

var (
	descHTTPUnauthenticated = prometheus.NewDesc(Namespace+"_http_unauthenticated_total",
		"Requests the ACS HTTP endpoint answered 401: no or a wrong credential.", nil, nil)
	descHTTPDeadLetters = prometheus.NewDesc(Namespace+"_http_dead_letters_total",
		"Refusals the ACS HTTP endpoint itself kept in ACS_DLQ.", nil, nil)
	descHTTPDeadLettersOmitted = prometheus.NewDesc(Namespace+"_http_dead_letters_omitted_total",
		"Refusals beyond a request's dead-letter limit, kept only as counts in its summary record.", nil, nil)
)

// gatewayCollector reads the ACS HTTP endpoint's counters at scrape time.
type gatewayCollector struct{ st *gateway.Stats }

func (g gatewayCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descHTTPUnauthenticated
	ch <- descHTTPDeadLetters
	ch <- descHTTPDeadLettersOmitted
}

func (g gatewayCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(descHTTPUnauthenticated, prometheus.CounterValue, float64(g.st.Unauthenticated.Load()))
	ch <- prometheus.MustNewConstMetric(descHTTPDeadLetters, prometheus.CounterValue, float64(g.st.DeadLettered.Load()))
	ch <- prometheus.MustNewConstMetric(descHTTPDeadLettersOmitted, prometheus.CounterValue, float64(g.st.DeadLettersOmitted.Load()))
}
