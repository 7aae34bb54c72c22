package stream

import (
	"context"
	"slices"
	"time"
)

// Status is what a Processor does right now, as readiness and the metrics
// see it. Reading it touches no worker state beyond their health records.
type Status struct {
	// Running reports that the processor is consuming (Run is between
	// its start and its return).
	Running bool
	// Partitions is the number of partitions of ACS_HOOKS.
	Partitions int
	// StuckAfter is how long a consumer may keep failing before it
	// counts as stuck.
	StuckAfter time.Duration
	// Consumers are the consumers this instance owns now: the partitions
	// assigned to it, in order, then the consumer of malformed subjects,
	// which every instance runs.
	Consumers []ConsumerStatus
	// Assets is why the streams, bucket or consumers turnguard needs could
	// not all be put back the last time a failure had them checked (an
	// asset that exists with another configuration, say); "" when they
	// could.
	Assets string
	// Members is why membership keeps the instance from being ready:
	// partitions assigned to a member whose heartbeat stopped advancing
	// (nobody decides them until it expires), or a member set unreadable
	// for a member TTL; "" when neither.
	Members string
}

// ConsumerStatus is one owned consumer's health.
type ConsumerStatus struct {
	// Consumer is the durable consumer's name on ACS_HOOKS.
	Consumer string
	// Partition is the partition it consumes; -1 for the consumer of
	// malformed subjects.
	Partition int
	// Failing is how long its current failure streak has lasted (0:
	// healthy); Why is the latest error of the streak.
	Failing time.Duration
	Why     string
	// Stuck reports a failure streak of at least StuckAfter.
	Stuck bool
}

// Owned reports the number of partitions among Consumers.
func (s Status) Owned() int {
	n := 0
	for _, c := range s.Consumers {
		if c.Partition >= 0 {
			n++
		}
	}
	return n
}

// Stuck returns the stuck consumers.
func (s Status) Stuck() []ConsumerStatus {
	var out []ConsumerStatus
	for _, c := range s.Consumers {
		if c.Stuck {
			out = append(out, c)
		}
	}
	return out
}

// Status returns a snapshot of the processor's consumers and their health.
func (p *Processor) Status() Status {
	after := p.cfg.StuckAfter
	if after <= 0 {
		after = DefaultStuckAfter
	}
	s := Status{Running: p.running.Load(), Partitions: p.cfg.Topology.Partitions, StuckAfter: after, Assets: p.repair.failure()}
	if o := p.own.Load(); o != nil {
		s.Members = o.membersProblem()
	}
	for _, o := range p.ownedInOrder() {
		c := ConsumerStatus{Consumer: o.w.consumer, Partition: o.partition}
		// The longer streak of the two (batches, consumer) tells; a
		// stuck one wins over one that is only failing.
		for _, h := range []*health{&o.w.health, &o.w.consumerHealth} {
			d, why, stuck := h.stuck(after)
			if d == 0 || (c.Stuck && !stuck) || (c.Stuck == stuck && d <= c.Failing) {
				continue
			}
			c.Failing, c.Why, c.Stuck = d, why, stuck
		}
		s.Consumers = append(s.Consumers, c)
	}
	return s
}

// ownedWorker is a worker this instance runs and its partition (-1: the
// consumer of malformed subjects).
type ownedWorker struct {
	w         *worker
	partition int
}

// ownedInOrder lists the workers this instance runs now: the partitions in
// order, then the consumer of malformed subjects.
func (p *Processor) ownedInOrder() []ownedWorker {
	// The ownership loop's worker slice is fixed when Run starts; its
	// index is the partition.
	index := map[*worker]int{}
	if o := p.own.Load(); o != nil {
		for i, w := range o.workers {
			index[w] = i
		}
	}
	var out []ownedWorker
	for _, w := range p.owned() {
		i, ok := index[w]
		if !ok {
			i = -1
		}
		out = append(out, ownedWorker{w: w, partition: i})
	}
	slices.SortFunc(out, func(a, b ownedWorker) int {
		// -1 sorts last.
		if (a.partition < 0) != (b.partition < 0) {
			if a.partition < 0 {
				return 1
			}
			return -1
		}
		return a.partition - b.partition
	})
	return out
}

// Backlog is one owned consumer's messages not yet done with, as the
// server counts them.
type Backlog struct {
	Consumer string
	// Partition is as in ConsumerStatus.
	Partition int
	// Pending counts messages not yet delivered; AckPending those
	// delivered and not yet acknowledged.
	Pending, AckPending uint64
}

// Backlogs asks the server for the backlog of every consumer this
// instance owns: one JetStream API request each, so it is for scrapes and
// operators, not for the hot path. A consumer whose info cannot be read
// before ctx ends (or at all: deleted) is left out.
func (p *Processor) Backlogs(ctx context.Context) []Backlog {
	var out []Backlog
	for _, o := range p.ownedInOrder() {
		if ctx.Err() != nil {
			break
		}
		info, err := o.w.cons.Info(ctx)
		if err != nil {
			continue
		}
		out = append(out, Backlog{Consumer: o.w.consumer, Partition: o.partition, Pending: info.NumPending, AckPending: uint64(max(info.NumAckPending, 0))})
	}
	return out
}
