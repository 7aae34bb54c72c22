package stream

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// DefaultStuckAfter is how long a partition worker may keep failing —
// retrying a batch it cannot make durable, restarting, or finding its
// consumer gone — before the processor stops calling itself ready.
const DefaultStuckAfter = 10 * time.Second

// health is a worker's failure streak, for readiness: zero while it
// consumes and makes batches durable.
type health struct {
	// since is when the current failure streak began (Unix nanoseconds; 0:
	// healthy); why is its latest error.
	since atomic.Int64
	why   atomic.Pointer[string]
}

// failing notes a failure: the streak starts at the first one.
func (h *health) failing(err error) {
	why := err.Error()
	h.why.Store(&why)
	h.since.CompareAndSwap(0, time.Now().UnixNano())
}

// healthy ends a failure streak.
func (h *health) healthy() { h.since.Store(0) }

// stuck reports a failure streak older than after, and why.
func (h *health) stuck(after time.Duration) (time.Duration, string, bool) {
	since := h.since.Load()
	if since == 0 {
		return 0, "", false
	}
	d := time.Since(time.Unix(0, since))
	why := ""
	if w := h.why.Load(); w != nil {
		why = *w
	}
	return d, why, d >= after
}

// persistentConsumeError reports a consume error that will not go away by
// itself: the partition's consumer (or its stream) is gone. Transient ones
// (a missed heartbeat while reconnecting) are only logged.
func persistentConsumeError(err error) bool {
	return errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) ||
		errors.Is(err, jetstream.ErrStreamNotFound)
}

// Ready reports whether the processor is deciding: it is consuming, and no
// partition it owns has been failing for longer than Config.StuckAfter (a
// batch that cannot be made durable, a consumer or stream deleted
// underneath). The error names every stuck partition and why, for /readyz.
func (p *Processor) Ready() error {
	return p.Status().Err()
}

// Err is the readiness verdict of a status: nil when the processor is
// consuming and no consumer it owns is stuck, else what is wrong.
func (s Status) Err() error {
	if !s.Running {
		if s.Assets != "" {
			return errors.New("the processor is not consuming: " + s.Assets)
		}
		return errors.New("the processor is not consuming")
	}
	var stuck []string
	for _, c := range s.Stuck() {
		stuck = append(stuck, fmt.Sprintf("%s failing for %s: %s", c.Consumer, c.Failing.Round(time.Second), c.Why))
	}
	var problems []string
	if len(stuck) > 0 {
		slices.Sort(stuck)
		problems = append(problems, fmt.Sprintf("%d partition(s) stuck: %s", len(stuck), strings.Join(stuck, "; ")))
	}
	for _, p := range []string{s.Members, s.Assets} {
		if p != "" {
			problems = append(problems, p)
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return errors.New(strings.Join(problems, "; and "))
}
