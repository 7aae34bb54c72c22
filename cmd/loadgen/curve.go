package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/cliflag"
	"github.com/turnguard/turnguard/internal/natsconn"
	"github.com/turnguard/turnguard/internal/topology"
)

const curveHelp = `Usage: loadgen curve [flags]

Decision latency against the offered load, as fractions of the live
capacity. Every run below has its own fresh embedded server and
processors (no --nats-url: each step must start from empty streams), and
is reconciled exactly as loadgen run's are:

 1. the live capacity: a closed-loop run (loadgen run --await-decisions)
    for --duration, each of --sessions sessions publishing its next
    envelope once the previous one is decided;
 2. the backlog capacity, unless --backlog-envelopes is 0: a loadgen run
    --backlog of that many envelopes;
 3. for each fraction in --points, an open-loop run at fraction × the live
    capacity (loadgen run --rate) for --step-duration: decision latency
    p50/p90/p99/max, published and decided per second.

No raw JetStream baseline unless --baseline (then once, before the
live-capacity run). Progress goes to stderr. Exit status 1 when any run
does not reconcile.

--json prints one object with these fields:
  seed, partitions, processors, sessions_concurrent, no_receipts,
  receipt_format,
  live_capacity_per_s, backlog_capacity_per_s (when measured),
  live_vs_backlog (live over backlog capacity),
  reconciled (every run did),
  live (the closed-loop run's report, fields as in loadgen run -h),
  backlog (the backlog run's report, when measured),
  steps [{fraction, rate_per_s, envelopes_published, published_per_s,
    decided_per_s, decision_latency {count, p50_ms, p90_ms, p99_ms,
    max_ms}, allocs_per_envelope, bytes_per_envelope, process
    {cpu_busy, cpu_us_per_envelope, gc_cycles, gc_cpu_share} (whole
    process, as in loadgen run -h), reconciled, reconcile {as in loadgen
    run -h}}]

Flags:
`

// curveReport is what `loadgen curve` prints; curveHelp documents the
// JSON.
type curveReport struct {
	Seed            uint64      `json:"seed"`
	Partitions      int         `json:"partitions"`
	Processors      int         `json:"processors"`
	Sessions        int         `json:"sessions_concurrent"`
	NoReceipts      bool        `json:"no_receipts"`
	ReceiptFormat   string      `json:"receipt_format"`
	LiveCapacity    float64     `json:"live_capacity_per_s"`
	BacklogCapacity float64     `json:"backlog_capacity_per_s,omitempty"`
	LiveVsBacklog   float64     `json:"live_vs_backlog,omitempty"`
	Reconciled      bool        `json:"reconciled"`
	Live            *runReport  `json:"live"`
	Backlog         *runReport  `json:"backlog,omitempty"`
	Steps           []curveStep `json:"steps"`
}

// curveStep is one open-loop run of the curve.
type curveStep struct {
	Fraction          float64         `json:"fraction"`
	Rate              float64         `json:"rate_per_s"`
	Published         int64           `json:"envelopes_published"`
	PublishRate       float64         `json:"published_per_s"`
	DecidedRate       float64         `json:"decided_per_s"`
	Latency           latencies       `json:"decision_latency"`
	AllocsPerEnvelope float64         `json:"allocs_per_envelope"`
	BytesPerEnvelope  float64         `json:"bytes_per_envelope"`
	Process           *processUse     `json:"process,omitempty"`
	Reconciled        bool            `json:"reconciled"`
	Reconcile         reconcileReport `json:"reconcile"`
}

// backlogPublishLimit bounds the publishing of the backlog run, which
// --backlog-envelopes ends long before on any working machine.
const backlogPublishLimit = 5 * time.Minute

func runCurve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("loadgen curve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = cliflag.Usage(fs, curveHelp, "")
	// The runs' options but for their pacing, duration and tenant.
	o := runOptions{baselineMax: 200000, baselineFor: 5 * time.Second, replicas: topology.Default().Replicas}
	liveFor := fs.Duration("duration", 15*time.Second, "how long the closed-loop run measuring the live capacity publishes")
	stepFor := fs.Duration("step-duration", 10*time.Second, "how long each open-loop step publishes")
	points := fs.String("points", "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9", "comma-separated fractions of the live capacity to offer, one step each (above 1 overloads)")
	backlogN := fs.Int64("backlog-envelopes", 60000, "envelopes of the run measuring the backlog capacity (0: skip it)")
	fs.IntVar(&o.sessions, "sessions", 200, "sessions in flight at once in every run")
	fs.Uint64Var(&o.seed, "seed", 1, "generator seed of every run")
	fs.IntVar(&o.partitions, "partitions", topology.Default().Partitions, "partitions of the embedded processors")
	fs.IntVar(&o.processors, "processors", 1, "processor instances sharing the partitions, each on its own connection")
	fs.BoolVar(&o.noReceipts, "no-receipts", false, "processors without Ed25519 receipts (processor --receipt-key none)")
	o.group.register(fs)
	fs.StringVar(&o.receiptFmt, "receipt-format", "batch", "the processors' --receipt-format, batch or single")
	fs.DurationVar(&o.settle, "settle", time.Minute, "how long each run waits for outstanding decisions after publishing stops (and the closed loop for each decision)")
	fs.DurationVar(&o.grace, "reconcile-grace", 5*time.Second, "how long reconciliation re-reads while alerts and states trail their decisions")
	baseline := fs.Bool("baseline", false, "measure raw JetStream publish and consume, and the pipeline floor, once before the live-capacity run (slow)")
	asJSON := fs.Bool("json", false, "print the report as JSON (fields in -h)")
	logLevel := fs.String("log-level", "warn", "log level of loadgen's own messages (stderr)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fractions, err := parsePoints(*points)
	if err != nil {
		return err
	}
	if *liveFor <= 0 || *stepFor <= 0 || *backlogN < 0 {
		return errors.New("--duration and --step-duration must be positive, --backlog-envelopes not negative")
	}
	// The options every run shares, checked before the first run starts
	// (as the live-capacity run's, which has the most to check).
	first := o
	first.duration, first.awaitDecisions = *liveFor, true
	if err := first.check(false); err != nil {
		return err
	}
	log, err := newLogger(*logLevel, stderr)
	if err != nil {
		return err
	}
	rep, err := measureCurve(ctx, o, curvePlan{live: *liveFor, step: *stepFor, fractions: fractions, backlog: *backlogN, baseline: *baseline}, log, stderr)
	if rep != nil {
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			if jerr := enc.Encode(rep); jerr != nil {
				return errors.Join(err, jerr)
			}
		} else {
			printCurve(stdout, rep)
		}
	}
	if err != nil {
		return err
	}
	if !rep.Reconciled {
		return fmt.Errorf("%w: a run of the curve did not reconcile", errMismatch)
	}
	return nil
}

// parsePoints reads --points: positive fractions, comma-separated.
func parsePoints(s string) ([]float64, error) {
	var fractions []float64
	for f := range strings.SplitSeq(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("--points: %q is not a positive fraction", f)
		}
		fractions = append(fractions, v)
	}
	return fractions, nil
}

// curvePlan is what the curve measures besides each run's options.
type curvePlan struct {
	live, step time.Duration
	fractions  []float64
	// backlog is the backlog run's envelopes (0: none).
	backlog  int64
	baseline bool
}

// measureCurve runs the curve's runs one after another. On an error or an
// interrupt it returns what it measured so far with the error.
func measureCurve(ctx context.Context, o runOptions, plan curvePlan, log zerolog.Logger, stderr io.Writer) (*curveReport, error) {
	rep := &curveReport{Seed: o.seed, Partitions: o.partitions, Processors: o.processors, Sessions: o.sessions,
		NoReceipts: o.noReceipts, ReceiptFormat: o.receiptFmt, Reconciled: true, Steps: []curveStep{}}

	live := o
	live.duration, live.awaitDecisions, live.baseline = plan.live, true, plan.baseline
	fmt.Fprintf(stderr, "curve: live capacity: closed loop, %d sessions, for %s …\n", o.sessions, plan.live)
	lr, err := runFresh(ctx, live, log, stderr)
	if err != nil {
		return nil, fmt.Errorf("live capacity: %w", err)
	}
	rep.Live, rep.LiveCapacity = lr, lr.LiveCapacity
	rep.Reconciled = rep.Reconciled && lr.Reconcile.OK
	fmt.Fprintf(stderr, "curve: live capacity %.0f/s, p99 %.2f ms, %s\n", lr.LiveCapacity, lr.Latency.P99, verdict(lr.Reconcile))
	if lr.LiveCapacity <= 0 {
		return rep, errors.New("live capacity: no decisions seen, nothing to scale the steps by")
	}
	if err := ctx.Err(); err != nil {
		return rep, err
	}

	if plan.backlog > 0 {
		b := o
		b.duration, b.maxEnvelopes, b.backlog = backlogPublishLimit, plan.backlog, true
		fmt.Fprintf(stderr, "curve: backlog capacity: %d envelopes …\n", plan.backlog)
		br, err := runFresh(ctx, b, log, stderr)
		if err != nil {
			return rep, fmt.Errorf("backlog capacity: %w", err)
		}
		rep.Backlog, rep.BacklogCapacity = br, br.DecidedRate
		rep.LiveVsBacklog = ratio(rep.LiveCapacity, rep.BacklogCapacity)
		rep.Reconciled = rep.Reconciled && br.Reconcile.OK
		fmt.Fprintf(stderr, "curve: backlog capacity %.0f/s (live/backlog %.3f), %s\n", br.DecidedRate, rep.LiveVsBacklog, verdict(br.Reconcile))
		if err := ctx.Err(); err != nil {
			return rep, err
		}
	}

	for i, f := range plan.fractions {
		s := o
		s.duration, s.rate = plan.step, f*rep.LiveCapacity
		fmt.Fprintf(stderr, "curve: step %d/%d: %.2f × %.0f/s = %.0f/s for %s …\n", i+1, len(plan.fractions), f, rep.LiveCapacity, s.rate, plan.step)
		sr, err := runFresh(ctx, s, log, stderr)
		if err != nil {
			return rep, fmt.Errorf("step %d (%.2f): %w", i+1, f, err)
		}
		rep.Steps = append(rep.Steps, curveStep{Fraction: f, Rate: s.rate, Published: sr.Published, PublishRate: sr.PublishRate,
			DecidedRate: sr.DecidedRate, Latency: sr.Latency, AllocsPerEnvelope: sr.AllocsPerEnvelope, BytesPerEnvelope: sr.BytesPerEnvelope,
			Process: sr.Process, Reconciled: sr.Reconcile.OK, Reconcile: sr.Reconcile})
		rep.Reconciled = rep.Reconciled && sr.Reconcile.OK
		fmt.Fprintf(stderr, "curve: step %d/%d: decided %.0f/s, p50 %.2f ms, p99 %.2f ms, %s\n", i+1, len(plan.fractions), sr.DecidedRate, sr.Latency.P50, sr.Latency.P99, verdict(sr.Reconcile))
		if err := ctx.Err(); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// runFresh runs o against a fresh embedded server and processors, under
// a tenant of its own, and shuts them down: no run of a curve inherits
// another's backlog, streams or sessions.
func runFresh(ctx context.Context, o runOptions, log zerolog.Logger, stderr io.Writer) (*runReport, error) {
	if err := o.check(false); err != nil {
		return nil, err
	}
	o.tenant = defaultTenant(o.seed)
	t, err := connect(natsconn.Target{})
	if err != nil {
		return nil, err
	}
	defer t.close()
	rep, _, err := executeRun(ctx, t, o, log, stderr)
	return rep, err
}

func verdict(c reconcileReport) string {
	if c.OK {
		return "reconciled"
	}
	return fmt.Sprintf("NOT reconciled (%d mismatches)", c.Mismatches)
}

func printCurve(w io.Writer, r *curveReport) {
	fmt.Fprintf(w, "embedded target, %d in-process processor(s), %d partitions, %d sessions in flight, seed %d\n", r.Processors, r.Partitions, r.Sessions, r.Seed)
	if l := r.Live; l != nil {
		fmt.Fprintf(w, "live capacity     %.0f/s: closed loop, %d envelopes in %.1fs, p50 %.2f ms, p99 %.2f ms, %.1f allocs and %.0f B per envelope, %s\n",
			r.LiveCapacity, l.Observed.Decisions, l.PublishSeconds, l.Latency.P50, l.Latency.P99, l.AllocsPerEnvelope, l.BytesPerEnvelope, verdict(l.Reconcile))
		if p := l.Process; p != nil && p.CPUMicrosPer > 0 {
			fmt.Fprintf(w, "                  CPU %.0f µs per envelope (generating, publishing and deciding it), %.1f %% busy\n", p.CPUMicrosPer, p.CPUBusy*100)
		}
		if l.AwaitTimeouts > 0 {
			fmt.Fprintf(w, "                  %d decisions not seen within --settle\n", l.AwaitTimeouts)
		}
	}
	if b := r.Backlog; b != nil {
		fmt.Fprintf(w, "backlog capacity  %.0f/s: %d envelopes, %.1f allocs and %.0f B per envelope, %s; live/backlog %.3f\n",
			r.BacklogCapacity, b.Published, b.AllocsPerEnvelope, b.BytesPerEnvelope, verdict(b.Reconcile), r.LiveVsBacklog)
		if p, pub := b.Process, b.PublishProcess; p != nil && pub != nil && p.CPUMicrosPer > 0 && pub.CPUMicrosPer > 0 {
			fmt.Fprintf(w, "                  CPU %.0f µs per envelope deciding, %.1f %% busy; publishing it first took %.0f µs more\n", p.CPUMicrosPer, p.CPUBusy*100, pub.CPUMicrosPer)
		}
	}
	fmt.Fprintf(w, "%8s %9s %11s %9s %8s %8s %8s %8s %10s %8s %9s %6s  %s\n", "fraction", "rate/s", "published/s", "decided/s", "p50 ms", "p90 ms", "p99 ms", "max ms", "allocs/env", "CPU busy", "CPU µs/env", "GC %", "reconciled")
	for _, s := range r.Steps {
		ok := "yes"
		if !s.Reconciled {
			ok = fmt.Sprintf("NO, %d mismatches", s.Reconcile.Mismatches)
		}
		var p processUse
		if s.Process != nil {
			p = *s.Process
		}
		fmt.Fprintf(w, "%8.2f %9.0f %11.0f %9.0f %8.2f %8.2f %8.2f %8.2f %10.1f %8.3f %9.0f %6.1f  %s\n",
			s.Fraction, s.Rate, s.PublishRate, s.DecidedRate, s.Latency.P50, s.Latency.P90, s.Latency.P99, s.Latency.Max, s.AllocsPerEnvelope, p.CPUBusy, p.CPUMicrosPer, p.GCShare*100, ok)
	}
}
