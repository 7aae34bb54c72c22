package replay

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/alert"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/receipt"
)

// Check outcomes of one step in a verification.
const (
	CheckOK         = "ok"
	CheckFailed     = "FAILED"
	CheckNotChecked = "not checked"
	CheckNone       = "-"
)

// Verification is the offline integrity check of one session: its hash
// chain recomputed from the recorded envelopes, every recorded decision's
// HMAC signature and Ed25519 receipt, every other message on the
// session's decision subject, and the session's alerts.
type Verification struct {
	Tenant    string `json:"tenant"`
	SessionID string `json:"session_id"`
	// Steps and Chain are a session's; a sweep (VerifyAll) has neither.
	Steps []StepCheck  `json:"steps,omitzero"`
	Chain ChainVerdict `json:"chain,omitzero"`
	// Sweep says what a whole-stream audit covered (nil: one session).
	Sweep *SweepScope `json:"sweep,omitempty"`
	// Messages counts what was found on the decision subject and in the
	// session's alerts, and how much of it could be checked.
	Messages MessageCounts `json:"messages"`
	// Rejected lists every message on the decision subject, and every
	// alert of the session, that is not a verified answer, in stream
	// order.
	Rejected []MessageCheck `json:"rejected"`
	// Problems lists every failed check, in stream order.
	Problems []string `json:"problems"`
}

// MessageCounts count the published messages a verification looked at.
// Checked are those whose receipt was verified (ok or not); NotChecked
// those whose receipt could not be, for want of a key. Signatures count
// the HMAC signatures of a session's decisions the same way (a sweep
// checks none, and counts none).
type MessageCounts struct {
	Decisions            int `json:"decisions"`
	DecisionsChecked     int `json:"decisions_checked"`
	DecisionsNotChecked  int `json:"decisions_not_checked"`
	Alerts               int `json:"alerts"`
	AlertsChecked        int `json:"alerts_checked"`
	AlertsNotChecked     int `json:"alerts_not_checked"`
	SignaturesChecked    int `json:"signatures_checked,omitempty"`
	SignaturesNotChecked int `json:"signatures_not_checked,omitempty"`
}

// MessageCheck is a published message that is not a verified answer.
type MessageCheck struct {
	// Stream is ACS_DECISIONS or ACS_ALERTS; StreamSeq the message's
	// sequence there.
	Stream    string `json:"stream"`
	StreamSeq uint64 `json:"stream_seq"`
	Subject   string `json:"subject"`
	// ClaimedSeq is the Acs-Stream-Seq it claims (0: none).
	ClaimedSeq uint64 `json:"claimed_seq,omitempty"`
	RequestID  string `json:"request_id,omitempty"`
	Detail     string `json:"detail"`
}

// ChainVerdict says whether the chain holds and, if not, where it breaks.
type ChainVerdict struct {
	Entries int  `json:"entries"`
	Intact  bool `json:"intact"`
	// BreakSeq is the stream sequence of the first step whose recorded
	// chain_hash differs from the recomputed one; BreakDetail says why.
	BreakSeq    uint64 `json:"break_seq,omitempty"`
	BreakDetail string `json:"break_detail,omitempty"`
}

// StepCheck is the verification of one envelope and its decision.
type StepCheck struct {
	Seq       uint64 `json:"seq"`
	Hook      string `json:"hook"`
	RequestID string `json:"request_id,omitempty"`
	// Decision is the recorded decision ("none" when none was recorded).
	Decision string `json:"decision"`
	// Request is ok when the recorded decision answers the envelope stored
	// at this sequence.
	Request   string `json:"request"`
	Chain     string `json:"chain"`
	Signature string `json:"signature"`
	Receipt   string `json:"receipt"`
	Detail    string `json:"detail,omitempty"`
}

// OK reports whether nothing failed.
func (v *Verification) OK() bool { return len(v.Problems) == 0 }

// Complete reports whether every published message's receipt, and every
// signature of a session's decisions, was checked.
func (v *Verification) Complete() bool {
	return v.notChecked() == 0
}

// Results of a verification, as its result line starts and its JSON's
// "result" says. Only ResultVerified passes: a check that was not made
// proves nothing about what it skipped.
const (
	ResultVerified       = "verified"
	ResultPartlyChecked  = "partly checked"
	ResultNotChecked     = "not checked"
	ResultNothingChecked = "nothing checked"
	ResultProblems       = "problems"
)

// Result says what a verification established: ResultVerified only when
// something was checked, everything was, and nothing failed.
func (v *Verification) Result() string {
	switch checked, skipped := v.checked(), v.notChecked(); {
	case !v.OK():
		return ResultProblems
	case checked == 0 && skipped == 0:
		return ResultNothingChecked
	case checked == 0:
		return ResultNotChecked
	case skipped > 0:
		return ResultPartlyChecked
	}
	return ResultVerified
}

// Verified reports whether the result is ResultVerified.
func (v *Verification) Verified() bool { return v.Result() == ResultVerified }

// checked counts what was checked: receipts, signatures and, for a
// session, chain entries recomputed.
func (v *Verification) checked() int {
	m := v.Messages
	return m.DecisionsChecked + m.AlertsChecked + m.SignaturesChecked + v.Chain.Entries
}

func (v *Verification) notChecked() int {
	m := v.Messages
	return m.DecisionsNotChecked + m.AlertsNotChecked + m.SignaturesNotChecked
}

// published is one stored message on a decision or alert subject.
type published struct {
	streamSeq uint64
	subject   string
	header    nats.Header
	data      []byte
	// claimed is its Acs-Stream-Seq (0: none or unreadable).
	claimed uint64
	// receipt is the outcome of its receipt check (CheckOK, CheckFailed,
	// CheckNotChecked), detail why it failed.
	receipt string
	detail  string
}

// readPublished reads every message of a stream on filter stored now.
func (s *Source) readPublished(ctx context.Context, st jetstream.Stream, name, filter string) ([]published, error) {
	var out []published
	err := s.readAll(ctx, st, name, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}}, func(m jetstream.Msg) error {
		md, err := m.Metadata()
		if err != nil {
			return err
		}
		p := published{streamSeq: md.Sequence.Stream, subject: m.Subject(), header: m.Headers(), data: m.Data()}
		p.claimed, _ = parseSeq(p.header.Get(acs.HdrStreamSeq))
		out = append(out, p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return out, nil
}

// parseSeq reads an Acs-Stream-Seq: a positive decimal, nothing else.
func parseSeq(v string) (uint64, bool) {
	if v == "" || v[0] < '1' || v[0] > '9' {
		return 0, false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, false
		}
	}
	seq, err := strconv.ParseUint(v, 10, 64)
	return seq, err == nil
}

// check checks a message's receipt against binding b; roots (may be nil)
// remembers the batch signatures that verified.
func (p *published) check(roots *receipt.RootCache, pub ed25519.PublicKey, b receipt.Binding) {
	rc := p.header.Get(acs.HdrReceipt)
	switch {
	case pub == nil && rc == "":
		p.receipt, p.detail = CheckNotChecked, "no receipt (and no key to require one)"
	case pub == nil:
		p.receipt = CheckNotChecked
	case rc == "":
		p.receipt, p.detail = CheckFailed, "no receipt"
	default:
		if id := receipt.KeyID(pub); p.header.Get(acs.HdrReceiptKey) != "" && p.header.Get(acs.HdrReceiptKey) != id {
			p.receipt, p.detail = CheckFailed, fmt.Sprintf("receipt made with key %.32q, verifying with key %s", p.header.Get(acs.HdrReceiptKey), id)
			return
		}
		if err := roots.Verify(pub, b, p.data, rc); err != nil {
			p.receipt, p.detail = CheckFailed, "receipt: "+err.Error()
			return
		}
		p.receipt = CheckOK
	}
}

// Verify checks one session offline. g must decide with the intake
// settings the processor had (signature keys, required signatures, skew
// window, size limit) so that it refuses, and leaves off the chain, what
// the processor did; rules do not enter the chain, so none are used.
// keys checks HMAC signatures (nil: not checked); receiptKey checks
// receipts (nil: not checked).
//
// Every message on the session's decision subject is looked at, not only
// those that name a sequence: anyone allowed to publish there can, and a
// forged answer stays in ACS_DECISIONS. A message is a verified answer when
// it names the sequence of an envelope of the session, its receipt is bound
// to exactly that and verifies, and it is the first such answer for it.
func Verify(ctx context.Context, src *Source, g *guardian.Guardian, keys *acs.Keyring, receiptKey ed25519.PublicKey, r Range, tenant, sessionID string) (*Verification, error) {
	subject := acs.DecisionSubject(tenant, sessionID)
	msgs, err := src.readPublished(ctx, src.decisions, acs.DecisionsStream, subject)
	if err != nil {
		return nil, err
	}
	alerts, err := src.readPublished(ctx, src.alerts, acs.AlertsStream, acs.AlertsPrefix+"."+tenant+".>")
	if err != nil {
		return nil, err
	}
	v := &Verification{Tenant: tenant, SessionID: sessionID, Chain: ChainVerdict{Intact: true}}
	// The answer of each sequence is its first message whose receipt
	// verifies, or without a key its first message: a forgery published
	// before the real decision must not hide it.
	answer := map[uint64]int{}
	for i := range msgs {
		m := &msgs[i]
		if m.claimed == 0 {
			continue
		}
		m.check(src.roots, receiptKey, receipt.Decision(tenant, sessionID, m.claimed))
		if j, ok := answer[m.claimed]; !ok || msgs[j].receipt == CheckFailed && m.receipt == CheckOK {
			answer[m.claimed] = i
		}
	}
	envelopes := map[uint64]bool{}
	eng := NewEngine(g, nil)
	err = src.Each(ctx, Range{From: 1, To: r.To, ToTime: r.ToTime}, []string{acs.StoredFilter(tenant, sessionID, "*")}, func(e Envelope) error {
		envelopes[e.Seq] = true
		out := eng.Decide(e)
		c := StepCheck{Seq: e.Seq, Hook: e.Route.Hook, RequestID: out.RequestID, Request: CheckNone, Chain: CheckNone, Signature: CheckNone, Receipt: CheckNone}
		var problems []string
		fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
		i, ok := answer[e.Seq]
		if !ok {
			c.Decision = "none"
			if out.Response != nil {
				fail("no decision was recorded for it")
			}
		} else {
			m := &msgs[i]
			d := newDecision(m.header, m.data, DecodeBodies)
			if d.ParseErr != nil {
				c.Decision, c.Request, c.Chain, c.Signature = d.Kind(), CheckFailed, CheckFailed, CheckFailed
				fail("%v", d.ParseErr)
			} else {
				c.Decision = d.Kind()
				c.Request = checkRequest(out, d, fail)
				c.Chain = v.checkChain(e, out, d, fail)
				c.Signature = checkSignature(keys, sessionID, d, fail)
				switch c.Signature {
				case CheckOK, CheckFailed:
					v.Messages.SignaturesChecked++
				case CheckNotChecked:
					v.Messages.SignaturesNotChecked++
				}
			}
			c.Receipt = m.receipt
			if m.receipt == CheckFailed {
				fail("%s", m.detail)
			} else if m.receipt == CheckNotChecked && m.detail != "" {
				c.Receipt = CheckNone
			}
		}
		c.Detail = strings.Join(problems, "; ")
		for _, p := range problems {
			v.Problems = append(v.Problems, fmt.Sprintf("seq %d (%s %s): %s", e.Seq, c.Hook, c.RequestID, p))
		}
		v.Steps = append(v.Steps, c)
		return nil
	})
	if err != nil {
		return v, err
	}
	v.checkMessages(msgs, answer, envelopes, r)
	v.checkAlerts(src.roots, alerts, receiptKey, envelopes, sessionID)
	return v, nil
}

// checkMessages reports every message on the decision subject that is not
// the verified answer of an envelope of the session, and counts them all.
func (v *Verification) checkMessages(msgs []published, answer map[uint64]int, envelopes map[uint64]bool, r Range) {
	for i := range msgs {
		m := &msgs[i]
		v.Messages.Decisions++
		reject := func(format string, args ...any) {
			mc := MessageCheck{Stream: acs.DecisionsStream, StreamSeq: m.streamSeq, Subject: m.subject, ClaimedSeq: m.claimed,
				RequestID: headerText(m.header.Get(acs.HdrRequestID)), Detail: fmt.Sprintf(format, args...)}
			v.Rejected = append(v.Rejected, mc)
			v.Problems = append(v.Problems, fmt.Sprintf("%s message %d on %s (Acs-Stream-Seq %q, Acs-Request-Id %q): %s",
				mc.Stream, mc.StreamSeq, mc.Subject, headerText(m.header.Get(acs.HdrStreamSeq)), mc.RequestID, mc.Detail))
		}
		if m.claimed == 0 {
			// Nothing to bind a receipt to: it answers no envelope.
			v.Messages.DecisionsChecked++
			reject("no valid Acs-Stream-Seq: it answers no envelope, so it is not turnguard's decision")
			continue
		}
		switch m.receipt {
		case CheckOK:
			v.Messages.DecisionsChecked++
		case CheckNotChecked:
			v.Messages.DecisionsNotChecked++
		default:
			v.Messages.DecisionsChecked++
		}
		first := answer[m.claimed] == i
		switch {
		case !envelopes[m.claimed] && m.receipt == CheckOK && (r.To == 0 || m.claimed > r.To):
			// The answer to an envelope stored after the range was fixed:
			// not this verification's to judge.
		case !envelopes[m.claimed]:
			reject("sequence %d is not an envelope of this session%s", m.claimed, orReceipt(m))
		case !first:
			if bytes.Equal(m.data, msgs[answer[m.claimed]].data) {
				reject("another copy of the answer to seq %d (ACS_DECISIONS message %d)%s", m.claimed, msgs[answer[m.claimed]].streamSeq, orReceipt(m))
			} else {
				reject("another answer to seq %d than ACS_DECISIONS message %d%s", m.claimed, msgs[answer[m.claimed]].streamSeq, orReceipt(m))
			}
		}
		// A first answer's receipt failure is the step's problem, reported
		// there.
	}
}

// orReceipt adds why a message's receipt failed, when it did.
func orReceipt(m *published) string {
	if m.receipt == CheckFailed {
		return "; " + m.detail
	}
	return ""
}

// checkAlerts checks the receipts of the session's alerts: those bound to
// one of its envelopes, and those whose finding names the session.
func (v *Verification) checkAlerts(roots *receipt.RootCache, alerts []published, pub ed25519.PublicKey, envelopes map[uint64]bool, sessionID string) {
	for i := range alerts {
		a := &alerts[i]
		ours := a.claimed != 0 && envelopes[a.claimed]
		if !ours && findingSession(a.data) != sessionID {
			continue
		}
		v.Messages.Alerts++
		a.check(roots, pub, receipt.Alert(a.subject, a.claimed))
		if a.receipt == CheckNotChecked {
			v.Messages.AlertsNotChecked++
		} else {
			v.Messages.AlertsChecked++
		}
		var why string
		switch {
		case !ours:
			why = fmt.Sprintf("names this session but is bound to no envelope of it (Acs-Stream-Seq %q)", headerText(a.header.Get(acs.HdrStreamSeq)))
			if a.receipt == CheckFailed {
				why += "; " + a.detail
			}
		case a.receipt == CheckFailed:
			why = a.detail
		default:
			continue
		}
		mc := MessageCheck{Stream: acs.AlertsStream, StreamSeq: a.streamSeq, Subject: a.subject, ClaimedSeq: a.claimed,
			RequestID: headerText(a.header.Get(acs.HdrRuleID)), Detail: why}
		v.Rejected = append(v.Rejected, mc)
		v.Problems = append(v.Problems, fmt.Sprintf("%s message %d on %s (alert): %s", mc.Stream, mc.StreamSeq, mc.Subject, why))
	}
}

// VerifySystemAlerts checks the receipts of turnguard's own operational
// alerts (acs.alerts._system.>, such as a refused rule reload): each must
// carry a receipt bound to its subject and to no envelope (sequence 0).
// pub nil leaves them not checked.
func VerifySystemAlerts(ctx context.Context, src *Source, pub ed25519.PublicKey) (*Verification, error) {
	alerts, err := src.readPublished(ctx, src.alerts, acs.AlertsStream, acs.AlertsPrefix+"."+alert.SystemTenant+".>")
	if err != nil {
		return nil, err
	}
	v := &Verification{Tenant: alert.SystemTenant, Chain: ChainVerdict{Intact: true}}
	for i := range alerts {
		a := &alerts[i]
		v.Messages.Alerts++
		a.check(src.roots, pub, receipt.Alert(a.subject, 0))
		if a.receipt == CheckNotChecked {
			v.Messages.AlertsNotChecked++
		} else {
			v.Messages.AlertsChecked++
		}
		if a.receipt != CheckFailed {
			continue
		}
		mc := MessageCheck{Stream: acs.AlertsStream, StreamSeq: a.streamSeq, Subject: a.subject, ClaimedSeq: a.claimed, Detail: a.detail}
		v.Rejected = append(v.Rejected, mc)
		v.Problems = append(v.Problems, fmt.Sprintf("%s message %d on %s (operational alert): %s", mc.Stream, mc.StreamSeq, mc.Subject, mc.Detail))
	}
	return v, nil
}

// Merge adds another verification's messages and problems to v.
func (v *Verification) Merge(o *Verification) {
	v.Messages.Decisions += o.Messages.Decisions
	v.Messages.DecisionsChecked += o.Messages.DecisionsChecked
	v.Messages.DecisionsNotChecked += o.Messages.DecisionsNotChecked
	v.Messages.Alerts += o.Messages.Alerts
	v.Messages.AlertsChecked += o.Messages.AlertsChecked
	v.Messages.AlertsNotChecked += o.Messages.AlertsNotChecked
	v.Messages.SignaturesChecked += o.Messages.SignaturesChecked
	v.Messages.SignaturesNotChecked += o.Messages.SignaturesNotChecked
	v.Rejected = append(v.Rejected, o.Rejected...)
	v.Problems = append(v.Problems, o.Problems...)
}

// findingSession is the session an alert's finding names.
func findingSession(data []byte) string {
	var f struct {
		Actor struct {
			Session struct {
				UID string `json:"uid"`
			} `json:"session"`
		} `json:"actor"`
	}
	if json.Unmarshal(data, &f) != nil {
		return ""
	}
	return f.Actor.Session.UID
}

// headerText makes an untrusted header value safe to print: one line,
// bounded.
func headerText(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return '?'
		}
		return r
	}, s)
	return truncate(s, 80)
}

// checkRequest compares the request the recorded decision answers with the
// envelope stored at its sequence: a mismatch means steps were reordered,
// replaced or removed.
func checkRequest(out guardian.Outcome, d Decision, fail func(string, ...any)) string {
	want := out.RequestID
	var got string
	if d.Response.Result != nil {
		got = d.Response.Result.RequestID
	}
	sameID := out.Response != nil && bytes.Equal(compactJSON(out.Response.ID), compactJSON(d.Response.ID))
	switch {
	case got != "" && want != "" && got != want:
		fail("the recorded decision answers request %s, but the envelope stored here is request %s (steps reordered or replaced)", got, want)
		return CheckFailed
	case out.Response != nil && !sameID:
		fail("the recorded decision answers JSON-RPC id %s, the envelope stored here has id %s", d.Response.ID, out.Response.ID)
		return CheckFailed
	}
	return CheckOK
}

// checkChain compares the recorded chain_hash with the recomputed one. The
// first mismatch is the break and the only one reported as a problem:
// every hash after a break differs too.
func (v *Verification) checkChain(e Envelope, out guardian.Outcome, d Decision, fail func(string, ...any)) string {
	recorded, recomputed := chainHashOf(&d.Response), chainHashOf(out.Response)
	if recorded == "" && recomputed == "" {
		return CheckNone
	}
	v.Chain.Entries++
	if recorded == recomputed {
		return CheckOK
	}
	if v.Chain.Intact {
		v.Chain.Intact, v.Chain.BreakSeq = false, e.Seq
		v.Chain.BreakDetail = fmt.Sprintf("recorded chain_hash %s, recomputed %s: the envelope stored at seq %d is not the one decided there, or an earlier one was removed, added or moved",
			short(recorded), short(recomputed), e.Seq)
		fail("the hash chain breaks here: %s", v.Chain.BreakDetail)
	}
	return CheckFailed
}

// checkSignature verifies the HMAC signature ACS puts in the response.
func checkSignature(keys *acs.Keyring, sessionID string, d Decision, fail func(string, ...any)) string {
	sig := d.Response.Sig()
	if keys == nil {
		if sig == nil {
			return CheckNone
		}
		return CheckNotChecked
	}
	if sig == nil {
		fail("the decision is not signed")
		return CheckFailed
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(d.Data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		fail("the decision is not JSON: %v", err)
		return CheckFailed
	}
	input, err := acs.SigningInput(doc)
	if err == nil {
		err = keys.Verify(sig, sessionID, input)
	}
	if err != nil {
		fail("HMAC signature: %v", err)
		return CheckFailed
	}
	return CheckOK
}

func compactJSON(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

func short(h string) string {
	if h == "" {
		return "(none)"
	}
	return truncate(h, 20)
}
