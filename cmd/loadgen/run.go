package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/cliflag"
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/natsconn"
	"github.com/turnguard/turnguard/internal/topology"
	"github.com/turnguard/turnguard/internal/traffic"
)

const runHelp = `Usage: loadgen run [flags]

Publishes generated ACS sessions (internal/traffic: clean sessions, taint
windows hit and missed, runaway auto-continuation, nested turns, subagents)
with JetStream async publishes, measures decision latency from publish to
the decision on acs.decisions.<tenant>.>, and reconciles at the end from
the streams: every published request id must have exactly one decision,
equal to the expected one; every expected alert must be in ACS_ALERTS once;
every session's state in ACS_TURNSTATE must show the expected counters.
Exit status 1 when anything disagrees.

Before the run (unless --baseline=false) it measures raw JetStream on the
same server: async publish and durable pull consume of envelope-sized
messages in a scratch stream; and the pipeline floor: the run's kind of
envelopes in a scratch stream partitioned like ACS_HOOKS (--partitions),
one durable pull consumer per partition, and per batch of the processor's
size a compare-and-set write of every touched session (a state-sized
value with its outbox) into a scratch bucket, one decision-sized publish
per envelope into a scratch stream, then the acks: everything a processor
does but deciding. All scratch assets are deleted afterwards.

How the sessions publish (the report's mode):
  stored   (default) each slot publishes its session's next envelope once
           the previous is stored in ACS_HOOKS: publishing outruns deciding,
           a backlog builds, and latency mixes live and queued envelopes
  rate     --rate R: R envelopes per second over all slots (open loop)
  closed   --await-decisions: each slot publishes its session's next
           envelope once the previous one's decision was seen on
           acs.decisions, as an agent waits for its answer: at most
           --sessions envelopes are undecided at any time, no backlog
           builds, and decided_per_s is the processor's live capacity
  backlog  --backlog: everything published first, then decided

Allocations (embedded target): allocs_per_envelope and bytes_per_envelope
are runtime.MemStats' Mallocs and TotalAlloc over the deciding period
(from the first publish until the decisions settled; with --backlog from
the processors' start) divided by the envelopes decided — of the whole
process: loadgen's publishing and observing, the NATS server and the
processors alike. Over the same period, process says what the process
used: cpu_busy (its CPU time, from getrusage, over the wall time and the
machine's cores: 1 is every core busy), cpu_us_per_envelope (that CPU
time per decided envelope), gc_cycles and gc_cpu_share (the collector's
cycles, and its share of the CPU the Go runtime counted busy) — whether a
run was bound by the machine, and what an envelope cost it.

--json prints one object with these fields:
  target, tenant, seed, processors (embedded), mode, backlog,
  sessions_concurrent, sessions_started,
  sessions_completed, publish_seconds, envelopes_published,
  publish_retries, publish_duplicates, published_per_s, decided_per_s,
  live_capacity_per_s (mode closed: decided_per_s),
  await_timeouts (mode closed: decisions not seen within --settle; the
    session went on without them),
  allocs_per_envelope, bytes_per_envelope (embedded),
  process {cpu_busy, cpu_us_per_envelope, gc_cycles, gc_cpu_share}
    (embedded; the CPU figures where the platform has getrusage),
  publish_process {the same fields} (embedded, --backlog: what the
    process used publishing the backlog, per envelope published — the
    generating and storing a live run does while it decides, and
    process leaves out of a backlog's figures),
  batch_retries and batch_conflicts (embedded: batches the processors
    tried again, after an error or a lost revision check),
  groups, grouped_batches, grouped_envelopes, group_fallbacks
    (embedded: groups of live batches applied together, the partition
    batches and envelopes in them, and group attempts that failed and
    were applied alone),
  decision_latency {count, p50_ms, p90_ms, p99_ms, max_ms},
  observed and expected {decisions, denies, alerts, alerts_by_rule},
  baseline {messages, message_bytes, replicas, publish_per_s,
    consume_per_s, decided_vs_publish, decided_vs_consume,
    pipeline_messages, pipeline_partitions, pipeline_batch,
    pipeline_per_s, decided_vs_pipeline} (when run),
  reconcile {ok, mismatches, decisions_expected, decisions_read,
    decisions_missing, decisions_duplicated, decisions_wrong,
    decisions_unexpected, alerts_expected, alerts_read, alerts_by_rule,
    alerts_missing, alerts_duplicated, alerts_unexpected, states_checked,
    states_missing, state_mismatches, uncertain_envelopes, attempts,
    seconds, first_mismatches}

Flags:
`

// runReport is what `loadgen run` prints; runHelp documents the JSON.
type runReport struct {
	Target            string  `json:"target"`
	Tenant            string  `json:"tenant"`
	Seed              uint64  `json:"seed"`
	Processors        int     `json:"processors,omitempty"`
	Mode              string  `json:"mode"`
	Backlog           bool    `json:"backlog"`
	Sessions          int     `json:"sessions_concurrent"`
	SessionsStarted   int     `json:"sessions_started"`
	SessionsCompleted int     `json:"sessions_completed"`
	PublishSeconds    float64 `json:"publish_seconds"`
	Published         int64   `json:"envelopes_published"`
	Retries           int64   `json:"publish_retries"`
	Duplicates        int64   `json:"publish_duplicates"`
	BatchRetries      uint64  `json:"batch_retries,omitempty"`
	BatchConflicts    uint64  `json:"batch_conflicts,omitempty"`
	// Groups, GroupedBatches and GroupedEnvelopes are the processors'
	// groups of live batches applied together and the partition batches
	// and envelopes in them;
	// GroupFallbacks the group attempts that failed (embedded).
	Groups            uint64  `json:"groups,omitempty"`
	GroupedBatches    uint64  `json:"grouped_batches,omitempty"`
	GroupedEnvelopes  uint64  `json:"grouped_envelopes,omitempty"`
	GroupFallbacks    uint64  `json:"group_fallbacks,omitempty"`
	PublishRate       float64 `json:"published_per_s"`
	DecidedRate       float64 `json:"decided_per_s"`
	LiveCapacity      float64 `json:"live_capacity_per_s,omitempty"`
	AwaitTimeouts     int64   `json:"await_timeouts,omitempty"`
	AllocsPerEnvelope float64 `json:"allocs_per_envelope,omitempty"`
	BytesPerEnvelope  float64 `json:"bytes_per_envelope,omitempty"`
	// Process is what the process used over the deciding (the whole
	// process with the embedded target; absent against a URL, where the
	// processor is elsewhere).
	Process *processUse `json:"process,omitempty"`
	// PublishProcess is what the process used publishing a backlog, per
	// envelope published (embedded, --backlog): the part of a live
	// envelope's cost that Process leaves out of a backlog's, since a
	// live run generates and stores its envelopes while deciding them.
	PublishProcess *processUse     `json:"publish_process,omitempty"`
	Latency        latencies       `json:"decision_latency"`
	Observed       tally           `json:"observed"`
	Expected       tally           `json:"expected"`
	Baseline       *baselineReport `json:"baseline,omitempty"`
	Reconcile      reconcileReport `json:"reconcile"`
}

type tally struct {
	Decisions    int64            `json:"decisions"`
	Denies       int64            `json:"denies"`
	Alerts       int64            `json:"alerts"`
	AlertsByRule map[string]int64 `json:"alerts_by_rule"`
}

// runOptions are the flags of `loadgen run`.
type runOptions struct {
	nats         natsconn.Flags
	rate         float64
	duration     time.Duration
	sessions     int
	maxEnvelopes int64
	seed         uint64
	tenant       string
	settle       time.Duration
	grace        time.Duration
	baseline     bool
	baselineMax  int
	baselineFor  time.Duration
	replicas     int
	partitions   int
	processors   int
	backlog      bool
	// awaitDecisions closes the loop: a session's next envelope waits for
	// the previous one's decision (mode closed).
	awaitDecisions bool
	noReceipts     bool
	group          groupOptions
	receiptFmt     string
	cpuProfile     string
	memProfile     string
}

// The report's modes: how the slots publish (runHelp explains them).
const (
	modeStored  = "stored"
	modeRate    = "rate"
	modeClosed  = "closed"
	modeBacklog = "backlog"
)

func (o *runOptions) mode() string {
	switch {
	case o.backlog:
		return modeBacklog
	case o.awaitDecisions:
		return modeClosed
	case o.rate > 0:
		return modeRate
	}
	return modeStored
}

// check rejects option combinations that cannot run; remote says the
// target is a NATS URL rather than the embedded server.
func (o *runOptions) check(remote bool) error {
	if o.duration <= 0 || o.sessions < 1 || o.rate < 0 || o.maxEnvelopes < 0 || o.settle < 0 || o.replicas < 1 || o.processors < 1 {
		return errors.New("--duration and --sessions must be positive; --rate, --max-envelopes and --settle not negative; --replicas and --processors at least 1")
	}
	if remote && (o.backlog || o.processors != 1 || o.noReceipts || o.receiptFmt != "batch") {
		return errors.New("--backlog, --processors, --no-receipts and --receipt-format are for the embedded target; with --nats-url, start and stop your processors yourself")
	}
	if o.receiptFmt != "batch" && o.receiptFmt != "single" {
		return fmt.Errorf("--receipt-format %q: want batch or single", o.receiptFmt)
	}
	// A closed loop is paced by the decisions themselves: a rate would
	// make decided_per_s the rate, and a backlog has no processor to
	// decide while publishing.
	if o.awaitDecisions && (o.rate > 0 || o.backlog) {
		return errors.New("--await-decisions is its own pacing: not with --rate or --backlog")
	}
	if o.awaitDecisions && o.settle <= 0 {
		return errors.New("--await-decisions waits at most --settle for each decision: --settle must be positive")
	}
	return nil
}

// errMismatch makes the command exit 1 after printing its report.
var errMismatch = errors.New("reconcile found mismatches")

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("loadgen run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = cliflag.Usage(fs, runHelp, loadgenNATSHelp)
	var o runOptions
	o.nats.Register(fs, "an admin credential, e.g. <data-dir>/creds/admin.creds")
	fs.Float64Var(&o.rate, "rate", 0, "envelopes per second over all sessions; 0: as fast as the server acknowledges")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "how long to publish")
	fs.IntVar(&o.sessions, "sessions", 200, "sessions in flight at once (each publishes its next envelope once the previous is stored, or decided with --await-decisions)")
	fs.Int64Var(&o.maxEnvelopes, "max-envelopes", 0, "stop after this many envelopes (0: no limit; --duration still applies)")
	fs.Uint64Var(&o.seed, "seed", 1, "generator seed")
	fs.StringVar(&o.tenant, "tenant", "", "tenant to publish under; default a fresh one per run (lg-<seed>-<time>) so reconciliation sees only this run")
	fs.DurationVar(&o.settle, "settle", time.Minute, "how long to wait for outstanding decisions after publishing stops (and, with --await-decisions, for each decision)")
	fs.DurationVar(&o.grace, "reconcile-grace", 5*time.Second, "how long reconciliation re-reads while alerts and states trail their decisions")
	fs.BoolVar(&o.baseline, "baseline", true, "measure raw JetStream publish and consume, and the pipeline floor, first (--baseline=false skips them)")
	fs.IntVar(&o.baselineMax, "baseline-messages", 200000, "at most this many messages in each baseline")
	fs.DurationVar(&o.baselineFor, "baseline-time", 5*time.Second, "at most this long for each baseline phase")
	fs.IntVar(&o.replicas, "replicas", topology.Default().Replicas, "replicas of the baselines' scratch streams and bucket")
	fs.IntVar(&o.partitions, "partitions", topology.Default().Partitions, "partitions of the embedded processors")
	fs.IntVar(&o.processors, "processors", 1, "embedded target: processor instances sharing the partitions, each on its own connection")
	fs.BoolVar(&o.noReceipts, "no-receipts", false, "embedded target: processors without Ed25519 receipts (processor --receipt-key none)")
	o.group.register(fs)
	fs.StringVar(&o.receiptFmt, "receipt-format", "batch", "embedded target: the processors' --receipt-format, batch or single")
	fs.BoolVar(&o.backlog, "backlog", false, "embedded target: publish everything first, then start the processors and time them deciding the backlog (the workload of the durable-consume baseline); latency is then queueing time")
	fs.BoolVar(&o.awaitDecisions, "await-decisions", false, "closed loop: each session publishes its next envelope only once the previous one's decision was seen, as agents do; decided_per_s is then the live capacity (mode closed above)")
	asJSON := fs.Bool("json", false, "print the report as JSON (fields in -h)")
	fs.StringVar(&o.memProfile, "memprofile", "", "write this process's allocation profile (pprof allocs: every allocation sampled since it started, publishing included) to this file once the decisions settled")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of this process (with the embedded target: server and processors too) to this file; with --backlog, of the deciding only")
	logLevel := fs.String("log-level", "warn", "log level of loadgen's own messages (stderr)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	nt, err := natsconn.Resolve(o.nats, natsconn.Options{})
	if err != nil {
		return err
	}
	if err := o.check(nt.URL != ""); err != nil {
		return err
	}
	log, err := newLogger(*logLevel, stderr)
	if err != nil {
		return err
	}
	if o.tenant == "" {
		o.tenant = defaultTenant(o.seed)
	}
	if err := acs.CheckTenant(o.tenant); err != nil {
		return fmt.Errorf("--tenant: %w", err)
	}
	t, err := connect(nt)
	if err != nil {
		return err
	}
	defer t.close()
	rep, _, err := executeRun(ctx, t, o, log, stderr)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		printRun(stdout, rep)
	}
	if !rep.Reconcile.OK {
		return fmt.Errorf("%w: %d", errMismatch, rep.Reconcile.Mismatches)
	}
	return nil
}

// newLogger is loadgen's own log on stderr at level.
func newLogger(level string, stderr io.Writer) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil {
		return zerolog.Logger{}, fmt.Errorf("--log-level: %w", err)
	}
	return zerolog.New(zerolog.ConsoleWriter{Out: stderr, TimeFormat: time.TimeOnly}).Level(lvl).With().Timestamp().Logger(), nil
}

// defaultTenant is a fresh tenant for a run of seed, so reconciliation
// sees only that run. The generator stays deterministic for a given
// tenant; only the CLI's default tenant depends on the clock.
func defaultTenant(seed uint64) string {
	return fmt.Sprintf("lg-%d-%x", seed, time.Now().UnixNano())
}

// loadRun is one run's publisher state, kept for reconciling again (tests).
type loadRun struct {
	gen     *traffic.Generator
	records []record
	js      jetstream.JetStream
}

// executeRun runs the load of o against t: the baselines, the publishing,
// the wait for decisions, then the reconciliation and the report.
func executeRun(ctx context.Context, t *target, o runOptions, log zerolog.Logger, stderr io.Writer) (*runReport, *loadRun, error) {
	gen, err := traffic.New(traffic.Config{Seed: o.seed, Tenant: o.tenant})
	if err != nil {
		return nil, nil, err
	}
	rep := &runReport{Target: "embedded", Tenant: o.tenant, Seed: o.seed, Sessions: o.sessions, Mode: o.mode(), Backlog: o.backlog}
	if !t.embedded {
		rep.Target = t.url
	} else {
		rep.Processors = max(o.processors, 1)
	}
	embedded := embeddedOptions{Partitions: o.partitions, Processors: o.processors, NoReceipts: o.noReceipts, SingleReceipts: o.receiptFmt == "single", Group: o.group}
	if o.backlog {
		// The streams a processor would create, so the backlog has
		// somewhere to go before any processor runs.
		if err := ensureTopology(ctx, t.nc, o.partitions); err != nil {
			return nil, nil, err
		}
	} else if err := t.startProcessors(ctx, embedded); err != nil {
		return nil, nil, err
	}
	if o.baseline {
		if rep.Baseline, err = measureBaselines(ctx, t, gen, o, stderr); err != nil {
			return nil, nil, err
		}
	}
	// Decisions and alerts are watched on their own connection so their
	// delivery does not queue behind the publishes.
	onc, err := t.dial("turnguard-loadgen-observer")
	if err != nil {
		return nil, nil, err
	}
	defer onc.Close()
	obs := newObserver()
	if err := obs.subscribe(onc, o.tenant); err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(t.nc, jetstream.WithPublishAsyncMaxPending(max(4096, 2*o.sessions)), jetstream.WithPublishAsyncTimeout(5*time.Second))
	if err != nil {
		return nil, nil, err
	}
	stopProfile := func() {}
	defer func() { stopProfile() }()
	if o.cpuProfile != "" && !o.backlog {
		if stopProfile, err = startProfile(o.cpuProfile); err != nil {
			return nil, nil, err
		}
	}
	l := &loader{gen: gen, js: js, obs: obs, log: log, maxEnvelopes: o.maxEnvelopes, deadline: time.Now().Add(o.duration)}
	if o.rate > 0 {
		l.interval = time.Duration(float64(time.Second) / o.rate)
	}
	if o.awaitDecisions {
		l.awaitDecision = o.settle
	}
	fmt.Fprintf(stderr, "run: tenant %s, %d sessions in flight (%s), for %s …\n", o.tenant, o.sessions, rep.Mode, o.duration)
	// Allocations are counted over the deciding: here, from the first
	// publish on, for the processors decide as the envelopes come.
	var memFrom runtime.MemStats
	runtime.ReadMemStats(&memFrom)
	usedFrom := readResources()
	records := l.run(ctx, o.sessions)
	published := time.Unix(0, l.lastAck.Load()).Sub(l.start)
	var decideFrom time.Time
	if o.backlog {
		if n := l.published.Load(); t.embedded && n > 0 {
			used := use(usedFrom, readResources(), float64(n))
			rep.PublishProcess = &used
		}
		fmt.Fprintf(stderr, "run: %d envelopes published; starting %d processor(s) on the backlog …\n", l.published.Load(), embedded.Processors)
		if o.cpuProfile != "" {
			if stopProfile, err = startProfile(o.cpuProfile); err != nil {
				return nil, nil, err
			}
		}
		decideFrom = time.Now()
		// A backlog is decided only from here: its publishing is not
		// counted.
		runtime.ReadMemStats(&memFrom)
		usedFrom = readResources()
		if err := t.startProcessors(ctx, embedded); err != nil {
			return nil, nil, err
		}
	}
	fmt.Fprintf(stderr, "run: %d envelopes published; waiting up to %s for their decisions …\n", l.published.Load(), o.settle)
	obs.settle(ctx, o.settle)
	var memTo runtime.MemStats
	runtime.ReadMemStats(&memTo)
	usedTo := readResources()
	stopProfile()
	stopProfile = func() {}
	if o.memProfile != "" {
		if err := writeAllocProfile(o.memProfile); err != nil {
			return nil, nil, err
		}
	}

	// Reconciliation runs even after an interrupt: that is when it matters.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	x := expect(gen, records)
	if rep.Reconcile, err = reconcile(rctx, js, x, o.grace); err != nil {
		return nil, nil, fmt.Errorf("reconcile: %w", err)
	}
	rep.fill(gen, records, l, published, obs, decideFrom, x)
	if t.embedded && rep.Observed.Decisions > 0 {
		n := float64(rep.Observed.Decisions)
		rep.AllocsPerEnvelope, rep.BytesPerEnvelope = allocsPer(memFrom, memTo, n)
		used := use(usedFrom, usedTo, n)
		rep.Process = &used
	}
	for _, p := range t.procs {
		rep.BatchRetries += p.Stats().Retries.Load()
		rep.BatchConflicts += p.Stats().Conflicts.Load()
		rep.Groups += p.Stats().Groups.Load()
		rep.GroupedBatches += p.Stats().GroupedBatches.Load()
		rep.GroupedEnvelopes += p.Stats().GroupedEnvelopes.Load()
		rep.GroupFallbacks += p.Stats().GroupFallbacks.Load()
	}
	return rep, &loadRun{gen: gen, records: records, js: js}, nil
}

// ensureTopology creates the streams, bucket and consumers a processor of
// partitions would.
func ensureTopology(ctx context.Context, nc *nats.Conn, partitions int) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	return topology.Ensure(ctx, js, processorConfig(partitions).Topology)
}

// measureBaselines measures raw JetStream and the pipeline floor on the
// run's server.
func measureBaselines(ctx context.Context, t *target, gen *traffic.Generator, o runOptions, stderr io.Writer) (*baselineReport, error) {
	size := envelopeSize(gen)
	// The embedded processors' configuration, on the scratch assets'
	// replicas.
	pcfg := processorConfig(o.partitions)
	pcfg.Topology.Replicas = o.replicas
	fmt.Fprintf(stderr, "baseline: raw JetStream async publish and durable consume of %d-byte messages …\n", size)
	b, err := baselines(ctx, t.nc, size, o.replicas, o.baselineMax, o.baselineFor)
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	fmt.Fprintf(stderr, "baseline: pipeline floor, %d partitions, batches of %d, deciding nothing …\n", pcfg.Topology.Partitions, pcfg.BatchSize)
	p, err := pipelineFloor(ctx, t.nc, t.dial, gen, pipelineConfig{Processor: pcfg,
		Sessions: o.sessions, MaxMsgs: o.baselineMax, Limit: o.baselineFor})
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	b.PipelineMessages, b.PipelinePartitions, b.PipelineBatch, b.PipelineRate = p.Messages, p.Partitions, p.Batch, p.Rate
	return &b, nil
}

// fill completes the report from what the run published, observed and
// expected.
func (rep *runReport) fill(gen *traffic.Generator, records []record, l *loader, published time.Duration, obs *observer, decideFrom time.Time, x *expectation) {
	rep.SessionsStarted = len(records)
	for _, r := range records {
		if r.published == len(gen.Session(r.index).Envelopes) {
			rep.SessionsCompleted++
		}
	}
	rep.PublishSeconds = published.Seconds()
	rep.Published, rep.Retries, rep.Duplicates = l.published.Load(), l.retries.Load(), l.duplicates.Load()
	rep.AwaitTimeouts = l.awaitTimeouts.Load()
	rep.PublishRate = rate(rep.Published, published)
	obs.mu.Lock()
	rep.Latency = summarize(obs.hist)
	rep.Observed = tally{Decisions: obs.decisions, Denies: obs.denies, AlertsByRule: maps.Clone(obs.alerts)}
	if decideFrom.IsZero() {
		decideFrom = obs.first
	}
	if !obs.last.IsZero() {
		rep.DecidedRate = rate(obs.decisions, obs.last.Sub(decideFrom))
	}
	obs.mu.Unlock()
	if rep.Mode == modeClosed {
		rep.LiveCapacity = rep.DecidedRate
	}
	for _, n := range rep.Observed.AlertsByRule {
		rep.Observed.Alerts += n
	}
	rep.Expected = tally{Decisions: int64(x.totals.Envelopes), Denies: int64(x.totals.Denies), Alerts: int64(x.totals.AlertCount()), AlertsByRule: map[string]int64{}}
	for r, n := range x.totals.Alerts {
		rep.Expected.AlertsByRule[r] = int64(n)
	}
	if b := rep.Baseline; b != nil {
		b.DecidedVsPublish = ratio(rep.DecidedRate, b.PublishRate)
		b.DecidedVsConsume = ratio(rep.DecidedRate, b.ConsumeRate)
		b.DecidedVsPipeline = ratio(rep.DecidedRate, b.PipelineRate)
	}
}

// envelopeSize is the mean size of the generated envelopes, for the
// baseline's messages.
func envelopeSize(gen *traffic.Generator) int {
	n, bytes := 0, 0
	for i := range int64(20) {
		for _, e := range gen.Session(i).Envelopes {
			n++
			bytes += len(e.Data)
		}
	}
	return bytes / n
}

func rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return math.Round(a/b*1000) / 1000
}

func printRun(w io.Writer, r *runReport) {
	fmt.Fprintf(w, "target %s, tenant %s, seed %d, %d sessions in flight", r.Target, r.Tenant, r.Seed, r.Sessions)
	if r.Processors > 0 {
		fmt.Fprintf(w, ", %d in-process processor(s)", r.Processors)
	}
	switch r.Mode {
	case modeBacklog:
		fmt.Fprint(w, ", backlog: published first, then decided")
	case modeClosed:
		fmt.Fprint(w, ", closed loop: each session's next envelope once the previous is decided")
	}
	fmt.Fprintln(w)
	if b := r.Baseline; b != nil {
		fmt.Fprintf(w, "baseline   %d × %d B (R%d): publish %.0f/s, durable consume %.0f/s\n", b.Messages, b.MessageBytes, b.Replicas, b.PublishRate, b.ConsumeRate)
		fmt.Fprintf(w, "floor      %d envelopes, %d partitions, batches of %d, no deciding: %.0f/s\n", b.PipelineMessages, b.PipelinePartitions, b.PipelineBatch, b.PipelineRate)
	}
	fmt.Fprintf(w, "published  %d envelopes in %.1fs (%.0f/s), %d sessions started, %d completed, %d retries, %d duplicate acks\n",
		r.Published, r.PublishSeconds, r.PublishRate, r.SessionsStarted, r.SessionsCompleted, r.Retries, r.Duplicates)
	fmt.Fprintf(w, "decided    %.0f/s", r.DecidedRate)
	if r.Mode == modeClosed {
		fmt.Fprint(w, ", the live capacity")
		if r.AwaitTimeouts > 0 {
			fmt.Fprintf(w, " (%d decisions not seen within --settle)", r.AwaitTimeouts)
		}
	}
	if b := r.Baseline; b != nil {
		fmt.Fprintf(w, " (%.3f of raw publish, %.3f of durable consume, %.3f of the pipeline floor)", b.DecidedVsPublish, b.DecidedVsConsume, b.DecidedVsPipeline)
	}
	if r.AllocsPerEnvelope > 0 {
		fmt.Fprintf(w, "\nallocs     %.1f allocations, %.0f bytes per decided envelope (whole process: loadgen, server, processors)", r.AllocsPerEnvelope, r.BytesPerEnvelope)
	}
	if p := r.Process; p != nil {
		fmt.Fprintf(w, "\nprocess    %s", p)
	}
	l := r.Latency
	fmt.Fprintf(w, "\nlatency    publish → decision, %d: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms\n", l.Count, l.P50, l.P90, l.P99, l.Max)
	fmt.Fprintf(w, "%-10s %10s %10s %10s  %s\n", "", "decisions", "denies", "alerts", "by rule")
	for _, row := range []struct {
		name string
		t    tally
	}{{"observed", r.Observed}, {"expected", r.Expected}} {
		fmt.Fprintf(w, "%-10s %10d %10d %10d  %s\n", row.name, row.t.Decisions, row.t.Denies, row.t.Alerts, byRule(row.t.AlertsByRule))
	}
	c := r.Reconcile
	verdict := "OK"
	if !c.OK {
		verdict = fmt.Sprintf("FAILED, %d mismatches", c.Mismatches)
	}
	fmt.Fprintf(w, "reconcile  %s (%.2fs, %d attempts)\n", verdict, c.Seconds, c.Attempts)
	fmt.Fprintf(w, "  decisions %d read / %d expected: %d missing, %d duplicated, %d wrong, %d unexpected\n",
		c.DecisionsRead, c.DecisionsExpected, c.Missing, c.Duplicated, c.Wrong, c.Unexpected)
	fmt.Fprintf(w, "  alerts    %d read / %d expected: %d missing, %d duplicated, %d unexpected\n",
		c.AlertsRead, c.AlertsExpected, c.AlertsMissing, c.AlertsDuplicated, c.AlertsUnexpected)
	fmt.Fprintf(w, "  states    %d checked: %d missing, %d mismatched; %d uncertain envelopes\n", c.StatesChecked, c.StatesMissing, c.StateMismatches, c.Uncertain)
	for _, m := range c.FirstMismatches {
		fmt.Fprintf(w, "  - %s\n", m)
	}
}

func byRule[N int | int64](m map[string]N) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}
