package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/acs"
)

// hookRef is what a sweep needs of a stored envelope: whose it is.
type hookRef struct {
	found           bool
	tenant, session string
	// other is the stored subject when it is not a routable envelope's.
	other string
}

func (h hookRef) String() string {
	if h.other != "" {
		return fmt.Sprintf("no session (stored on %s)", headerText(h.other))
	}
	return "tenant " + h.tenant + " session " + h.session
}

// hookIndex looks up the subjects of stored envelopes by sequence. The
// decisions and alerts of a stream answer its envelopes in about their
// order, so it reads ACS_HOOKS forward alongside them — headers only,
// through an ordered consumer — and remembers the last windowSize
// envelopes read; what lies outside that window (a forged sequence, the
// stragglers of another pass) is fetched with one message get each and
// kept in a small cache. Memory stays flat however long the stream.
type hookIndex struct {
	src *Source
	// last is ACS_HOOKS' last sequence when the index was first used:
	// every decision and alert the sweep reads was stored before it, so
	// the envelope it answers is at or before last.
	last uint64
	win  hookWindow

	cache map[uint64]hookRef
	// ring is the cache's keys in insertion order, for eviction.
	ring []uint64
	next int
}

// The window's sizes; variables so that tests can make them tiny and
// drive every path with a few messages.
var (
	// windowSize bounds the envelopes the window remembers (between
	// windowSize and twice that).
	windowSize = 1 << 16
	// maxAdvance is how far ahead of the window a lookup reads forward
	// rather than getting the message: reading headers costs a fraction
	// of a get.
	maxAdvance uint64 = 1 << 14
	// restartMin is how many envelopes of a batch outside the window
	// make it start again from them rather than get them one by one.
	restartMin = 64
)

// hookWindow is ACS_HOOKS read forward: every envelope in [lo, hi] it
// read is in refs, and a sequence in that range without an entry is no
// stored envelope.
type hookWindow struct {
	it      jetstream.MessagesContext
	started bool
	lo, hi  uint64
	refs    map[uint64]hookRef
	order   []uint64
}

func newHookIndex(src *Source) *hookIndex {
	return &hookIndex{src: src, cache: make(map[uint64]hookRef, hookCacheSize), ring: make([]uint64, 0, hookCacheSize)}
}

// close stops the window's consumer.
func (x *hookIndex) close() {
	if x.win.it != nil {
		x.win.it.Stop()
		x.win.it = nil
	}
}

// lookup returns the envelopes at seqs. It is not safe for concurrent
// use; the message gets it makes run on workers goroutines.
func (x *hookIndex) lookup(ctx context.Context, seqs []uint64, workers int) (map[uint64]hookRef, error) {
	if x.last == 0 {
		info, err := x.src.hooks.Info(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", acs.HooksStream, err)
		}
		x.last = info.State.LastSeq
	}
	out := make(map[uint64]hookRef, len(seqs))
	var missing []uint64
	for _, seq := range seqs {
		if _, ok := out[seq]; ok {
			continue
		}
		out[seq] = hookRef{}
		missing = append(missing, seq)
	}
	missing, err := x.fromWindow(ctx, missing, out)
	if err != nil {
		return nil, err
	}
	var get []uint64
	for _, seq := range missing {
		if h, ok := x.cache[seq]; ok {
			out[seq] = h
		} else {
			get = append(get, seq)
		}
	}
	got := make([]hookRef, len(get))
	errs := make([]error, len(get))
	parallel(workers, len(get), func(i int) {
		got[i], errs[i] = x.get(ctx, get[i])
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for i, seq := range get {
		out[seq] = got[i]
		x.remember(seq, got[i])
	}
	return out, nil
}

// fromWindow answers what it can of seqs from the window, moving it when
// that pays, and returns the rest.
func (x *hookIndex) fromWindow(ctx context.Context, seqs []uint64, out map[uint64]hookRef) ([]uint64, error) {
	// Beyond last nothing the sweep reads can be answered: leave those to
	// a get, which says what is there now.
	var cand []uint64
	for _, seq := range seqs {
		if seq <= x.last {
			cand = append(cand, seq)
		}
	}
	slices.Sort(cand)
	w := &x.win
	if len(cand) > 0 {
		outside := 0
		for _, seq := range cand {
			if !w.started || seq < w.lo || seq > w.hi+maxAdvance {
				outside++
			}
		}
		if !w.started || outside >= restartMin {
			first := cand[0]
			if w.started {
				for _, seq := range cand {
					if seq < w.lo || seq > w.hi+maxAdvance {
						first = seq
						break
					}
				}
			}
			if err := x.restart(ctx, first); err != nil {
				return nil, err
			}
		}
		target := uint64(0)
		for _, seq := range cand {
			if seq > w.hi && seq <= w.hi+maxAdvance {
				target = seq
			}
		}
		if target > 0 {
			if err := x.advance(ctx, target); err != nil {
				return nil, err
			}
		}
	}
	rest := seqs[:0]
	for _, seq := range seqs {
		if w.started && seq >= w.lo && seq <= w.hi {
			out[seq] = w.refs[seq] // absent: no envelope there
			continue
		}
		rest = append(rest, seq)
	}
	return rest, nil
}

// restart starts reading ACS_HOOKS at seq, forgetting the window.
func (x *hookIndex) restart(ctx context.Context, seq uint64) error {
	x.close()
	x.win = hookWindow{started: true, lo: seq, hi: seq - 1, refs: make(map[uint64]hookRef)}
	c, err := x.src.js.OrderedConsumer(ctx, acs.HooksStream, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: seq, HeadersOnly: true})
	if err != nil {
		return fmt.Errorf("%s: %w", acs.HooksStream, err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", acs.HooksStream, err)
	}
	if info.NumPending == 0 {
		// Nothing stored from seq on: the window covers all of it.
		x.win.hi = x.last
		return nil
	}
	if x.win.it, err = c.Messages(jetstream.PullMaxMessages(1000)); err != nil {
		return fmt.Errorf("%s: %w", acs.HooksStream, err)
	}
	return nil
}

// advance reads the window forward to at least target.
func (x *hookIndex) advance(ctx context.Context, target uint64) error {
	w := &x.win
	for w.hi < target {
		if w.it == nil {
			w.hi = max(w.hi, x.last)
			return nil
		}
		m, err := w.it.Next(jetstream.NextMaxWait(10 * time.Second))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			// Never guess: a slow server must not make envelopes look
			// missing.
			return fmt.Errorf("read %s: %w", acs.HooksStream, err)
		}
		md, err := m.Metadata()
		if err != nil {
			return err
		}
		seq := md.Sequence.Stream
		w.refs[seq] = parseHook(m.Subject())
		w.order = append(w.order, seq)
		w.hi = seq
		if md.NumPending == 0 {
			// Nothing stored after it (now): the rest up to last was
			// deleted, or never was.
			w.hi = max(w.hi, x.last)
			w.it.Stop()
			w.it = nil
		}
		if len(w.order) >= 2*windowSize {
			// Forget the older half at once: dropping one at a time would
			// move the whole slice for every envelope read.
			drop := w.order[:windowSize]
			for _, s := range drop {
				delete(w.refs, s)
			}
			w.lo = drop[len(drop)-1] + 1
			w.order = slices.Delete(w.order, 0, windowSize)
		}
	}
	return nil
}

func (x *hookIndex) get(ctx context.Context, seq uint64) (hookRef, error) {
	m, err := x.src.hooks.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return hookRef{}, nil
	}
	if err != nil {
		return hookRef{}, fmt.Errorf("%s seq %d: %w", acs.HooksStream, seq, err)
	}
	return parseHook(m.Subject), nil
}

// parseHook is what a stored envelope's subject says of it.
func parseHook(subject string) hookRef {
	r, err := acs.ParsePartitioned(subject)
	if err != nil {
		return hookRef{found: true, other: subject}
	}
	return hookRef{found: true, tenant: r.Tenant, session: r.SessionID}
}

func (x *hookIndex) remember(seq uint64, h hookRef) {
	if len(x.ring) < hookCacheSize {
		x.ring = append(x.ring, seq)
	} else {
		delete(x.cache, x.ring[x.next])
		x.ring[x.next] = seq
		x.next = (x.next + 1) % hookCacheSize
	}
	x.cache[seq] = h
}
