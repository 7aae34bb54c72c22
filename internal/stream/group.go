package stream

import (
	"context"
	"errors"
	"sync"
	"time"
)

// errGroupStopped answers a worker that offers a batch to a group whose
// loops have stopped: it applies the batch alone.
var errGroupStopped = errors.New("group commit stopped")

// maxGroupLinger bounds Config.GroupLinger: a decision an agent waits on is
// never held back longer than this for company.
const maxGroupLinger = time.Millisecond

// group applies the batches of several partition workers as one: one pass
// of decisions, one receipt signature, one round of state writes and one
// of publications, all in flight together. Partitions are the unit of
// ownership; they are not the unit of batching: in a live stream of a few
// thousand envelopes a second over 16 partitions, each partition's batch
// is an envelope or two, and would otherwise pay its own signature, its
// own writes' round trip and its own wake-ups.
//
// Each worker offers one batch at a time and waits for the group's
// answer, so a partition's messages are still applied in stream order and
// stay in hand until they are: the group only changes who they are
// applied together with. Sessions belong to one partition, so a group's
// workers never share one; what they can share (an agent's state) is
// fenced by its revision as before. A group attempt that fails is not
// retried as a group: each worker then applies its own batch alone, with
// the usual retries, splitting and isolation (process), so that one
// partition's trouble does not hold the others.
type group struct {
	// offers takes one worker's batch; unbuffered, so that a batch is
	// either taken by a loop, which always answers it, or not at all.
	offers chan *offer
	// stopped is closed once the loops have returned.
	stopped chan struct{}
	// max is the most envelopes a loop takes into one group (a first
	// batch is taken whole even when larger).
	max int
	// linger is how long a loop waits for more batches once it has
	// taken what was ready (0: not at all).
	linger time.Duration
}

// offer is one worker's batch offered to the group, and where its
// outcome goes.
type offer struct {
	w      *worker
	ins    []inbound
	result chan error
}

// newGroup returns a group taking up to limit envelopes at a time,
// waiting up to linger (at most maxGroupLinger) for company.
func newGroup(limit int, linger time.Duration) *group {
	return &group{offers: make(chan *offer), stopped: make(chan struct{}), max: limit, linger: min(max(linger, 0), maxGroupLinger)}
}

// run runs loops group loops until ctx ends. With two, one decides the
// next group while the other's writes are in flight.
func (g *group) run(ctx context.Context, loops int) {
	defer close(g.stopped)
	var wg sync.WaitGroup
	for range loops {
		wg.Go(func() { g.loop(ctx) })
	}
	wg.Wait()
}

// loop takes a group of ready batches, applies it, and answers every
// batch in it, until ctx ends.
func (g *group) loop(ctx context.Context) {
	var linger *time.Timer
	for {
		var first *offer
		select {
		case <-ctx.Done():
			return
		case first = <-g.offers:
		}
		offers := []*offer{first}
		n := len(first.ins)
	ready:
		for n < g.max {
			select {
			case o := <-g.offers:
				offers, n = append(offers, o), n+len(o.ins)
			default:
				break ready
			}
		}
		if g.linger > 0 && n < g.max {
			if linger == nil {
				linger = time.NewTimer(g.linger)
			} else {
				linger.Reset(g.linger)
			}
		wait:
			for n < g.max {
				select {
				case o := <-g.offers:
					offers, n = append(offers, o), n+len(o.ins)
				case <-linger.C:
					break wait
				}
			}
			linger.Stop()
		}
		ins := make([]inbound, 0, n)
		for _, o := range offers {
			ins = append(ins, o.ins...)
		}
		// Applied whatever ctx says: a batch taken is always answered.
		err := first.w.apply(ctx, ins)
		if err == nil {
			first.w.stats.Groups.Add(1)
			first.w.stats.GroupedBatches.Add(uint64(len(offers)))
			first.w.stats.GroupedEnvelopes.Add(uint64(n))
		}
		for _, o := range offers {
			o.result <- err
		}
	}
}

// apply has the group apply ins, w's batch, together with whatever other
// workers offer meanwhile. An error means the group attempt did not make
// the batch durable (or not known to): w applies it alone then.
func (g *group) apply(ctx context.Context, w *worker, ins []inbound) error {
	o := &offer{w: w, ins: ins, result: make(chan error, 1)}
	select {
	case g.offers <- o:
	case <-g.stopped:
		return errGroupStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-o.result
}

// groupablePrefix is how many of ins, from the first, can be applied in a
// group: those before the first subagentStop. A subagentStop may wait for
// its child's partition to apply the child's envelopes (freshChild): inside
// a group that wait would hold every partition of the group, the child's
// included.
func groupablePrefix(ins []inbound) int {
	for i := range ins {
		if ins[i].routeErr == nil && ins[i].route.Hook == "subagentStop" {
			return i
		}
	}
	return len(ins)
}
