package stream

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/internal/opsalert"
)

// Reasons of the refusals the processor makes for envelopes it cannot
// apply (Acs-Error-Reason; data.reason of the -32603 answer).
const (
	// ReasonStateTooLarge: the session's next stored value would exceed
	// Config.MaxValueBytes; the session keeps its previous state.
	ReasonStateTooLarge = "state_too_large"
	// ReasonUnappliable: applying the envelope failed in a way retrying
	// cannot cure (a publication the server refuses for its size, a fault
	// in deciding).
	ReasonUnappliable = "envelope_unappliable"
)

// AlertIsolated is the operational alert raised for an envelope or a
// publication the processor set aside so that its partition moves on.
const AlertIsolated = "envelope_isolated"

// errStateTooLarge marks a session whose next stored value (state and
// outbox) would not fit.
var errStateTooLarge = errors.New("the session's stored value would exceed its limit")

// errDecideFault marks a panic while deciding: a fault of the processor,
// which must not take the process, nor the partition, down with it.
var errDecideFault = errors.New("deciding the envelope failed")

// permanent reports an apply error that retrying cannot cure. A batch that
// fails this way is split until the envelope at fault stands alone, and
// that one is isolated. Everything else — timeouts, a lost connection, a
// deleted stream — is retried, and readiness says so while it lasts.
func permanent(err error) bool {
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, errStateTooLarge), errors.Is(err, errDecideFault), errors.Is(err, guardian.ErrSeal), errors.Is(err, nats.ErrMaxPayload):
		return true
	case errors.As(err, &apiErr):
		return apiErr.ErrorCode == jetstream.JSErrCodeStreamMessageExceedsMaximum
	}
	return false
}

// maxValue is the most bytes one session's stored value may take:
// Config.MaxValueBytes, never more than the server's max_payload.
func (w *worker) maxValue() int {
	limit := w.maxValueBytes
	if mp := int(w.js.Conn().MaxPayload()); mp > 0 && (limit <= 0 || limit > mp-4096) {
		// Room for the headers of the write.
		limit = mp - 4096
	}
	return limit
}

// decide is Guardian.Decide with a fault in it turned into an error.
func (w *worker) decide(rs *policy.Set, s *turnstate.Session, a *turnstate.Agent, in *inbound, msg guardian.Message) (out guardian.Outcome, err error) {
	defer func() {
		if v := recover(); v != nil {
			w.log.Error().Uint64("seq", in.msg.Seq).Str("panic", fmt.Sprint(v)).Str("stack", string(debug.Stack())).Msg("deciding an envelope panicked")
			err = fmt.Errorf("seq %d: %w: %v", in.msg.Seq, errDecideFault, v)
		}
	}()
	return w.guardian.Decide(rs, s, a, in.route, msg), nil
}

// isolate sets aside an envelope the processor cannot apply, so that the
// partition moves on in order: the envelope is answered with -32603 (a
// client fails closed on it whatever its posture), dead-lettered with its
// original bytes, and alerted; its session's state stays as it was. A
// redelivery is isolated again under the same message ids, which the
// streams' duplicate windows absorb.
func (w *worker) isolate(ctx context.Context, in *inbound, cause error) error {
	reason := ReasonUnappliable
	if errors.Is(cause, errStateTooLarge) {
		reason = ReasonStateTooLarge
	}
	ref := &acs.Error{Code: acs.CodeInternalError, Reason: reason, Message: cause.Error()}
	var msgs []*nats.Msg
	// What the failed attempts noted never became durable.
	w.forget()
	if in.routeErr != nil {
		out := w.guardian.Unroutable(in.routeErr)
		msgs = append(msgs, w.deadLetter(in, out))
		w.noteDecision(in, &out)
	} else {
		out := w.guardian.Refuse(in.route, in.msg, ref)
		msgs = append(msgs, w.deadLetter(in, out))
		// A refusal that cannot be signed either (the signing key is what
		// failed) is not published: the envelope is still dead-lettered
		// and alerted, and its client, unanswered, fails on its posture —
		// an unsigned answer is one it must not trust anyway.
		if sealed, err := w.seal(nil, in, &out); err != nil {
			w.log.Error().Err(err).Uint64("seq", in.msg.Seq).Msg("the refusal of an isolated envelope cannot be signed: not published")
		} else {
			m := w.decisionMsg(in, out, sealed)
			// The refusal is stored with no state write, so it answers a
			// sequence past what the session's state accounts for; it
			// says what that is, or a later load would take the state for
			// a rolled-back one (rolledBack).
			if accounted, ok := w.accountedNow(ctx, in.key); ok {
				m.Header.Set(acs.HdrStateAccounted, strconv.FormatUint(accounted, 10))
			}
			msgs = append(msgs, m)
		}
		w.noteDecision(in, &out)
	}
	if err := w.publishAll(ctx, msgs); err != nil {
		return fmt.Errorf("isolate seq %d: %w", in.msg.Seq, err)
	}
	w.stats.Isolated.Add(1)
	w.report(1)
	subject := acs.InboundOf(in.msg.Subject)
	w.log.Error().Err(cause).Uint64("seq", in.msg.Seq).Str("subject", subject).Str("reason", reason).
		Msg("envelope isolated: refused and dead-lettered so that its partition moves on")
	a := opsalert.Alert{ID: AlertIsolated, Severity: "high", Title: "Envelope the processor cannot apply",
		Message: fmt.Sprintf("%s sequence %d (%s) could not be applied and was refused (%s): %v", acs.HooksStream, in.msg.Seq, subject, reason, cause),
		MsgID:   AlertIsolated + ":" + strconv.FormatUint(in.msg.Seq, 10),
		Details: map[string]any{"stream_seq": in.msg.Seq, "subject": subject, "reason": reason, "error": cause.Error()}}
	if err := opsalert.Publish(ctx, w.js, w.guardian.Receipts(), a); err != nil {
		return fmt.Errorf("isolate seq %d: %w", in.msg.Seq, err)
	}
	return nil
}

// accountedNow is the stream sequence the session's committed state
// accounts for (accountedFor), from the cache or the bucket; false when it
// cannot be told (a value that does not verify, a read that fails). A
// session with no state accounts for nothing.
func (w *worker) accountedNow(ctx context.Context, key string) (uint64, bool) {
	if c, ok := w.cache.get(key); ok {
		if c.state == nil {
			return 0, true
		}
		return accountedFor(c.state, c.outbox), true
	}
	s, out, _, err := w.store.Load(ctx, key)
	switch {
	case err != nil:
		return 0, false
	case s == nil:
		return 0, true
	}
	return accountedFor(s, out), true
}

// dropUnpublishable publishes msgs one at a time after a publication of
// them failed for good: each the server refuses for its size is left out,
// logged and alerted, so that an outbox holding one cannot block its
// partition. Anything else still fails the call.
func (w *worker) dropUnpublishable(ctx context.Context, msgs []*nats.Msg) error {
	for _, m := range msgs {
		err := w.publishAll(ctx, []*nats.Msg{m})
		if err == nil {
			continue
		}
		if !permanent(err) {
			return err
		}
		w.stats.Isolated.Add(1)
		id := m.Header.Get(acs.HdrMsgID)
		w.log.Error().Err(err).Str("subject", m.Subject).Str("msg_id", id).Msg("publication dropped: the server refuses it for good")
		a := opsalert.Alert{ID: AlertIsolated, Severity: "high", Title: "Publication the server refuses",
			Message: fmt.Sprintf("the publication %s to %s was dropped: %v", id, m.Subject, err),
			MsgID:   AlertIsolated + ":pub:" + id,
			Details: map[string]any{"subject": m.Subject, "msg_id": id, "error": err.Error()}}
		if err := opsalert.Publish(ctx, w.js, w.guardian.Receipts(), a); err != nil {
			return err
		}
	}
	return nil
}
