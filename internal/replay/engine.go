package replay

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/nats-io/nats.go"

	"github.com/turnguard/turnguard/internal/callersig"
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// Engine runs recorded envelopes through the pure core the way the
// processor did: same decision function, states kept as the bucket keeps
// them, stream sequence and stream time from the record. Its Guardian
// should be configured as the processor's. Decide signs nothing (the
// processor signs in Guardian.Seal, when it publishes), so replay, which
// compares decisions and publishes none, does no signing work.
type Engine struct {
	Guardian *guardian.Guardian
	Rules    *policy.Set
	Memory   *guardian.Memory
}

// NewEngine returns an engine with empty state.
func NewEngine(g *guardian.Guardian, rs *policy.Set) *Engine {
	return &Engine{Guardian: g, Rules: rs, Memory: guardian.NewMemory()}
}

// Decide decides one recorded envelope.
func (e *Engine) Decide(env Envelope) guardian.Outcome {
	if env.RouteErr != nil {
		return e.Guardian.Unroutable(env.RouteErr)
	}
	return e.Memory.Decide(e.Guardian, e.Rules, env.Route, guardian.Message{Subject: env.Subject, Data: env.Data, Seq: env.Seq, Time: env.Time, Caller: claimedCaller(env.Subject, env.Data, env.Header), MsgID: env.Header.Get(acs.HdrMsgID)})
}

// claimedCaller is who published an envelope, as the processor took it:
// the HTTP caller its headers name, taken unverified (replay does not hold
// the state key the endpoint attests with: an envelope with a forged
// attestation, which the processor refused, replays as the caller it
// names), else the NATS user whose signature verifies — a public-key
// check, the same as the processor's.
func claimedCaller(subject string, data []byte, h nats.Header) string {
	if v, ok := h[acs.HdrOnBehalfOf]; ok && len(v) == 1 {
		return turnstate.HTTPCaller(v[0])
	}
	caller, _ := callersig.Caller(h, acs.InboundOf(subject), data)
	return caller
}

// Progress shows how far a long run is, on a terminal only: envelopes read
// of the range, rate and time left.
//
// The time left is estimated from a smoothed rate of progress through the
// range, and only once the run has gone on long enough (etaAfter) or far
// enough (etaAfterShare) for the rate to mean something: the first
// envelope arrives after the consumer was created — a wait that, taken as
// the rate, once made a 14-second run announce 28 minutes.
type Progress struct {
	w        io.Writer
	on       bool
	from, to uint64
	now      func() time.Time
	unit     string
	// n counts the envelopes read (the displayed rate); first is when the
	// first arrived, shown when the line was last written.
	n            uint64
	first, shown time.Time
	// rate is the smoothed progress through the range, in stream
	// positions a second, from samples taken when the line is written;
	// lastDone and lastAt are the previous sample.
	rate     float64
	lastDone uint64
	lastAt   time.Time
}

const (
	// progressEvery is how often the line is rewritten, and the rate
	// sampled.
	progressEvery = 200 * time.Millisecond
	// etaAfter and etaAfterShare: no estimate before this much time since
	// the first envelope, unless this share of the range is done.
	etaAfter      = 2 * time.Second
	etaAfterShare = 0.1
	// rateWeight is the weight of the newest sample in the smoothed rate:
	// a burst or a stall moves the estimate, without making it jump.
	rateWeight = 0.3
)

// NewProgress returns a progress line for the stream range [from, to],
// written to w when w is a terminal.
func NewProgress(w io.Writer, from, to uint64) *Progress {
	return newProgress(w, from, to, "envelopes")
}

// NewCountProgress returns a progress line for total items counted in
// unit (runs, files), written to w when w is a terminal; At(n) records
// that n of them are done.
func NewCountProgress(w io.Writer, total uint64, unit string) *Progress {
	return newProgress(w, 1, total, unit)
}

// newProgress is NewProgress over a range of another stream, whose rate
// is counted in unit.
func newProgress(w io.Writer, from, to uint64, unit string) *Progress {
	f, ok := w.(*os.File)
	return &Progress{w: w, on: ok && isatty.IsTerminal(f.Fd()), from: from, to: to, now: time.Now, unit: unit}
}

// At records that the envelope at seq was read.
func (p *Progress) At(seq uint64) {
	p.n++
	if !p.on || p.to < p.from {
		return
	}
	now := p.now()
	done := min(seq-p.from+1, p.to-p.from+1)
	if p.first.IsZero() {
		p.first, p.lastAt, p.lastDone = now, now, done
	}
	if now.Sub(p.shown) < progressEvery {
		return
	}
	p.shown = now
	if dt := now.Sub(p.lastAt).Seconds(); dt > 0 {
		sample := float64(done-p.lastDone) / dt
		if p.rate == 0 {
			p.rate = sample
		} else {
			p.rate = rateWeight*sample + (1-rateWeight)*p.rate
		}
		p.lastDone, p.lastAt = done, now
	}
	total := p.to - p.from + 1
	share := float64(done) / float64(total)
	elapsed := now.Sub(p.first)
	eta := "…"
	if p.rate > 0 && (elapsed >= etaAfter || share >= etaAfterShare) {
		eta = (time.Duration(float64(total-done) / p.rate * float64(time.Second))).Round(time.Second).String()
	}
	var rate float64
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(p.n) / s
	}
	fmt.Fprintf(p.w, "\r  %d/%d  %3.0f%%  %.0f %s/s  ETA %s   ", done, total, 100*share, rate, p.unit, eta)
}

// Done clears the progress line.
func (p *Progress) Done() {
	if p.on {
		fmt.Fprintf(p.w, "\r%80s\r", "")
	}
}
