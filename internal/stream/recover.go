package stream

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/nats-io/nats.go/jetstream"
)

// handle processes one batch of deliveries, first reading back from the
// stream anything a gap in the delivery numbering says was lost.
func (w *worker) handle(ctx context.Context, batch []jetstream.Msg) error {
	ins := make([]inbound, 0, len(batch))
	// high is the sequence up to which the partition is applied once the
	// batch in hand is.
	high := w.applied
	for _, m := range batch {
		md, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("delivery without JetStream metadata on %s: %w", m.Subject(), err)
		}
		fresh := md.NumDelivered == 1
		gap := w.lastConsumerSeq != 0 && md.Sequence.Consumer != w.lastConsumerSeq+1
		if gap {
			// Someone else held the partition meanwhile (or the
			// deliveries were lost). What it still holds unacknowledged
			// lies below the next fresh delivery, not only below this
			// one, which may be a message handed back: the next fresh
			// delivery recovers below itself again, as a first one does.
			w.sawFresh = false
		}
		var why string
		switch {
		case gap:
			why = "delivery gap"
		case fresh && !w.sawFresh:
			// The first new message given to this worker: anything below
			// it may have been delivered to an earlier holder.
			why = "first delivery"
		case !fresh && md.Sequence.Stream > high:
			// A redelivery overtaking: what was pending below it comes
			// first, or a later envelope would make it look applied.
			next, err := w.firstFrom(ctx, high+1)
			if err != nil {
				return err
			}
			if next < md.Sequence.Stream {
				why = "redelivery"
			}
		}
		w.sawFresh = w.sawFresh || fresh
		if why != "" {
			if why == "delivery gap" {
				w.log.Warn().Uint64("expected", w.lastConsumerSeq+1).Uint64("got", md.Sequence.Consumer).Msg("delivery gap; reading the missing messages from the stream")
			}
			if err := w.process(ctx, ins); err != nil {
				return err
			}
			ins = ins[:0]
			if err := w.recoverBelow(ctx, md.Sequence.Stream); err != nil {
				return fmt.Errorf("recover before seq %d (%s): %w", md.Sequence.Stream, why, err)
			}
			high = w.applied
		}
		w.lastConsumerSeq = md.Sequence.Consumer
		ins = append(ins, w.inbound(m.Subject(), m.Data(), m.Headers(), md.Sequence.Stream, md.Timestamp, m))
		high = max(high, md.Sequence.Stream)
	}
	return w.processLive(ctx, ins)
}

// recoverBelow recovers up to the message before seq. (recover's upper 0
// means "the last delivered", which below seq 1 would wrongly be.)
func (w *worker) recoverBelow(ctx context.Context, seq uint64) error {
	if seq <= 1 {
		return nil
	}
	return w.recover(ctx, seq-1)
}

// recover processes, in stream order, every message of this worker's filter
// from the consumer's ack floor up to upper (0: the last delivered one).
// These are the messages whose effects may or may not have happened: those
// already applied are skipped, the rest are decided now, before anything
// newer. Their deliveries are acknowledged when the server redelivers them.
func (w *worker) recover(ctx context.Context, upper uint64) error {
	info, err := w.cons.Info(ctx)
	if err != nil {
		return err
	}
	if upper == 0 {
		upper = info.Delivered.Stream
	}
	from := max(info.AckFloor.Stream, w.applied) + 1
	if from > upper {
		w.applied = max(w.applied, upper)
		return nil
	}
	// Routine after every restart (a clean stop hands its held deliveries
	// back): Stats.Recovered counts them for the operator.
	w.log.Debug().Uint64("from_seq", from).Uint64("to_seq", upper).Msg("recovering unacknowledged messages from the stream")
	var ins []inbound
	for seq := from; seq <= upper; {
		raw, err := w.hooks.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(w.filter))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return fmt.Errorf("read %s from seq %d: %w", w.filter, seq, err)
		}
		if raw.Sequence > upper {
			break
		}
		ins = append(ins, w.inbound(raw.Subject, raw.Data, raw.Header, raw.Sequence, raw.Time, nil))
		w.stats.Recovered.Add(1)
		if len(ins) == w.batchSize {
			if err := w.process(ctx, ins); err != nil {
				return err
			}
			ins = nil
		}
		seq = raw.Sequence + 1
	}
	if err := w.process(ctx, ins); err != nil {
		return err
	}
	w.applied = max(w.applied, upper)
	return nil
}

// firstFrom is the stream sequence of the partition's first message at or
// after seq (MaxUint64: none).
func (w *worker) firstFrom(ctx context.Context, seq uint64) (uint64, error) {
	raw, err := w.hooks.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(w.filter))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return math.MaxUint64, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read %s from seq %d: %w", w.filter, seq, err)
	}
	return raw.Sequence, nil
}
