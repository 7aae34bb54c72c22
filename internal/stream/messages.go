package stream

import (
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/receipt"
	"github.com/turnguard/turnguard/internal/msghdr"
)

// DecisionMsgID is the Nats-Msg-Id of the decision on the envelope at stream
// sequence seq: derived from the request id, and unique per inbound message
// so that a replayed request id gets its own (refusing) decision. An
// envelope that named no readable request id is answered under
// "decision:<seq>".
func DecisionMsgID(requestID string, seq uint64) string {
	if requestID == "" {
		requestID = "decision"
	}
	return requestID + ":" + strconv.FormatUint(seq, 10)
}

// seal is Guardian.Seal for the envelope in answers; a failure is
// permanent (errSeal): signing again fails the same way. Within a batch
// whose receipts are signed together (b.receipts), the outcome is only
// encoded: its messages' receipts come from receiptBatch.sign.
func (w *worker) seal(b *batch, in *inbound, out *guardian.Outcome) (guardian.Sealed, error) {
	seal := w.guardian.Seal
	if b != nil && b.receipts != nil {
		seal = w.guardian.Encode
	}
	s, err := seal(out, in.msg.Seq)
	if err != nil {
		return guardian.Sealed{}, fmt.Errorf("seq %d: %w", in.msg.Seq, err)
	}
	return s, nil
}

// receiptBatch is the messages of a batch whose receipts are signed
// together, and what their receipts sign.
type receiptBatch struct {
	signer *receipt.Signer
	key    string
	bt     receipt.Batch
	msgs   []*nats.Msg
}

// add has m's receipt signed with the batch's: of body, under bd.
func (r *receiptBatch) add(m *nats.Msg, bd receipt.Binding, body []byte) error {
	if r.bt.Len() == receipt.MaxBatchLeaves {
		if err := r.sign(); err != nil {
			return err
		}
	}
	if _, err := r.bt.Add(bd, body); err != nil {
		return fmt.Errorf("%w: receipt on %s for seq %d: %w", guardian.ErrSeal, bd.Subject, bd.Seq, err)
	}
	r.msgs = append(r.msgs, m)
	return nil
}

// sign signs the receipts added since the last sign with one signature
// and puts each in its message's headers.
func (r *receiptBatch) sign() error {
	rcs, err := r.signer.SignBatch(&r.bt)
	if err != nil {
		return fmt.Errorf("%w: the receipts of %d messages: %w", guardian.ErrSeal, len(r.msgs), err)
	}
	for i, m := range r.msgs {
		m.Header.Set(acs.HdrReceipt, rcs[i])
		m.Header.Set(acs.HdrReceiptKey, r.key)
	}
	r.bt, r.msgs = receipt.Batch{}, nil
	return nil
}

// decisionMsg is the decision out answers in with: the sealed bytes, and
// headers from the outcome's facts.
func (w *worker) decisionMsg(in *inbound, out guardian.Outcome, sealed guardian.Sealed) *nats.Msg {
	m := nats.NewMsg(acs.DecisionSubject(in.route.Tenant, in.route.SessionID))
	m.Data = sealed.Response
	if sealed.Receipt != "" {
		m.Header.Set(acs.HdrReceiptKey, w.receiptKey)
	}
	m.Header.Set(acs.HdrMsgID, DecisionMsgID(out.RequestID, in.msg.Seq))
	m.Header.Set(acs.HdrStreamSeq, strconv.FormatUint(in.msg.Seq, 10))
	m.Header.Set(acs.HdrHook, in.route.Hook)
	setIf(m.Header, acs.HdrRequestID, out.RequestID)
	setIf(m.Header, acs.HdrMethod, out.Method)
	setIf(m.Header, acs.HdrTurnID, out.TurnID)
	// The publisher's Nats-Msg-Id (its request id) correlates refusals
	// whose body named no readable request id.
	setIf(m.Header, acs.HdrOriginalMsgID, in.header.Get(acs.HdrMsgID))
	setIf(m.Header, acs.HdrReceipt, sealed.Receipt)
	if r := out.Response.Result; r != nil {
		m.Header.Set(acs.HdrDecision, string(r.Decision))
	} else {
		m.Header.Set(acs.HdrDecision, "error")
	}
	if out.Refusal != nil {
		m.Header.Set(acs.HdrErrorCode, strconv.Itoa(int(out.Refusal.Code)))
		m.Header.Set(acs.HdrErrorReason, out.Refusal.Reason)
	}
	return m
}

// alertMsg publishes an alert with its receipt, so that an alert forged
// on the bus — which anyone allowed to publish there can do — tells itself
// apart from a real one.
func (w *worker) alertMsg(a guardian.Alert, sealed guardian.SealedAlert, seq uint64) *nats.Msg {
	m := nats.NewMsg(a.Subject)
	m.Data = sealed.Body
	m.Header.Set(acs.HdrMsgID, a.MsgID)
	m.Header.Set(acs.HdrRuleID, a.RuleID)
	m.Header.Set(acs.HdrStreamSeq, strconv.FormatUint(seq, 10))
	if sealed.Receipt != "" {
		m.Header.Set(acs.HdrReceipt, sealed.Receipt)
		m.Header.Set(acs.HdrReceiptKey, w.receiptKey)
	}
	return m
}

// deadLetter keeps a refused message: the original bytes untouched, the
// reason in headers.
func (w *worker) deadLetter(in *inbound, out guardian.Outcome) *nats.Msg {
	ref := out.Refusal
	w.stats.DeadLettered.Add(1)
	w.log.Warn().Uint64("seq", in.msg.Seq).Str("subject", acs.InboundOf(in.msg.Subject)).
		Int("code", int(ref.Code)).Str("reason", ref.Reason).Str("error", ref.Message).Msg("dead-lettered")
	m := nats.NewMsg(acs.DLQSubject(acs.TenantOf(in.msg.Subject)))
	m.Data = in.msg.Data
	m.Header.Set(acs.HdrMsgID, "dlq:"+strconv.FormatUint(in.msg.Seq, 10))
	m.Header.Set(acs.HdrErrorCode, strconv.Itoa(int(ref.Code)))
	m.Header.Set(acs.HdrErrorName, ref.Code.String())
	m.Header.Set(acs.HdrErrorReason, ref.Reason)
	m.Header.Set(acs.HdrErrorMessage, msghdr.Value(ref.Error()))
	m.Header.Set(acs.HdrOriginalSubj, acs.InboundOf(in.msg.Subject))
	m.Header.Set(acs.HdrOriginalSeq, strconv.FormatUint(in.msg.Seq, 10))
	m.Header.Set(acs.HdrOriginalStream, acs.HooksStream)
	setIf(m.Header, acs.HdrOriginalMsgID, in.header.Get(acs.HdrMsgID))
	setIf(m.Header, acs.HdrRequestID, out.RequestID)
	// A server whose max_payload is not above ACS_HOOKS' message limit
	// cannot take a near-limit message plus headers. The original stays in
	// ACS_HOOKS at its sequence; the dead letter says so rather than block
	// the partition on a publish that can never succeed.
	if limit := w.js.Conn().MaxPayload(); limit > 0 && int64(len(m.Data)+msghdr.Size(m.Header)) > limit {
		m.Header.Set(acs.HdrBodyOmitted, fmt.Sprintf("%d bytes do not fit the server's max_payload %d; the original is %s sequence %d", len(m.Data), limit, acs.HooksStream, in.msg.Seq))
		m.Data = nil
	}
	return m
}

func setIf(h nats.Header, k, v string) {
	if v != "" {
		h.Set(k, msghdr.Value(v))
	}
}
