package replay

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"hash/fnv"
	"io"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/alert"
	"github.com/turnguard/turnguard/internal/core/receipt"
)

// SweepOptions select what VerifyAll reads.
type SweepOptions struct {
	// Tenant limits the sweep to one tenant's decisions and alerts; ""
	// sweeps every tenant, turnguard's own _system alerts included.
	Tenant string
	// Bounds select the decisions and alerts by the time they were stored
	// (zero: unbounded). The end is also fixed at each stream's last
	// message when the sweep starts, so a sweep is finite.
	Bounds Bounds
	// Progress shows a progress line when it is a terminal.
	Progress io.Writer
	// Workers check receipts and look envelopes up in parallel (0:
	// GOMAXPROCS): an Ed25519 verification is the largest cost of a
	// message.
	Workers int
	// MaxRejected bounds the rejected messages listed (0: no bound); the
	// rest are counted in SweepScope.RejectedUnlisted. Whoever may publish
	// forgeries may publish millions, and the audit must still finish.
	MaxRejected int
}

// SweepScope says what a whole-stream audit covered.
type SweepScope struct {
	// Tenant is the tenant swept, "*" for all of them.
	Tenant string    `json:"tenant"`
	From   time.Time `json:"from,omitzero"`
	To     time.Time `json:"to,omitzero"`
	// RejectedUnlisted counts the rejected messages beyond
	// SweepOptions.MaxRejected, which are not in Rejected.
	RejectedUnlisted int `json:"rejected_unlisted,omitempty"`
}

// RejectedCount is how many messages a verification rejected, listed
// or not.
func (v *Verification) RejectedCount() int {
	n := len(v.Rejected)
	if v.Sweep != nil {
		n += v.Sweep.RejectedUnlisted
	}
	return n
}

// sweepBatch is how many messages are checked together: enough to keep
// every worker busy, few enough that the bodies held at once stay small.
const sweepBatch = 1024

// hookCacheSize bounds the envelopes got one by one (outside the window
// read through ACS_HOOKS) whose subjects are remembered.
const hookCacheSize = 8192

// VerifyAll is the whole-stream audit: every message of ACS_DECISIONS
// and ACS_ALERTS stored in range (of one tenant, or all) that is not a
// verified answer is reported — no, bad or unknown-key receipt, no or a
// malformed Acs-Stream-Seq, a sequence that is no envelope in ACS_HOOKS,
// an envelope of another tenant or session than the message's subject
// names (alerts: of another tenant), or a second verified answer to one
// envelope (alerts: per rule and envelope).
//
// Unlike Verify it recomputes no hash chain — that needs every session
// replayed — and it holds no bodies beyond one batch: what it keeps per
// message is the answered sequence, so a forgery on a session nobody
// examines is still found on a stream of millions. receiptKey nil leaves
// receipts not checked.
func VerifyAll(ctx context.Context, src *Source, receiptKey ed25519.PublicKey, opts SweepOptions) (*Verification, error) {
	scope := &SweepScope{Tenant: opts.Tenant, From: opts.Bounds.From, To: opts.Bounds.To}
	// All tenants is everything on the streams' subjects, whatever its
	// shape: a forgery on acs.decisions.x is no less a forgery.
	decisions, alerts := acs.DecisionsPrefix+".>", acs.AlertsPrefix+".>"
	if opts.Tenant == "" {
		scope.Tenant = "*"
	} else {
		decisions, alerts = acs.DecisionsPrefix+"."+opts.Tenant+".>", acs.AlertsPrefix+"."+opts.Tenant+".>"
	}
	sw := &sweeper{
		src: src, pub: receiptKey, workers: opts.Workers, maxRejected: opts.MaxRejected,
		// Empty lists, not null: a JSON consumer of an audit reads [].
		v:       &Verification{Tenant: scope.Tenant, Sweep: scope, Rejected: []MessageCheck{}, Problems: []string{}},
		hooks:   newHookIndex(src),
		decided: map[uint64]answerRef{},
		alerted: map[alertKey]answerRef{},
		rules:   map[string]uint32{},
	}
	if sw.workers <= 0 {
		sw.workers = runtime.GOMAXPROCS(0)
	}
	defer sw.hooks.close()
	// A decision stored by the time its stream's end is fixed answers an
	// envelope stored before: that end is fixed first, ACS_HOOKS' at the
	// first lookup (what an alert names beyond it is got, not read).
	err := src.sweepStream(ctx, src.decisions, acs.DecisionsStream, decisions, opts, sw.decisions)
	if err != nil {
		return sw.v, err
	}
	if err := src.sweepStream(ctx, src.alerts, acs.AlertsStream, alerts, opts, sw.alerts); err != nil {
		return sw.v, err
	}
	return sw.v, nil
}

// sweeper holds what a sweep remembers between batches: per answered
// sequence, its first verified answer.
type sweeper struct {
	src         *Source
	pub         ed25519.PublicKey
	workers     int
	maxRejected int
	v           *Verification
	hooks       *hookIndex
	decided     map[uint64]answerRef
	alerted     map[alertKey]answerRef
	// rules interns rule ids, so that alerted's keys stay small.
	rules map[string]uint32
}

// answerRef is the first verified answer to an envelope: its sequence in
// its stream and a hash of its body (to tell a copy from another answer).
type answerRef struct {
	msg, sum uint64
}

type alertKey struct {
	rule uint32
	seq  uint64
}

// sweptMsg is a published message being checked, and what its subject
// says it is about.
type sweptMsg struct {
	published
	// tenant and session from the subject ("" when the subject is not of
	// the stream's shape); rule for alerts.
	tenant, session, rule string
}

// sweepStream reads the messages of a stream on filter stored within
// opts.Bounds and up to its last message now, and checks them in batches.
func (s *Source) sweepStream(ctx context.Context, st jetstream.Stream, name, filter string, opts SweepOptions, check func(context.Context, []sweptMsg) error) error {
	info, err := st.Info(ctx)
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	if info.State.Msgs == 0 || !opts.Bounds.From.IsZero() && opts.Bounds.From.After(info.State.LastTime) {
		return nil
	}
	last := info.State.LastSeq
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}}
	if from := opts.Bounds.From; !from.IsZero() {
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &from
	}
	var bar *Progress
	batch := make([]sweptMsg, 0, sweepBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := check(ctx, batch)
		clear(batch) // drop the bodies now, not when the slice is reused
		batch = batch[:0]
		return err
	}
	err = s.each(ctx, name, cfg, func(m jetstream.Msg, md *jetstream.MsgMetadata) (bool, error) {
		seq := md.Sequence.Stream
		if seq > last || !opts.Bounds.To.IsZero() && md.Timestamp.After(opts.Bounds.To) {
			return false, nil
		}
		if bar == nil {
			bar = newProgress(opts.Progress, seq, last, name+" messages")
		}
		bar.At(seq)
		p := published{streamSeq: seq, subject: m.Subject(), header: m.Headers(), data: m.Data()}
		p.claimed, _ = parseSeq(p.header.Get(acs.HdrStreamSeq))
		batch = append(batch, sweptMsg{published: p})
		if len(batch) == sweepBatch {
			if err := flush(); err != nil {
				return false, err
			}
		}
		return md.NumPending > 0 && seq < last, nil
	})
	if bar != nil {
		bar.Done()
	}
	if err == nil {
		err = flush()
	}
	if err != nil {
		return fmt.Errorf("sweep %s: %w", name, err)
	}
	return nil
}

// lookupWorkers is how many envelope lookups are in flight at once: they
// wait on the server, not the CPU, so more than GOMAXPROCS pay.
const lookupWorkers = 16

// parallel runs fn(i) for i in [0, n) on workers goroutines.
func parallel(workers, n int, fn func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(workers, n) {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// prepare checks the receipts of a batch and looks up the envelopes it
// names, both in parallel and at the same time (the lookups wait on the
// server while the receipts keep the CPUs busy); the verdicts are then
// reached in stream order.
func (sw *sweeper) prepare(ctx context.Context, batch []sweptMsg, alerts bool, binding func(*sweptMsg) (receipt.Binding, bool)) (map[uint64]hookRef, error) {
	var seqs []uint64
	for i := range batch {
		// turnguard's operational alerts answer no envelope.
		if batch[i].claimed != 0 && !(alerts && batch[i].tenant == alert.SystemTenant) {
			seqs = append(seqs, batch[i].claimed)
		}
	}
	var (
		hooks map[uint64]hookRef
		err   error
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		hooks, err = sw.hooks.lookup(ctx, seqs, lookupWorkers)
	}()
	parallel(sw.workers, len(batch), func(i int) {
		if b, ok := binding(&batch[i]); ok {
			batch[i].check(sw.src.roots, sw.pub, b)
		}
	})
	<-done
	return hooks, err
}

// decisions checks a batch of ACS_DECISIONS messages.
func (sw *sweeper) decisions(ctx context.Context, batch []sweptMsg) error {
	for i := range batch {
		m := &batch[i]
		// acs.decisions.<tenant>.<session_id>, nothing else.
		if tok := strings.Split(m.subject, "."); len(tok) == 4 && acs.CheckTenant(tok[2]) == nil && acs.CheckSession(tok[3]) == nil {
			m.tenant, m.session = tok[2], tok[3]
		}
	}
	hooks, err := sw.prepare(ctx, batch, false, func(m *sweptMsg) (receipt.Binding, bool) {
		// The receipt is bound to the subject the message is stored on
		// and the sequence it claims: a genuine receipt moved to another
		// session or envelope does not verify.
		return receipt.Binding{Kind: receipt.KindDecision, Subject: m.subject, Seq: m.claimed}, m.claimed != 0
	})
	if err != nil {
		return err
	}
	for i := range batch {
		m := &batch[i]
		sw.v.Messages.Decisions++
		if m.claimed == 0 {
			// Nothing to bind a receipt to: it answers no envelope.
			sw.v.Messages.DecisionsChecked++
			sw.reject(acs.DecisionsStream, m, headerText(m.header.Get(acs.HdrRequestID)),
				[]string{fmt.Sprintf("no valid Acs-Stream-Seq (%q): it answers no envelope, so it is not turnguard's decision", headerText(m.header.Get(acs.HdrStreamSeq)))})
			continue
		}
		if m.receipt == CheckNotChecked {
			sw.v.Messages.DecisionsNotChecked++
		} else {
			sw.v.Messages.DecisionsChecked++
		}
		var why []string
		if m.receipt == CheckFailed {
			why = append(why, m.detail)
		}
		if m.tenant == "" {
			why = append(why, "the subject is not acs.decisions.<tenant>.<session_id>")
		}
		h := hooks[m.claimed]
		switch {
		case !h.found:
			why = append(why, fmt.Sprintf("sequence %d is not an envelope in %s", m.claimed, acs.HooksStream))
		case m.tenant != "" && (h.tenant != m.tenant || h.session != m.session):
			why = append(why, fmt.Sprintf("sequence %d is an envelope of %s, not of tenant %s session %s", m.claimed, h, m.tenant, m.session))
		}
		if len(why) == 0 {
			// A verified answer (or, without a key, an answer as far as can
			// be told): the first one for its envelope is the answer.
			if dup := first(sw.decided, m.claimed, m, "the answer", acs.DecisionsStream); dup != "" {
				why = append(why, dup)
			}
		}
		if len(why) > 0 {
			sw.reject(acs.DecisionsStream, m, headerText(m.header.Get(acs.HdrRequestID)), why)
		}
	}
	return nil
}

// alerts checks a batch of ACS_ALERTS messages.
func (sw *sweeper) alerts(ctx context.Context, batch []sweptMsg) error {
	for i := range batch {
		m := &batch[i]
		// acs.alerts.<tenant>.<severity>.<rule_id>; the _system tenant is
		// turnguard's own and no CheckTenant tenant.
		if tok := strings.Split(m.subject, "."); len(tok) == 5 && (tok[2] == alert.SystemTenant || acs.CheckTenant(tok[2]) == nil) && tok[4] != "" {
			m.tenant, m.rule = tok[2], tok[4]
		}
	}
	hooks, err := sw.prepare(ctx, batch, true, func(m *sweptMsg) (receipt.Binding, bool) {
		if m.tenant == alert.SystemTenant {
			// An operational alert answers no envelope: bound to 0.
			return receipt.Alert(m.subject, 0), true
		}
		return receipt.Alert(m.subject, m.claimed), m.claimed != 0
	})
	if err != nil {
		return err
	}
	for i := range batch {
		m := &batch[i]
		sw.v.Messages.Alerts++
		rule := headerText(m.header.Get(acs.HdrRuleID))
		if m.tenant != alert.SystemTenant && m.claimed == 0 {
			sw.v.Messages.AlertsChecked++
			sw.reject(acs.AlertsStream, m, rule,
				[]string{fmt.Sprintf("no valid Acs-Stream-Seq (%q): it is bound to no envelope, so it is not turnguard's alert", headerText(m.header.Get(acs.HdrStreamSeq)))})
			continue
		}
		if m.receipt == CheckNotChecked {
			sw.v.Messages.AlertsNotChecked++
		} else {
			sw.v.Messages.AlertsChecked++
		}
		var why []string
		if m.receipt == CheckFailed {
			why = append(why, m.detail)
		}
		if m.tenant == "" {
			why = append(why, "the subject is not acs.alerts.<tenant>.<severity>.<rule_id>")
		}
		if m.tenant == alert.SystemTenant {
			if len(why) > 0 {
				sw.reject(acs.AlertsStream, m, rule, why)
			}
			continue
		}
		h := hooks[m.claimed]
		switch {
		case !h.found:
			why = append(why, fmt.Sprintf("sequence %d is not an envelope in %s", m.claimed, acs.HooksStream))
		case m.tenant != "" && h.tenant != m.tenant:
			why = append(why, fmt.Sprintf("sequence %d is an envelope of %s, not of tenant %s", m.claimed, h, m.tenant))
		}
		if len(why) == 0 {
			id, ok := sw.rules[m.rule]
			if !ok {
				id = uint32(len(sw.rules))
				sw.rules[m.rule] = id
			}
			if dup := first(sw.alerted, alertKey{id, m.claimed}, m, "the alert "+m.rule, acs.AlertsStream); dup != "" {
				why = append(why, dup)
			}
		}
		if len(why) > 0 {
			sw.reject(acs.AlertsStream, m, rule, why)
		}
	}
	return nil
}

// first records m as the answer of key unless one was recorded before;
// then it says which: what (the answer, the alert R) stored in streamName.
func first[K comparable](answers map[K]answerRef, key K, m *sweptMsg, what, streamName string) string {
	h := fnv.New64a()
	h.Write(m.data)
	ref := answerRef{msg: m.streamSeq, sum: h.Sum64()}
	prev, ok := answers[key]
	if !ok {
		answers[key] = ref
		return ""
	}
	if prev.sum == ref.sum {
		return fmt.Sprintf("another copy of %s for seq %d (%s message %d)", what, m.claimed, streamName, prev.msg)
	}
	if what == "the answer" {
		return fmt.Sprintf("another answer to seq %d than %s message %d", m.claimed, streamName, prev.msg)
	}
	return fmt.Sprintf("another %s for seq %d than %s message %d", strings.TrimPrefix(what, "the "), m.claimed, streamName, prev.msg)
}

// reject records a message that is not a verified answer.
func (sw *sweeper) reject(streamName string, m *sweptMsg, id string, why []string) {
	if sw.maxRejected > 0 && len(sw.v.Rejected) >= sw.maxRejected {
		sw.v.Sweep.RejectedUnlisted++
		return
	}
	mc := MessageCheck{Stream: streamName, StreamSeq: m.streamSeq, Subject: m.subject, ClaimedSeq: m.claimed, RequestID: id, Detail: strings.Join(why, "; ")}
	sw.v.Rejected = append(sw.v.Rejected, mc)
	sw.v.Problems = append(sw.v.Problems, fmt.Sprintf("%s message %d on %s (Acs-Stream-Seq %q): %s",
		mc.Stream, mc.StreamSeq, mc.Subject, headerText(m.header.Get(acs.HdrStreamSeq)), mc.Detail))
}
