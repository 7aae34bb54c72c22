package guardian

import (
	"fmt"
	"slices"
	"strings"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/alert"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// Alert is a finding to publish, with where and under which id.
type Alert struct {
	Subject string
	MsgID   string
	RuleID  string
	Finding alert.Finding
}

// verdict is the decision on an applied envelope and why.
type verdict struct {
	decision acs.Disposition
	// response is the response carrying the decision; its result's
	// chain_hash is left to the caller.
	response *acs.Response
	alerts   []Alert
}

// OutcomeNoRuleMatched is policy_data.turnguard.outcome of a plain allow:
// no rule hit, no evaluation error, no protocol finding above info level.
// Such an allow carries no reasoning.
const OutcomeNoRuleMatched = "no_rule_matched"

var rank = map[policy.Decision]int{policy.DecideNone: 0, policy.DecideAllow: 1, policy.DecideAsk: 2, policy.DecideDeny: 3}

// decide combines the rule hits on an envelope into one decision: deny >
// ask > allow among enforcing rules, limited to what the hook permits (an
// ask the hook cannot take becomes a deny where it can, else an allow; a
// deny becomes an allow on hooks that cannot be denied — those are
// recorded, never blocked). An evaluation error counts as a hit of the
// configured posture.
func (g *Guardian) decide(rs *policy.Set, env *envelope, st *turnstate.Session, vs []turnstate.Violation, rr policy.Result) verdict {
	resp := newResponse(env.req.ID, env.req.Params.RequestID, acs.Allow, "")
	res := resp.Result
	for _, v := range vs {
		res.ReasonCodes = appendUnique(res.ReasonCodes, v.Name)
	}
	t := g.tallyResult(rs, rr, res)
	want, final := permitted(t.strongest(), env.spec)
	res.Decision = final
	msgs, winner := t.messages(want)
	td := map[string]any{}
	if len(vs) > 0 {
		td["violations"] = vs
	}
	// Claude Code and Cursor put reasoning into the model's context, so an
	// allow says something only when there is something to say: a plain
	// allow — no rule hit, no evaluation error, no finding above info
	// level — has no reasoning, and policy_data.turnguard.outcome records
	// that nothing matched.
	findings := notable(vs)
	switch {
	case final == acs.Disposition(want) && len(msgs) > 0 && want != policy.DecideAllow:
		res.Reasoning = strings.Join(msgs, "; ")
	case final != acs.Disposition(want):
		res.Reasoning = fmt.Sprintf("recorded, %s cannot return %s: %s", env.spec.Hook, want, strings.Join(msgs, "; "))
	case len(findings) > 0:
		res.Reasoning = "allowed with protocol findings: " + violationText(findings)
	case len(msgs) > 0:
		res.Reasoning = strings.Join(msgs, "; ")
	case len(t.noted) > 0:
		res.Reasoning = "allowed; " + strings.Join(t.noted, "; ")
	case final == acs.Allow && len(rr.Hits) == 0 && len(t.errs) == 0:
		td["outcome"] = OutcomeNoRuleMatched
	}
	if final == acs.Ask && winner != nil {
		ad := *winner.Rule.Ask
		ad.Context = winner.Message
		res.AskDetails = &ad
	}
	t.citeTaints(res, want, rr.Turn)
	t.turnguardData(res, td, rs, vs)
	v := verdict{decision: final, response: resp}
	for i := range rr.Hits {
		v.alerts = append(v.alerts, g.alertFor(env, st, &rr.Hits[i], rr.Turn, final))
	}
	return v
}

// contributor is one enforcing vote on the decision: an enforcing rule's
// hit, or an evaluation error counted as the configured posture (hit nil).
type contributor struct {
	decision policy.Decision
	message  string
	hit      *policy.Hit
}

// tally is what decide reads out of a policy.Result before it picks the
// decision; kept apart so each step of decide can take it whole.
type tally struct {
	enforced []contributor
	hits     []map[string]any // policy_data.turnguard.hits
	shadow   []map[string]any // policy_data.turnguard.shadow
	// noted is what alert-only and shadow rules found: an allow they hit
	// says so in its reasoning.
	noted []string
	errs  []string // policy_data.turnguard.evaluation_errors
}

// tallyResult sorts the rule hits and evaluation errors into enforcing
// votes, shadow findings and notes, and adds their reason codes and
// policy references to res in hit order (then evaluation_failed), so the
// response lists them exactly as the rules fired.
func (g *Guardian) tallyResult(rs *policy.Set, rr policy.Result, res *acs.Result) tally {
	var t tally
	for i := range rr.Hits {
		h := &rr.Hits[i]
		r := h.Rule
		t.hits = append(t.hits, map[string]any{"rule_id": r.ID, "mode": r.Mode, "decision": r.Decision, "message": h.Message})
		msg := h.Message
		if msg == "" {
			// A template may render nothing; a deny still needs its why.
			msg = r.Title
		}
		if r.Mode == policy.Shadow {
			t.shadow = append(t.shadow, map[string]any{"rule_id": r.ID, "would": r.Decision, "message": h.Message})
			t.noted = append(t.noted, fmt.Sprintf("shadow rule %s would %s: %s", r.ID, r.Decision, msg))
			continue
		}
		if r.Decision == policy.DecideNone {
			t.noted = append(t.noted, msg)
		}
		t.enforced = append(t.enforced, contributor{r.Decision, msg, h})
		for _, c := range r.ReasonCodes {
			res.ReasonCodes = appendUnique(res.ReasonCodes, c)
		}
		res.PolicyReferences = append(res.PolicyReferences, acs.PolicyReference{PolicyID: rs.Name, PolicyVersion: rs.Revision, PolicyName: r.Title, RuleID: r.ID})
	}
	for _, e := range rr.Errors {
		t.errs = append(t.errs, e.Error())
		if e.Rule != nil && e.Rule.Mode != policy.Enforce {
			continue
		}
		t.enforced = append(t.enforced, contributor{policy.Decision(g.cfg.OnRuleError), "rule evaluation failed: " + e.Error(), nil})
		res.ReasonCodes = appendUnique(res.ReasonCodes, "evaluation_failed")
	}
	return t
}

// strongest is the highest-ranked enforcing decision (deny > ask > allow),
// allow when nothing enforcing fired.
func (t *tally) strongest() policy.Decision {
	want := policy.DecideAllow
	for _, c := range t.enforced {
		if rank[c.decision] > rank[want] {
			want = c.decision
		}
	}
	return want
}

// permitted limits want to what the hook can return: an ask the hook
// cannot take becomes a deny where it can, and a deny it cannot take an
// allow. It returns want unchanged beside the final disposition, since the
// reasoning of a downgraded decision names both.
func permitted(want policy.Decision, spec *acs.MethodSpec) (policy.Decision, acs.Disposition) {
	final := acs.Disposition(want)
	if final == acs.Ask && !spec.Permits(acs.Ask) {
		final = acs.Deny
	}
	if final == acs.Deny && !spec.Permits(acs.Deny) {
		final = acs.Allow
	}
	return want, final
}

// messages is the non-empty messages of the votes for want, in hit order,
// and the first rule hit among them (whose ask details an ask returns).
func (t *tally) messages(want policy.Decision) ([]string, *policy.Hit) {
	var msgs []string
	var winner *policy.Hit
	for _, c := range t.enforced {
		if acs.Disposition(c.decision) == acs.Disposition(want) && c.message != "" {
			msgs = append(msgs, c.message)
			if winner == nil {
				winner = c.hit
			}
		}
	}
	return msgs, winner
}

// citeTaints adds the provenance ids of every winning taint hit to res and
// the first such hit's policy_data.aarm.
func (t *tally) citeTaints(res *acs.Result, want policy.Decision, turn int) {
	for _, c := range t.enforced {
		if h := c.hit; h != nil && h.Taint != nil && acs.Disposition(c.decision) == acs.Disposition(want) {
			for _, id := range append(slices.Clone(h.Taint.First.ProvenanceIDs), h.Taint.Last.ProvenanceIDs...) {
				res.CitedProvenanceIDs = appendUnique(res.CitedProvenanceIDs, id)
			}
			if res.PolicyData == nil {
				res.PolicyData = map[string]any{}
			}
			if _, done := res.PolicyData["aarm"]; !done {
				res.PolicyData["aarm"] = aarmData(h, turn)
			}
		}
	}
}

// turnguardData completes td and sets it as policy_data.turnguard when
// there is anything to say (a violation, a hit, an error or an outcome).
func (t *tally) turnguardData(res *acs.Result, td map[string]any, rs *policy.Set, vs []turnstate.Violation) {
	if rs != nil {
		name, revision := rs.Cited()
		td["ruleset"] = map[string]any{"name": name, "revision": revision}
	}
	if len(t.hits) > 0 {
		td["hits"] = t.hits
	}
	if len(t.shadow) > 0 {
		td["shadow"] = t.shadow
	}
	if len(t.errs) > 0 {
		td["evaluation_errors"] = t.errs
	}
	if len(vs) > 0 || len(t.hits) > 0 || len(t.errs) > 0 || td["outcome"] != nil {
		if res.PolicyData == nil {
			res.PolicyData = map[string]any{}
		}
		res.PolicyData["turnguard"] = td
	}
}

// aarmData is policy_data.aarm: the earliest policy-untrusted step of the
// window and how many turns back it lies (ACS response-envelope.json).
func aarmData(h *policy.Hit, turn int) map[string]any {
	return map[string]any{
		"taint":                      h.TaintLabel,
		"earliest_untrusted_step_id": h.Taint.First.RequestID,
		"earliest_untrusted_turn":    h.Taint.First.Turn,
		"lookback_distance":          max(turn-h.Taint.First.Turn, 0),
		"anchor_step_id":             h.Taint.Last.RequestID,
		"anchor_turn":                h.Taint.Last.Turn,
		"window_age_turns":           h.AgeTurns,
	}
}

// notable is the violations worth a reasoning: info-level ones (an
// implicit turn) describe the session, not a problem, and stay in
// policy_data and reason_codes.
func notable(vs []turnstate.Violation) []turnstate.Violation {
	var out []turnstate.Violation
	for _, v := range vs {
		if v.Severity != turnstate.SeverityInfo {
			out = append(out, v)
		}
	}
	return out
}

func violationText(vs []turnstate.Violation) string {
	msgs := make([]string, len(vs))
	for i, v := range vs {
		msgs[i] = v.Message
	}
	return strings.Join(msgs, "; ")
}

func appendUnique(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// alertFor builds the OCSF Detection Finding of one rule hit.
func (g *Guardian) alertFor(env *envelope, st *turnstate.Session, h *policy.Hit, turn int, final acs.Disposition) Alert {
	r := h.Rule
	seq := env.step.Seq
	action, actionID, disp, dispID := "Allowed", 1, "Allowed", 1
	switch {
	case r.Mode == policy.Shadow:
		action, actionID, disp, dispID = "Observed", 99, "Logged", 17
	case final == acs.Deny:
		action, actionID, disp, dispID = "Denied", 2, "Blocked", 2
	case final == acs.Ask:
		action, actionID, disp, dispID = "Other", 99, "Approval Required", 99
	case r.Decision == policy.DecideNone:
		action, actionID, disp, dispID = "Observed", 99, "Detected", 15
	}
	md := env.req.Params.Metadata
	trigger := map[string]any{"role": "trigger", "request_id": env.req.Params.RequestID, "stream_seq": seq, "hook": env.spec.Hook,
		"method": env.spec.Method, "turn_id": md.TurnID, "turn_index": turn, "time": env.req.Params.Timestamp}
	if tool := toolName(env); tool != "" {
		trigger["tool"] = tool
	}
	evidences := []alert.Evidence{{Data: trigger}}
	tg := map[string]any{"rule_id": r.ID, "severity": r.Severity, "tags": r.Tags, "mode": r.Mode, "rule_decision": r.Decision,
		"decision": final, "tenant": st.Tenant, "session_id": st.SessionID, "agent_id": st.AgentID, "turn_id": md.TurnID,
		"turn_index": turn, "request_id": env.req.Params.RequestID, "stream_seq": seq, "hook": env.spec.Hook}
	if h.Taint != nil {
		evidences = append(evidences,
			alert.Evidence{Data: taintEvidence("taint_anchor", h.TaintLabel, h.Taint.Last, turn)},
			alert.Evidence{Data: taintEvidence("taint_first", h.TaintLabel, h.Taint.First, turn)})
		tg["taint"] = map[string]any{"label": h.TaintLabel, "turns_ago": h.AgeTurns, "hits": h.Taint.Hits}
	}
	if r.Threshold != nil {
		tg["count"], tg["max"] = h.Count, r.Threshold.Max
	}
	return sessionFinding{ruleID: r.ID, title: r.Title, desc: r.Description, types: r.Tags, severity: r.Severity, message: h.Message,
		action: action, actionID: actionID, disposition: disp, dispositionID: dispID,
		tenant: st.Tenant, sessionID: st.SessionID, agentID: st.AgentID, evidences: evidences, turnguard: tg}.alert(env)
}

// sessionFinding is what differs between the Detection Findings raised on
// one envelope of a session (a rule hit, a foreign caller); alert builds
// the rest the same way for all of them.
type sessionFinding struct {
	ruleID, title, desc, severity, message string
	types                                  []string
	action, disposition                    string
	actionID, dispositionID                int
	tenant, sessionID, agentID             string
	evidences                              []alert.Evidence
	turnguard                              map[string]any
}

// alert is the finding raised on env, published on the session tenant's
// alert subject of its severity and rule.
func (f sessionFinding) alert(env *envelope) Alert {
	sevID, sev := alert.SeverityID(f.severity)
	seq := env.step.Seq
	ms := env.step.Time.UnixMilli()
	finding := alert.Finding{
		ActivityID: 1, ActivityName: "Create", CategoryUID: alert.CategoryUID, CategoryName: "Findings",
		ClassUID: alert.ClassUID, ClassName: "Detection Finding", TypeUID: alert.TypeCreate, TypeName: "Detection Finding: Create",
		Time: ms, SeverityID: sevID, Severity: sev, StatusID: 1, Status: "New",
		ActionID: f.actionID, Action: f.action, DispositionID: f.dispositionID, Disposition: f.disposition, IsAlert: true, Message: f.message,
		FindingInfo: alert.FindingInfo{UID: alert.UID(f.ruleID, f.tenant, f.sessionID, seq), Title: f.title, Desc: f.desc,
			Types: f.types, CreatedTime: ms, Analytic: alert.Analytic{UID: f.ruleID, Name: f.title, TypeID: 1, Type: "Rule"}},
		Metadata:  alert.Metadata{Version: alert.OCSFVersion, LogName: "acs.alerts", Product: alert.Product{Name: alert.ProductName, VendorName: alert.ProductName}},
		Actor:     alert.Actor{User: alert.User{UID: f.agentID, Name: env.req.Params.Metadata.AgentName, TypeID: 99, Type: "AI Agent"}, Session: alert.Session{UID: f.sessionID}},
		Evidences: f.evidences,
		Unmapped:  map[string]any{"turnguard": f.turnguard},
	}
	return Alert{Subject: alert.Subject(f.tenant, f.severity, f.ruleID), MsgID: alert.MsgID(f.ruleID, seq), RuleID: f.ruleID, Finding: finding}
}

func taintEvidence(role, label string, h turnstate.TaintHit, turn int) map[string]any {
	m := map[string]any{"role": role, "taint": label, "request_id": h.RequestID, "stream_seq": h.Seq, "hook": h.Hook,
		"tool": h.Tool, "turn_index": h.Turn, "turns_ago": max(turn-h.Turn, 0), "time": h.Time, "source": h.Source,
		"provenance_ids": h.ProvenanceIDs, "origins": h.Origins, "source_ids": h.SourceIDs}
	if h.Session != "" {
		// Inherited from a parent: the request id and sequence are its.
		m["session_id"] = h.Session
	}
	return m
}

func toolName(env *envelope) string {
	p, _ := env.payload.(map[string]any)
	t, _ := p["tool"].(map[string]any)
	name, _ := t["name"].(string)
	return name
}
