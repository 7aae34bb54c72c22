package stream

import (
	"time"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/policy"
)

// Observer is told what the partition workers made durable, for metrics
// (package metrics implements it). Set it with Config.Observer; nil
// observes nothing and costs nothing.
//
// Its methods are called from every worker's goroutine, concurrently, on
// the hot path, after the batch's states were saved and its publications
// acknowledged by their streams (a batch attempt that is retried is
// reported once, when it succeeds): they must be safe for concurrent use
// and cheap. The strings passed are not all from bounded sets (a hook is
// whatever the subject's last token says; a rule id is whatever the rule
// set in force names): an implementation bounds what it keeps.
type Observer interface {
	// Batch reports a batch of size envelopes whose effects were made
	// durable together (one attempt; a batch split because of an
	// envelope that could not be applied reports its parts).
	Batch(size int)
	// Decided reports a decision stored on an envelope: hook is its
	// subject's hook, decision the ACS disposition ("allow", "deny",
	// ...) or "error" for a refusal; latency runs from the envelope's
	// timestamp in ACS_HOOKS to its decision stored in ACS_DECISIONS.
	Decided(hook, decision string, latency time.Duration)
	// Refused reports an envelope refused and dead-lettered, with the
	// ACS error code and reason of the refusal.
	Refused(code acs.Code, reason string)
	// Alerted reports a rule's alert published, with the severity it was
	// published under (alert.SeverityID's names).
	Alerted(rule, severity string)
	// Denied reports an envelope denied because an enforcing deny rule
	// hit: once per such rule.
	Denied(rule string)
}

// noted is what a batch attempt will report to the Observer once it is
// durable.
type noted struct {
	// kind says which Observer method takes it.
	kind noteKind
	// a and b are hook and decision (decided), rule and severity
	// (alerted), the rule (denied) or the reason (refused).
	a, b string
	code acs.Code
	// at is the envelope's timestamp in ACS_HOOKS (decided).
	at time.Time
}

type noteKind uint8

const (
	noteDecided noteKind = iota
	noteRefused
	noteAlerted
	noteDenied
)

// noteDecision notes the decision of out on in, and its rules' alerts and
// denies (nothing without an observer).
func (w *worker) noteDecision(in *inbound, out *guardian.Outcome) {
	if w.obs == nil {
		return
	}
	if out.Refusal != nil {
		w.notes = append(w.notes, noted{kind: noteRefused, b: out.Refusal.Reason, code: out.Refusal.Code})
	}
	for i := range out.Alerts {
		a := &out.Alerts[i]
		w.notes = append(w.notes, noted{kind: noteAlerted, a: a.RuleID, b: a.Finding.Severity})
	}
	if out.Response == nil {
		return
	}
	decision := "error"
	if r := out.Response.Result; r != nil {
		decision = string(r.Decision)
		if r.Decision == acs.Deny {
			for i := range out.Hits {
				if rr := out.Hits[i].Rule; rr != nil && rr.Mode == policy.Enforce && rr.Decision == policy.DecideDeny {
					w.notes = append(w.notes, noted{kind: noteDenied, a: rr.ID})
				}
			}
		}
	}
	w.notes = append(w.notes, noted{kind: noteDecided, a: in.route.Hook, b: decision, at: in.msg.Time})
}

// report hands what the batch attempt noted to the observer, now that its
// effects are durable, and forgets it.
func (w *worker) report(size int) {
	if w.obs == nil {
		return
	}
	now := time.Now()
	for i := range w.notes {
		n := &w.notes[i]
		switch n.kind {
		case noteDecided:
			w.obs.Decided(n.a, n.b, now.Sub(n.at))
		case noteRefused:
			w.obs.Refused(n.code, n.b)
		case noteAlerted:
			w.obs.Alerted(n.a, n.b)
		case noteDenied:
			w.obs.Denied(n.a)
		}
	}
	w.obs.Batch(size)
	w.forget()
}

// forget drops what a batch attempt noted (it is decided again, or was
// reported).
func (w *worker) forget() {
	clear(w.notes) // no strings kept alive by the reused backing array
	w.notes = w.notes[:0]
}
