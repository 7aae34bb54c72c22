package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/alert"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/receipt"
)

// tailer checks messages one by one as Verify does, remembering a
// bounded number of answers.
type tailer struct {
	src      *Source
	opts     TailOptions
	answered *boundedSet
	tools    *boundedMap
	// roots remembers the batch signatures that verified, so that a
	// batch's receipts after its first cost hashing, not Ed25519 (nil:
	// every receipt verified on its own).
	roots *receipt.RootCache
}

// CheckTailDecision checks and describes one message of ACS_DECISIONS
// without looking anything up: what Tail does for each, minus the tool
// name (read from ACS_HOOKS) and the memory of earlier answers.
func CheckTailDecision(opts TailOptions, subject string, h nats.Header, data []byte) TailEvent {
	t := &tailer{opts: opts}
	return t.decision(context.Background(), subject, h, data)
}

func (t *tailer) decision(ctx context.Context, subject string, h nats.Header, data []byte) TailEvent {
	e := TailEvent{Kind: TailDecision, Subject: tailID(subject), Hook: tailID(h.Get(acs.HdrHook)),
		RequestID: tailID(h.Get(acs.HdrRequestID)), TurnID: tailID(h.Get(acs.HdrTurnID)), Receipt: CheckNone, Signature: CheckNone}
	var why []string
	// acs.decisions.<tenant>.<session_id>, nothing else, as verify --all.
	if tok := strings.Split(subject, "."); len(tok) == 4 && acs.CheckTenant(tok[2]) == nil && acs.CheckSession(tok[3]) == nil {
		e.Tenant, e.SessionID = tok[2], tok[3]
	} else {
		why = append(why, "the subject is not acs.decisions.<tenant>.<session_id>")
	}
	e.Seq, _ = parseSeq(h.Get(acs.HdrStreamSeq))
	d := newDecision(h, data, DecodeBodies)
	e.Decision = tailID(d.Kind())
	if d.ParseErr != nil {
		why = append(why, d.ParseErr.Error())
	} else {
		describeResponse(&e, &d.Response)
	}
	p := published{subject: subject, header: h, data: data, claimed: e.Seq}
	if e.Seq == 0 {
		// Nothing to bind a receipt to: it answers no envelope.
		p.receipt = CheckFailed
		why = append(why, fmt.Sprintf("no valid Acs-Stream-Seq (%q): it answers no envelope, so it is not turnguard's decision", tailID(h.Get(acs.HdrStreamSeq))))
	} else {
		p.check(t.roots, t.opts.ReceiptKey, receipt.Binding{Kind: receipt.KindDecision, Subject: subject, Seq: e.Seq})
		if p.receipt == CheckFailed {
			why = append(why, p.detail)
		}
	}
	e.Receipt = p.receipt
	if d.ParseErr == nil {
		e.Signature = checkSignature(t.opts.Keys, e.SessionID, d, func(format string, args ...any) {
			why = append(why, fmt.Sprintf(format, args...))
		})
	}
	if len(why) == 0 && t.answered != nil && p.receipt == CheckOK {
		// The processor answers each envelope once: a second verified
		// answer is a genuine decision published again, not the answer.
		if prev, dup := t.answered.add("d " + subject + " " + strconv.FormatUint(e.Seq, 10)); dup {
			why = append(why, "another answer to seq "+strconv.FormatUint(e.Seq, 10)+prev)
		}
	}
	if isToolHook(e.Hook) && len(why) == 0 && t.src != nil {
		e.Tool = t.tool(ctx, e.Seq, e.Tenant, e.SessionID)
	}
	e.Verdict, e.Problem = verdict(p.receipt, e.Signature, why)
	return e
}

// verdict sums up a message's checks.
func verdict(rc, sig string, why []string) (string, string) {
	switch {
	case len(why) > 0 || rc == CheckFailed || sig == CheckFailed:
		return TailNotVerified, tailText(strings.Join(why, "; "))
	case rc == CheckOK:
		return TailVerified, ""
	}
	return TailNotChecked, ""
}

// describeResponse fills what a decision's body says.
func describeResponse(e *TailEvent, r *acs.Response) {
	switch {
	case r.Result != nil:
		e.Reason = r.Result.Reasoning
		e.ReasonCodes = r.Result.ReasonCodes
		for _, p := range r.Result.PolicyReferences {
			if p.RuleID != "" && !containsString(e.Rules, p.RuleID) {
				e.Rules = append(e.Rules, p.RuleID)
			}
		}
		// Alert-only and shadow rules hit without a policy reference.
		if tg, ok := r.Result.PolicyData["turnguard"].(map[string]any); ok {
			hits, _ := tg["hits"].([]any)
			for _, h := range hits {
				hm, _ := h.(map[string]any)
				if id, _ := hm["rule_id"].(string); id != "" && !containsString(e.Rules, id) {
					e.Rules = append(e.Rules, id)
				}
			}
		}
	case r.Error != nil:
		e.Reason = r.Error.Message
		if r.Error.Data != nil && r.Error.Data.Reason != "" {
			e.ReasonCodes = []string{r.Error.Data.Reason}
		}
	}
	e.Reason = tailText(e.Reason)
	for i := range e.Rules {
		e.Rules[i] = tailID(e.Rules[i])
	}
	for i := range e.ReasonCodes {
		e.ReasonCodes[i] = tailID(e.ReasonCodes[i])
	}
}

// tailText makes untrusted text safe for a terminal line: control
// characters (escape sequences a forger could use to rewrite the screen,
// newlines to fake another line) become '?', and it is bounded.
func tailText(s string) string { return truncate(safeText(s), 300) }

// tailID is tailText for ids and names: shorter.
func tailID(s string) string { return truncate(safeText(s), 80) }

func safeText(s string) string {
	return strings.Map(func(r rune) rune {
		// C1 controls too: some terminals take U+009B for an escape.
		if r < ' ' || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return '?'
		}
		return r
	}, s)
}

func isToolHook(hook string) bool { return strings.HasPrefix(hook, "toolCall") }

// tool reads the name of the tool a decided envelope calls: one direct
// get of the envelope the decision answers, remembered for its alerts'
// sake, and only for a tool hook's verified-or-unchecked answer — a
// forgery does not make tail read the stream.
func (t *tailer) tool(ctx context.Context, seq uint64, tenant, session string) string {
	key := strconv.FormatUint(seq, 10)
	if name, ok := t.tools.get(key); ok {
		return name
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	m, err := t.src.hooks.GetMsg(ctx, seq)
	if err != nil {
		return "" // retention removed it, or no permission: the line says less
	}
	r, err := acs.ParsePartitioned(m.Subject)
	if err != nil || r.Tenant != tenant || r.SessionID != session {
		return ""
	}
	tool, _ := summarize(r.Hook, envelopePayload(m.Data))
	tool = tailID(tool)
	t.tools.put(key, tool)
	return tool
}

func envelopePayload(data []byte) any {
	f, _ := guardian.ReadFacts(data)
	return f.PayloadValue()
}

// tailFinding is what a tail line shows of an OCSF finding.
type tailFinding struct {
	Severity    string `json:"severity"`
	Message     string `json:"message"`
	FindingInfo struct {
		Title string `json:"title"`
	} `json:"finding_info"`
	Actor struct {
		Session struct {
			UID string `json:"uid"`
		} `json:"session"`
	} `json:"actor"`
	Evidences []struct {
		Data map[string]any `json:"data"`
	} `json:"evidences"`
	Unmapped struct {
		Turnguard struct {
			RuleID    string `json:"rule_id"`
			Decision  string `json:"decision"`
			TurnID    string `json:"turn_id"`
			TurnIndex int    `json:"turn_index"`
			RequestID string `json:"request_id"`
			Hook      string `json:"hook"`
		} `json:"turnguard"`
	} `json:"unmapped"`
}

func (t *tailer) alert(subject string, h nats.Header, data []byte) TailEvent {
	e := TailEvent{Kind: TailAlert, Subject: tailID(subject), Receipt: CheckNone, Signature: CheckNone}
	var why []string
	rule := ""
	// acs.alerts.<tenant>.<severity>.<rule_id>, as verify --all.
	if tok := strings.Split(subject, "."); len(tok) == 5 && (tok[2] == alert.SystemTenant || acs.CheckTenant(tok[2]) == nil) && tok[4] != "" {
		e.Tenant, e.Severity, rule = tok[2], tok[3], tok[4]
	} else {
		why = append(why, "the subject is not acs.alerts.<tenant>.<severity>.<rule_id>")
	}
	if id := h.Get(acs.HdrRuleID); id != "" {
		rule = id
	}
	if rule != "" {
		e.Rules = []string{tailID(rule)}
	}
	e.Seq, _ = parseSeq(h.Get(acs.HdrStreamSeq))
	var f tailFinding
	if err := json.Unmarshal(data, &f); err != nil {
		why = append(why, "the alert is not an OCSF finding: "+err.Error())
	} else {
		e.SessionID = tailID(f.Actor.Session.UID)
		e.Title = tailText(f.FindingInfo.Title)
		e.Reason = tailText(f.Message)
		tg := f.Unmapped.Turnguard
		e.Decision, e.TurnID, e.TurnIndex = tailID(tg.Decision), tailID(tg.TurnID), tg.TurnIndex
		e.RequestID, e.Hook = tailID(tg.RequestID), tailID(tg.Hook)
		if f.Severity != "" {
			e.Severity = f.Severity
		}
		for _, ev := range f.Evidences {
			if role, _ := ev.Data["role"].(string); role == "trigger" {
				tool, _ := ev.Data["tool"].(string)
				e.Tool = tailID(tool)
			}
		}
	}
	e.Severity = tailID(e.Severity)
	p := published{subject: subject, header: h, data: data, claimed: e.Seq}
	switch {
	case e.Tenant == alert.SystemTenant:
		// An operational alert answers no envelope: bound to 0.
		p.check(t.roots, t.opts.ReceiptKey, receipt.Alert(subject, 0))
	case e.Seq == 0:
		p.receipt = CheckFailed
		why = append(why, fmt.Sprintf("no valid Acs-Stream-Seq (%q): it is bound to no envelope, so it is not turnguard's alert", tailID(h.Get(acs.HdrStreamSeq))))
	default:
		p.check(t.roots, t.opts.ReceiptKey, receipt.Alert(subject, e.Seq))
	}
	if p.receipt == CheckFailed && p.detail != "" {
		why = append(why, p.detail)
	}
	e.Receipt = p.receipt
	if len(why) == 0 && t.answered != nil && p.receipt == CheckOK && e.Tenant != alert.SystemTenant {
		if prev, dup := t.answered.add("a " + subject + " " + strconv.FormatUint(e.Seq, 10)); dup {
			why = append(why, "another alert "+rule+" for seq "+strconv.FormatUint(e.Seq, 10)+prev)
		}
	}
	e.Verdict, e.Problem = verdict(p.receipt, CheckNone, why)
	return e
}
