package replay

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/turnguard/turnguard/internal/guardian"
	"github.com/turnguard/turnguard/internal/rules"
)

// Engine runs recorded envelopes through the pure core the way the
// processor did: same decision function, states kept as the bucket keeps
// them, stream sequence and stream time from the record. Its Guardian
// should be configured as the processor's, with Unsigned set: replay
// publishes no response, so signing one is wasted work.
type Engine struct {
	Guardian *guardian.Guardian
	Rules    *rules.Set
	Memory   *guardian.Memory
}

// NewEngine returns an engine with empty state.
func NewEngine(g *guardian.Guardian, rs *rules.Set) *Engine {
	return &Engine{Guardian: g, Rules: rs, Memory: guardian.NewMemory()}
}

// Decide decides one recorded envelope.
func (e *Engine) Decide(env Envelope) guardian.Outcome {
	if env.RouteErr != nil {
		return e.Guardian.Unroutable(env.RouteErr)
	}
	return e.Memory.Decide(e.Guardian, e.Rules, env.Route, guardian.Message{Subject: env.Subject, Data: env.Data, Seq: env.Seq, Time: env.Time})
}

// Progress shows how far a long run is, on a terminal only: envelopes read
// of the range, rate and time left.
type Progress struct {
	w        io.Writer
	on       bool
	from, to uint64
	n        uint64
	start    time.Time
	shown    time.Time
	// unit names what is counted in the rate.
	unit string
}

// NewProgress returns a progress line for the stream range [from, to],
// written to w when w is a terminal.
func NewProgress(w io.Writer, from, to uint64) *Progress {
	return newProgress(w, from, to, "envelopes")
}

// newProgress is NewProgress over a range of another stream, whose rate
// is counted in unit.
func newProgress(w io.Writer, from, to uint64, unit string) *Progress {
	f, ok := w.(*os.File)
	return &Progress{w: w, on: ok && isatty.IsTerminal(f.Fd()), from: from, to: to, start: time.Now(), unit: unit}
}

// At records that the envelope at seq was read.
func (p *Progress) At(seq uint64) {
	p.n++
	if !p.on || time.Since(p.shown) < 200*time.Millisecond || p.to < p.from {
		return
	}
	p.shown = time.Now()
	done := seq - p.from + 1
	total := p.to - p.from + 1
	rate := float64(p.n) / time.Since(p.start).Seconds()
	eta := time.Duration(float64(total-min(done, total)) / max(rate, 1) * float64(time.Second))
	fmt.Fprintf(p.w, "\r  %d/%d  %3.0f%%  %.0f %s/s  ETA %s   ", done, total, 100*float64(done)/float64(total), rate, p.unit, eta.Round(time.Second))
}

// Done clears the progress line.
func (p *Progress) Done() {
	if p.on {
		fmt.Fprintf(p.w, "\r%80s\r", "")
	}
}
