package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/cliflag"
	"github.com/turnguard/turnguard/internal/natsconn"
	"github.com/turnguard/turnguard/internal/topology"
	"github.com/turnguard/turnguard/pkg/client"
)

const syncHelp = `Usage: loadgen sync [flags]

Synchronous decision round trips (pkg/client) at a fixed rate, next to raw
synchronous JetStream publishes. Each latency runs from when the call was
due (an open loop: a slow answer does not delay later calls), and each
answered round trip is also split in three: until it was called (the
schedule's own lateness and the session's previous call), until the hooks
stream acknowledged its envelope (subscribing, publishing), and after —
turnguard's part: deciding, storing the session and the decision, and the
decision's way back. allocs_per_call, bytes_per_call and process
{cpu_busy, cpu_us_per_envelope (here per call), gc_cycles, gc_cpu_share}
are of the decision phase, of this process (with the embedded target:
client, server and processor), as in loadgen run -h.

--json prints one object with these fields:
  rate_per_s, duration,
  raw_jetstream_sync_publish, sync_decision_round_trip,
    decision_before_call, decision_until_stored, decision_after_stored
    (each {count, p50_ms, p90_ms, p99_ms, max_ms}),
  p99_ratio (sync_decision_round_trip's p99 over the raw publish's),
  decisions (answers by decision), from_posture, errors,
  dropped_unverified, dropped_other_envelope,
  allocs_per_call, bytes_per_call, process

Flags:
`

// syncReport is what `loadgen sync` prints (as JSON with --json).
type syncReport struct {
	Rate     float64   `json:"rate_per_s"`
	Duration string    `json:"duration"`
	Raw      latencies `json:"raw_jetstream_sync_publish"`
	Decide   latencies `json:"sync_decision_round_trip"`
	// BeforeCall, UntilStored and AfterStored split each answered round
	// trip in three: from when it was due until Decide was called (the
	// schedule's own lateness, and the wait for the session's previous
	// call), until the hooks stream acknowledged its envelope
	// (client.Decision.Stored: subscribing and publishing), and what
	// turnguard took after that — deciding, storing the session and the
	// decision, and the decision's way back. Raw counts the first part too.
	BeforeCall  latencies `json:"decision_before_call"`
	UntilStored latencies `json:"decision_until_stored"`
	AfterStored latencies `json:"decision_after_stored"`
	// P99Ratio is the decision round trip's p99 over the raw publish's.
	P99Ratio float64 `json:"p99_ratio"`
	// Decisions counts the answers by decision; FromPosture those that
	// timed out.
	Decisions   map[string]int `json:"decisions"`
	FromPosture int            `json:"from_posture"`
	Errors      int            `json:"errors"`
	// DroppedUnverified counts messages on decision subjects whose receipt
	// did not verify (forged, or the wrong --receipt-key);
	// DroppedOtherEnvelope genuine decisions of other envelopes.
	DroppedUnverified    uint64 `json:"dropped_unverified"`
	DroppedOtherEnvelope uint64 `json:"dropped_other_envelope"`
	// AllocsPerCall and BytesPerCall are runtime.MemStats' Mallocs and
	// TotalAlloc over the decision phase per call: with the embedded
	// target, of the whole process (client, server and processor).
	AllocsPerCall float64 `json:"allocs_per_call"`
	BytesPerCall  float64 `json:"bytes_per_call"`
	// Process is what the process used over the decision phase, per
	// call (with the embedded target, the whole process).
	Process processUse `json:"process"`
}

type latencies struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

func summarize(h *hdrhistogram.Histogram) latencies {
	ms := func(v int64) float64 { return float64(v) / 1e3 }
	return latencies{Count: h.TotalCount(), P50: ms(h.ValueAtQuantile(50)), P90: ms(h.ValueAtQuantile(90)), P99: ms(h.ValueAtQuantile(99)), Max: ms(h.Max())}
}

func runSync(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("loadgen sync", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = cliflag.Usage(fs, syncHelp, loadgenNATSHelp)
	var nf natsconn.Flags
	nf.Register(fs, "an admin credential, e.g. <data-dir>/creds/admin.creds")
	rate := fs.Float64("rate", 200, "requests per second, for both the baseline and the decisions")
	duration := fs.Duration("duration", 10*time.Second, "how long each phase sends")
	sessions := fs.Int("sessions", 50, "concurrent sessions the envelopes are spread over")
	partitions := fs.Int("partitions", topology.Default().Partitions, "partitions of the embedded processor")
	timeout := fs.Duration("timeout", 5*time.Second, "decision timeout (then the posture answers and the call counts as from_posture)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this process (with the embedded target: server and processor too) to this file")
	var group groupOptions
	group.register(fs)
	memProfile := fs.String("memprofile", "", "write this process's allocation profile (pprof allocs, both phases) to this file at the end")
	receiptKey := fs.String("receipt-key", "", "with a NATS server: the processor's receipt public key (PEM: <data-dir>/receipt-key.pub or GET /receipt-key) decisions must verify with; \"none\" for processors run with --receipt-key none")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	nt, err := natsconn.Resolve(nf, natsconn.Options{})
	if err != nil {
		return err
	}
	if *cpuProfile != "" {
		stop, err := startProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if *rate <= 0 || *duration <= 0 || *sessions < 1 {
		return errors.New("--rate, --duration and --sessions must be positive")
	}
	t, err := connect(nt)
	if err != nil {
		return err
	}
	defer t.close()
	if err := t.startProcessors(ctx, embeddedOptions{Partitions: *partitions, Processors: 1, Group: group}); err != nil {
		return err
	}
	trust, err := t.trust(*receiptKey)
	if err != nil {
		return err
	}
	n := int(*rate * duration.Seconds())
	interval := time.Duration(float64(time.Second) / *rate)
	rep := syncReport{Rate: *rate, Duration: duration.String(), Decisions: map[string]int{}}

	fmt.Fprintf(stderr, "raw JetStream synchronous publish: %d at %.0f/s …\n", n, *rate)
	raw, err := rawPublish(ctx, t, n, interval)
	if err != nil {
		return err
	}
	rep.Raw = summarize(raw)

	fmt.Fprintf(stderr, "synchronous decisions: %d at %.0f/s over %d sessions …\n", n, *rate, *sessions)
	var memFrom, memTo runtime.MemStats
	runtime.ReadMemStats(&memFrom)
	usedFrom := readResources()
	dec, legs, err := decide(ctx, t, n, interval, *sessions, *timeout, trust, &rep)
	if err != nil {
		return err
	}
	rep.BeforeCall, rep.UntilStored, rep.AfterStored = summarize(legs.beforeCall), summarize(legs.untilStored), summarize(legs.afterStored)
	runtime.ReadMemStats(&memTo)
	usedTo := readResources()
	if n > 0 {
		rep.AllocsPerCall, rep.BytesPerCall = allocsPer(memFrom, memTo, float64(n))
		rep.Process = use(usedFrom, usedTo, float64(n))
	}
	if *memProfile != "" {
		if err := writeAllocProfile(*memProfile); err != nil {
			return err
		}
	}
	rep.Decide = summarize(dec)
	if rep.Raw.P99 > 0 {
		rep.P99Ratio = rep.Decide.P99 / rep.Raw.P99
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Fprintf(stdout, "%-34s %7s %9s %9s %9s %9s\n", "", "count", "p50 ms", "p90 ms", "p99 ms", "max ms")
	for _, row := range []struct {
		name string
		l    latencies
	}{{"raw JetStream sync publish", rep.Raw}, {"sync decision round trip", rep.Decide}, {"  until called (schedule, session)", rep.BeforeCall}, {"  until the envelope is stored", rep.UntilStored}, {"  after: turnguard's", rep.AfterStored}} {
		fmt.Fprintf(stdout, "%-34s %7d %9.3f %9.3f %9.3f %9.3f\n", row.name, row.l.Count, row.l.P50, row.l.P90, row.l.P99, row.l.Max)
	}
	fmt.Fprintf(stdout, "allocations per call %.1f, %.0f B (the whole process)\n", rep.AllocsPerCall, rep.BytesPerCall)
	fmt.Fprintf(stdout, "process: %s (per call)\n", rep.Process)
	fmt.Fprintf(stdout, "p99 ratio (decision / raw publish): %.2f\ndecisions: %v, from posture: %d, errors: %d, dropped unverified: %d\n", rep.P99Ratio, rep.Decisions, rep.FromPosture, rep.Errors, rep.DroppedUnverified)
	return nil
}

// trust is how the synchronous client knows the processor's decisions:
// the embedded processors' key, or --receipt-key against a URL.
func (t *target) trust(receiptKey string) (client.Options, error) {
	switch {
	case receiptKey == "none":
		return client.Options{InsecureAcceptUnsignedDecisions: true}, nil
	case receiptKey != "":
		k, err := client.LoadReceiptKey(receiptKey)
		if err != nil {
			return client.Options{}, err
		}
		return client.Options{TrustedKeys: []ed25519.PublicKey{k}}, nil
	case t.receiptKey != nil:
		return client.Options{TrustedKeys: []ed25519.PublicKey{t.receiptKey}}, nil
	}
	return client.Options{}, errors.New("--receipt-key is required with --nats-url: the processor's <data-dir>/receipt-key.pub (or GET /receipt-key), or none for processors without receipts")
}

// newLatencyHistogram records microseconds up to a minute.
func newLatencyHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3)
}

// schedule runs do(i, due) for i in [0, n), due at start + i·interval,
// each in its own goroutine (open loop: a slow answer does not delay later
// sends), and records how long each that succeeded took from when it was
// due.
func schedule(ctx context.Context, n int, interval time.Duration, do func(i int, due time.Time) error) (*hdrhistogram.Histogram, int, error) {
	h := newLatencyHistogram()
	var mu sync.Mutex
	var failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		at := start.Add(time.Duration(i) * interval)
		if !wait(ctx, time.Until(at)) {
			wg.Wait()
			return h, int(failed.Load()), ctx.Err()
		}
		wg.Go(func() {
			if err := do(i, at); err != nil {
				failed.Add(1)
				return
			}
			took := time.Since(at)
			mu.Lock()
			_ = h.RecordValue(took.Microseconds())
			mu.Unlock()
		})
	}
	wg.Wait()
	return h, int(failed.Load()), nil
}

func rawPublish(ctx context.Context, t *target, n int, interval time.Duration) (*hdrhistogram.Histogram, error) {
	js, err := jetstream.New(t.nc)
	if err != nil {
		return nil, err
	}
	const name = "LOADGEN_BASELINE"
	_ = js.DeleteStream(ctx, name)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{"loadgen.baseline.>"}, Storage: jetstream.FileStorage}); err != nil {
		return nil, err
	}
	defer func() { _ = js.DeleteStream(context.WithoutCancel(ctx), name) }()
	payload := examples.Session("")[3].Data // a toolCallRequest-sized message
	h, failed, err := schedule(ctx, n, interval, func(i int, _ time.Time) error {
		_, err := js.Publish(ctx, fmt.Sprintf("loadgen.baseline.%d", i%64), payload, jetstream.WithMsgID(fmt.Sprintf("b-%d", i)))
		return err
	})
	if failed > 0 {
		return h, fmt.Errorf("%d baseline publishes failed", failed)
	}
	return h, err
}

// callLegs are the answered calls' round trips in three parts, in
// microseconds: from when each was due until it called Decide, until its
// envelope was acknowledged, and after.
type callLegs struct {
	beforeCall, untilStored, afterStored *hdrhistogram.Histogram
}

// decide sends the example session over many sessions: step k of session s
// is due at (k·sessions + s)·interval, and waits for step k-1 of its
// session so each session stays in order.
func decide(ctx context.Context, t *target, n int, interval time.Duration, sessions int, timeout time.Duration, trust client.Options, rep *syncReport) (*hdrhistogram.Histogram, callLegs, error) {
	legs := callLegs{beforeCall: newLatencyHistogram(), untilStored: newLatencyHistogram(), afterStored: newLatencyHistogram()}
	trust.Timeout, trust.Posture = timeout, client.Deny
	c, err := client.New(t.nc, trust)
	if err != nil {
		return nil, legs, err
	}
	type sess struct {
		envs []examples.Envelope
		done []chan struct{}
	}
	perSession := (n + sessions - 1) / sessions
	steps := len(examples.Session(""))
	all := make([]*sess, 0, sessions*((perSession+steps-1)/steps))
	bySlot := make([]*sess, sessions)
	newSession := func() *sess {
		s := &sess{envs: examples.Session(fmt.Sprintf("%08x-0000-4000-8000-%012x", time.Now().UnixNano()&0xffffffff, len(all)))}
		for range s.envs {
			s.done = append(s.done, make(chan struct{}))
		}
		all = append(all, s)
		return s
	}
	type job struct {
		s *sess
		k int
	}
	jobs := make([]job, n)
	counts := make([]int, sessions)
	for i := range n {
		slot := i % sessions
		if bySlot[slot] == nil || counts[slot] == steps {
			bySlot[slot], counts[slot] = newSession(), 0
		}
		jobs[i] = job{bySlot[slot], counts[slot]}
		counts[slot]++
	}
	var mu sync.Mutex
	h, failed, err := schedule(ctx, n, interval, func(i int, due time.Time) error {
		j := jobs[i]
		defer close(j.s.done[j.k])
		if j.k > 0 {
			<-j.s.done[j.k-1]
		}
		called := time.Now()
		d, err := c.Decide(ctx, j.s.envs[j.k].Data)
		returned := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if err == nil && !d.FromPosture && !d.Stored.IsZero() {
			_ = legs.beforeCall.RecordValue(called.Sub(due).Microseconds())
			_ = legs.untilStored.RecordValue(d.Stored.Sub(called).Microseconds())
			_ = legs.afterStored.RecordValue(returned.Sub(d.Stored).Microseconds())
		}
		switch {
		case err != nil:
			rep.Errors++
			return err
		case d.FromPosture:
			rep.FromPosture++
			return errors.New("no decision")
		case d.Error != nil:
			rep.Decisions["error"]++
		default:
			rep.Decisions[d.Disposition]++
		}
		return nil
	})
	_ = failed
	st := c.Stats()
	rep.DroppedUnverified, rep.DroppedOtherEnvelope = st.DroppedUnverified, st.DroppedOtherEnvelope
	return h, legs, err
}
