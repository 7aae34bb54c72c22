package replay

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/acs"
	"github.com/turnguard/turnguard/internal/alert"
	"github.com/turnguard/turnguard/internal/guardian"
	"github.com/turnguard/turnguard/internal/receipt"
)

// Verdicts of a tailed message. Only a message whose receipt verified is
// called verified: without a key nothing tells a forgery from
// turnguard's own message.
const (
	TailVerified    = "verified"
	TailNotVerified = "NOT VERIFIED"
	TailNotChecked  = "not checked"
)

// Kinds of tailed message.
const (
	TailDecision = "decision"
	TailAlert    = "alert"
)

// TailEvent is one decision or alert as `replay tail` shows it. The JSON
// field names are stable: `replay tail --json` writes one object per line.
type TailEvent struct {
	Kind      string    `json:"kind"`
	Time      time.Time `json:"time"`
	Stream    string    `json:"stream"`
	StreamSeq uint64    `json:"stream_seq"`
	Subject   string    `json:"subject"`
	Tenant    string    `json:"tenant,omitempty"`
	SessionID string    `json:"session_id,omitempty"`
	// Seq is the ACS_HOOKS sequence the message claims to answer
	// (Acs-Stream-Seq; 0: none).
	Seq       uint64 `json:"seq,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	TurnID    string `json:"turn_id,omitempty"`
	// TurnIndex is known for alerts only (their evidence says it).
	TurnIndex int    `json:"turn_index,omitempty"`
	Hook      string `json:"hook,omitempty"`
	Tool      string `json:"tool,omitempty"`
	// Decision is allow, deny, modify, ask, or "error <code>" (decisions
	// only); for alerts the decision the rule's hit ended in.
	Decision    string   `json:"decision,omitempty"`
	Rules       []string `json:"rules,omitempty"`
	ReasonCodes []string `json:"reason_codes,omitempty"`
	// Reason is the decision's reasoning or error message, or the alert's
	// message.
	Reason   string `json:"reason,omitempty"`
	Severity string `json:"severity,omitempty"`
	Title    string `json:"title,omitempty"`
	// Verdict is verified, NOT VERIFIED or not checked; Receipt and
	// Signature the individual checks (ok, FAILED, not checked, -), and
	// Problem why it is not verified.
	Verdict   string `json:"verdict"`
	Receipt   string `json:"receipt"`
	Signature string `json:"signature"`
	Problem   string `json:"problem,omitempty"`
}

// TailOptions select and check what Tail follows.
type TailOptions struct {
	// Tenant "" or "*" follows every tenant, turnguard's own _system
	// alerts included, as verify --all does.
	Tenant    string
	SessionID string
	// Decision keeps decisions of this kind: allow, deny, modify, ask,
	// error or "error <code>". Alerts are kept regardless.
	Decision string
	Rule     string
	// Decisions and Alerts say which streams to follow.
	Decisions, Alerts bool
	// From starts at the messages stored at or after it; zero starts at
	// new messages.
	From time.Time
	// ReceiptKey checks receipts, Keys HMAC signatures of decisions; nil
	// leaves them not checked.
	ReceiptKey ed25519.PublicKey
	Keys       *acs.Keyring
}

// tailMemory bounds the answers Tail remembers to call a second answer to
// one envelope what it is: enough for hours of a busy tenant, small
// enough that a flood of forgeries cannot grow it.
const tailMemory = 1 << 16

// Tail follows ACS_DECISIONS and ACS_ALERTS live and calls fn with each
// message that passes the filters, checked, until ctx ends (nil) or fn
// fails. Every message is shown, forged or not: a filter selects by what
// the message says, and the verdict says whether to believe it.
func (s *Source) Tail(ctx context.Context, opts TailOptions, fn func(TailEvent) error) error {
	tenant := opts.Tenant
	if tenant == "" {
		tenant = "*"
	}
	type item struct {
		stream string
		m      jetstream.Msg
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	msgs := make(chan item)
	errc := make(chan error, 2)
	follow := func(name string, filter []string) error {
		cfg := jetstream.OrderedConsumerConfig{FilterSubjects: filter, DeliverPolicy: jetstream.DeliverNewPolicy}
		if !opts.From.IsZero() {
			from := opts.From
			cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &from
		}
		c, err := s.js.OrderedConsumer(ctx, name, cfg)
		if err != nil {
			return fmt.Errorf("follow %s: %w", name, err)
		}
		it, err := c.Messages()
		if err != nil {
			return fmt.Errorf("follow %s: %w", name, err)
		}
		go func() {
			<-ctx.Done()
			it.Stop()
		}()
		go func() {
			for {
				m, err := it.Next()
				if err != nil {
					if ctx.Err() == nil {
						errc <- fmt.Errorf("follow %s: %w", name, err)
					}
					return
				}
				select {
				case msgs <- item{name, m}:
				case <-ctx.Done():
					return
				}
			}
		}()
		return nil
	}
	if opts.Decisions {
		// A session id names one subject per tenant; alerts name no
		// session in their subject and are filtered by their finding.
		session := "*"
		if opts.SessionID != "" {
			session = opts.SessionID
		}
		filter := acs.DecisionsPrefix + "." + tenant + "." + session
		if tenant == "*" && session == "*" {
			// Everything on the stream, whatever its shape: a forgery on
			// acs.decisions.x is no less one.
			filter = acs.DecisionsPrefix + ".>"
		}
		if err := follow(acs.DecisionsStream, []string{filter}); err != nil {
			return err
		}
	}
	if opts.Alerts {
		if err := follow(acs.AlertsStream, []string{acs.AlertsPrefix + "." + tenant + ".>"}); err != nil {
			return err
		}
	}
	t := &tailer{src: s, opts: opts, answered: newBoundedSet(tailMemory), tools: newBoundedMap(1024)}
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			return err
		case it := <-msgs:
			md, err := it.m.Metadata()
			if err != nil {
				return err
			}
			var e TailEvent
			if it.stream == acs.DecisionsStream {
				e = t.decision(ctx, it.m.Subject(), it.m.Headers(), it.m.Data())
			} else {
				e = t.alert(it.m.Subject(), it.m.Headers(), it.m.Data())
			}
			e.Stream, e.StreamSeq, e.Time = it.stream, md.Sequence.Stream, md.Timestamp
			if !opts.keep(e) {
				continue
			}
			if err := fn(e); err != nil {
				return err
			}
		}
	}
}

// keep applies the filters that the subject filter could not.
func (o TailOptions) keep(e TailEvent) bool {
	if o.SessionID != "" && e.SessionID != o.SessionID {
		return false
	}
	if o.Rule != "" && !containsString(e.Rules, o.Rule) {
		return false
	}
	if o.Decision != "" && e.Kind == TailDecision {
		kind, _, _ := strings.Cut(e.Decision, " ")
		if e.Decision != o.Decision && kind != o.Decision {
			return false
		}
	}
	return true
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// tailer checks messages one by one as Verify does, remembering a
// bounded number of answers.
type tailer struct {
	src      *Source
	opts     TailOptions
	answered *boundedSet
	tools    *boundedMap
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
		p.check(t.opts.ReceiptKey, receipt.Binding{Kind: receipt.KindDecision, Subject: subject, Seq: e.Seq})
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
		p.check(t.opts.ReceiptKey, receipt.Alert(subject, 0))
	case e.Seq == 0:
		p.receipt = CheckFailed
		why = append(why, fmt.Sprintf("no valid Acs-Stream-Seq (%q): it is bound to no envelope, so it is not turnguard's alert", tailID(h.Get(acs.HdrStreamSeq))))
	default:
		p.check(t.opts.ReceiptKey, receipt.Alert(subject, e.Seq))
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

// boundedSet remembers the last n keys added.
type boundedSet struct {
	seen  map[string]struct{}
	order []string
	next  int
}

func newBoundedSet(n int) *boundedSet {
	return &boundedSet{seen: make(map[string]struct{}, n), order: make([]string, n)}
}

// add records key and reports whether it was recorded already (with a
// note for the reader).
func (s *boundedSet) add(key string) (string, bool) {
	if _, ok := s.seen[key]; ok {
		return " (already shown): turnguard's message published again, not a new answer", true
	}
	if old := s.order[s.next]; old != "" {
		delete(s.seen, old)
	}
	s.order[s.next] = key
	s.next = (s.next + 1) % len(s.order)
	s.seen[key] = struct{}{}
	return "", false
}

// boundedMap remembers the last n values put.
type boundedMap struct {
	m     map[string]string
	order []string
	next  int
}

func newBoundedMap(n int) *boundedMap {
	return &boundedMap{m: make(map[string]string, n), order: make([]string, n)}
}

func (b *boundedMap) get(k string) (string, bool) {
	v, ok := b.m[k]
	return v, ok
}

func (b *boundedMap) put(k, v string) {
	if _, ok := b.m[k]; !ok {
		if old := b.order[b.next]; old != "" {
			delete(b.m, old)
		}
		b.order[b.next] = k
		b.next = (b.next + 1) % len(b.order)
	}
	b.m[k] = v
}

// ANSI colours of a tail line on a terminal.
const (
	ansiReset   = "\x1b[0m"
	ansiBold    = "\x1b[1m"
	ansiDim     = "\x1b[2m"
	ansiRed     = "\x1b[31m"
	ansiGreen   = "\x1b[32m"
	ansiYellow  = "\x1b[33m"
	ansiMagenta = "\x1b[35m"
	ansiCyan    = "\x1b[36m"
	ansiAlarm   = "\x1b[1;97;41m" // bold white on red: cannot be missed
)

// FormatTailLine renders one event as a line for a person (without the
// newline): time, verdict, then for a decision tenant, session (its
// shortened), turn, hook and tool, decision, rules and reason;
// for an alert ALERT, severity, tenant, session, turn, rule, title and
// message. A message that is not verified says why at the end. color adds
// ANSI colours.
func FormatTailLine(e TailEvent, color bool) string {
	paint := func(code, s string) string {
		if !color || s == "" {
			return s
		}
		return code + s + ansiReset
	}
	var b strings.Builder
	b.WriteString(paint(ansiDim, e.Time.Format("15:04:05")))
	b.WriteString("  ")
	v := fmt.Sprintf("%-12s", e.Verdict)
	switch e.Verdict {
	case TailNotVerified:
		v = paint(ansiAlarm, v)
	case TailVerified:
		v = paint(ansiGreen, v)
	default:
		v = paint(ansiDim, v)
	}
	b.WriteString(v)
	b.WriteString("  ")
	turn := "turn " + orDash(shortID(e.TurnID))
	if e.TurnIndex > 0 {
		turn = "turn " + strconv.Itoa(e.TurnIndex)
	}
	if e.Kind == TailAlert {
		fmt.Fprintf(&b, "%s %s  %s/%s  %s  ", paint(ansiBold+ansiMagenta, "ALERT"), paint(severityColor(e.Severity), fmt.Sprintf("%-8s", orDash(e.Severity))),
			orDash(e.Tenant), orDash(shortID(e.SessionID)), turn)
		step := strings.TrimSpace(e.Hook + " " + e.Tool)
		if step != "" {
			b.WriteString(step + "  ")
		}
		b.WriteString(paint(ansiBold, orDash(strings.Join(e.Rules, ","))))
		if e.Title != "" {
			b.WriteString("  " + e.Title)
		}
		if e.Reason != "" {
			b.WriteString(": " + e.Reason)
		}
	} else {
		step := strings.TrimSpace(e.Hook + " " + e.Tool)
		fmt.Fprintf(&b, "%s  %s/%s  %s  %s", paint(decisionColor(e.Decision), fmt.Sprintf("%-6s", orDash(e.Decision))),
			orDash(e.Tenant), orDash(shortID(e.SessionID)), turn, orDash(step))
		if len(e.Rules) > 0 {
			b.WriteString("  " + paint(ansiBold, strings.Join(e.Rules, ",")))
		}
		reason := e.Reason
		if reason == "" && len(e.ReasonCodes) > 0 {
			reason = strings.Join(e.ReasonCodes, ",")
		}
		if reason != "" {
			b.WriteString("  " + reason)
		}
	}
	if e.Problem != "" {
		b.WriteString("  " + paint(ansiAlarm, "!! "+e.Problem))
	}
	return b.String()
}

// shortID shortens a UUID-like id to its first 8 and last 4 characters:
// random ids differ in the first, ids minted in sequence (the examples'
// request and turn ids) in the last; --json and --session take the whole.
func shortID(id string) string {
	if r := []rune(id); len(r) > 13 {
		return string(r[:8]) + "…" + string(r[len(r)-4:])
	}
	return id
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func decisionColor(d string) string {
	switch {
	case d == "allow":
		return ansiGreen
	case d == "deny":
		return ansiBold + ansiRed
	case strings.HasPrefix(d, "error"):
		return ansiMagenta
	}
	return ansiYellow // modify, ask
}

func severityColor(s string) string {
	switch strings.ToLower(s) {
	case "critical", "fatal", "high":
		return ansiBold + ansiRed
	case "medium":
		return ansiYellow
	}
	return ansiCyan
}

// WriteTailJSON writes one event as a line of JSON.
func WriteTailJSON(w io.Writer, e TailEvent) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ErrTailDone ends a Tail whose caller has seen enough (--count).
var ErrTailDone = errors.New("tail: done")
