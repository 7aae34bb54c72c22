package stream

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/acs"
)

// publishOutboxes publishes outboxes so that each one's closing decision is
// stored only after the rest of it: first everything but the closing
// decisions, all in flight together, then — once all of that is stored —
// the closing decisions. Publications in flight are not stored in order
// when some fail: a stream leader that fails over loses what it had not
// committed while the next leader stores what comes after it, and a
// reconnecting connection sends what it had buffered after what it lost.
// A stored closing decision must mean the whole outbox was (flushOutbox).
func (w *worker) publishOutboxes(ctx context.Context, outboxes ...[]*nats.Msg) error {
	var body, closing []*nats.Msg
	for _, out := range outboxes {
		if n := len(out); n > 0 && strings.HasPrefix(out[n-1].Subject, acs.DecisionsPrefix+".") {
			body = append(body, out[:n-1]...)
			closing = append(closing, out[n-1])
			continue
		}
		body = append(body, out...)
	}
	if err := w.publishOutputs(ctx, body); err != nil {
		return err
	}
	return w.publishOutputs(ctx, closing)
}

// published is the outcome of one publication of a batch.
type published struct {
	seq uint64
	err error
}

// publish sends msgs asynchronously and waits for every acknowledgement. A
// refusal by the stream (a wrong expected sequence, say) is reported per
// message, for the caller to judge; anything else — a timeout, a lost
// connection, ctx ending — fails the whole call, since then nothing is
// known about the rest.
func (w *worker) publish(ctx context.Context, msgs []*nats.Msg) ([]published, error) {
	futures := make([]jetstream.PubAckFuture, len(msgs))
	out := make([]published, len(msgs))
	for i, m := range msgs {
		f, err := w.js.PublishMsgAsync(m)
		if err != nil {
			err = fmt.Errorf("publish to %s: %w", m.Subject, err)
			if !permanent(err) {
				return nil, err
			}
			// Too large to send: refused like a stream refuses.
			out[i].err = err
			continue
		}
		futures[i] = f
	}
	for i, f := range futures {
		if f == nil {
			continue
		}
		select {
		case ack := <-f.Ok():
			out[i].seq = ack.Sequence
		case err := <-f.Err():
			var apiErr *jetstream.APIError
			if !errors.As(err, &apiErr) {
				return nil, fmt.Errorf("publish to %s: %w", f.Msg().Subject, err)
			}
			out[i].err = err
		case <-ctx.Done():
			return nil, fmt.Errorf("publish to %s: %w", f.Msg().Subject, ctx.Err())
		}
	}
	return out, nil
}

// publishOutputs publishes a state write's decisions, alerts and dead
// letters; one the server refuses for good is dropped and alerted
// (dropUnpublishable) instead of blocking the partition.
func (w *worker) publishOutputs(ctx context.Context, msgs []*nats.Msg) error {
	err := w.publishAll(ctx, msgs)
	if err == nil || !permanent(err) {
		return err
	}
	return w.dropUnpublishable(ctx, msgs)
}

// publishAll publishes msgs and fails if any was not stored.
func (w *worker) publishAll(ctx context.Context, msgs []*nats.Msg) error {
	sent, err := w.publish(ctx, msgs)
	if err != nil {
		return err
	}
	for i, r := range sent {
		if r.err != nil {
			return fmt.Errorf("publish to %s: %w", msgs[i].Subject, r.err)
		}
	}
	return nil
}
