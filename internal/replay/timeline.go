package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// Timeline is one session laid out step by step, as a person reads it.
type Timeline struct {
	Tenant    string `json:"tenant"`
	SessionID string `json:"session_id"`
	Agent     string `json:"agent"`
	// Ruleset is the rule set the taint events were computed with.
	Ruleset string `json:"ruleset"`
	// DecidedBy are the rule sets the recorded decisions name
	// (policy_data.turnguard.ruleset), "name revision", in order of first
	// use: a step's "(now …)" is what Ruleset decides, which differs
	// from what decided when these are others.
	DecidedBy []string `json:"decided_by,omitempty"`
	Steps     []Step   `json:"steps"`
	// ChainOK is set when every recorded chain_hash matched; FirstBreak
	// is the stream sequence where it first did not.
	ChainOK    bool   `json:"chain_ok"`
	FirstBreak uint64 `json:"first_break,omitempty"`
	// Chained counts the steps with a chain entry (recorded and
	// recomputed): every step but refusals, pings and steps without a
	// recorded decision. It is what replay verify calls chain entries.
	Chained int `json:"chained"`
	// Turns is the session's turn count as its state keeps it
	// (turns_started): turns opened by an allowed turnStart or implicitly;
	// a denied turnStart does not count, nor does a refused one.
	Turns int `json:"turns"`
	// Ignored counts messages on the session's decision subject and its
	// tenant's alert subjects that are not verified answers and were left
	// out (Recorded.Ignored); replay verify says what they are.
	Ignored int `json:"ignored_messages,omitempty"`
}

// Step is one envelope of the session and what became of it. The field
// names are stable: they are the JSON output.
type Step struct {
	Seq uint64 `json:"seq"`
	// Time is the envelope's own timestamp ("" when it has none); Stored
	// is when the stream stored it.
	Time      string `json:"time"`
	Stored    string `json:"stored,omitempty"`
	Hook      string `json:"hook"`
	RequestID string `json:"request_id,omitempty"`
	TurnID    string `json:"turn_id,omitempty"`
	// Turn is the index of the step's turn (1 = the first turnStart);
	// Depth its nesting under enclosing turns.
	Turn    int    `json:"turn"`
	Depth   int    `json:"depth"`
	Tool    string `json:"tool,omitempty"`
	Summary string `json:"summary,omitempty"`
	// Decision is the recorded decision ("error -32602" for refusals,
	// "none" when no decision was recorded).
	Decision    string   `json:"decision"`
	Reasoning   string   `json:"reasoning,omitempty"`
	ReasonCodes []string `json:"reason_codes,omitempty"`
	Rules       []string `json:"rules,omitempty"`
	Violations  []string `json:"violations,omitempty"`
	Alerts      []string `json:"alerts,omitempty"`
	// Taint lists what the step did to taint labels; Tainted the labels
	// set after it.
	Taint   []TaintEvent `json:"taint,omitempty"`
	Tainted []string     `json:"tainted,omitempty"`
	// Chain is ok, broken (the recorded chain_hash differs from the
	// recomputed one), unchained (refusals and pings are not chained), or
	// unrecorded.
	Chain     string `json:"chain"`
	ChainHash string `json:"chain_hash,omitempty"`
	// Replayed is the decision the core gives now, when it differs from
	// the recorded one.
	Replayed string `json:"replayed,omitempty"`
}

// TaintEvent is a taint label set, refreshed or cleared by a step.
type TaintEvent struct {
	Label         string   `json:"label"`
	Event         string   `json:"event"`
	By            string   `json:"by,omitempty"`
	ProvenanceIDs []string `json:"provenance_ids,omitempty"`
	Origins       []string `json:"origins,omitempty"`
	SourceIDs     []string `json:"source_ids,omitempty"`
	// UntilTurn and UntilTime end the label's default window (0 / "": no
	// bound of that kind; it holds until cleared). UntilTurn is the turn
	// index it ends at if every turn until then ages it: a turn that
	// continues the agent's work (turnstate.ContinuesWork) pushes it on.
	UntilTurn int    `json:"until_turn,omitempty"`
	UntilTime string `json:"until_time,omitempty"`
}

// BuildTimeline replays one session (all of its envelopes up to the end of
// r) with rs, joining the recorded decisions and alerts.
func BuildTimeline(ctx context.Context, src *Source, g *guardian.Guardian, rs *policy.Set, r Range, tenant, sessionID string) (*Timeline, error) {
	rec, err := src.ReadRecorded(ctx, tenant, sessionID, time.Time{}, DecodeBodies)
	if err != nil {
		return nil, err
	}
	tl := &Timeline{Tenant: tenant, SessionID: sessionID, ChainOK: true, Ignored: rec.Ignored}
	if rs != nil {
		tl.Ruleset = rs.Name + " " + rs.Revision
	}
	eng := NewEngine(g, rs)
	key := acs.SessionKey(tenant, sessionID)
	links, err := src.SpawnLinks(ctx, tenant, r.To)
	if err != nil {
		return nil, err
	}
	depth := map[string]int{}
	whole := Range{From: 1, To: r.To, ToTime: r.ToTime}
	err = src.Each(ctx, whole, sessionFilters(turnstate.SpawnConnected(map[string]bool{key: true}, links)), func(e Envelope) error {
		if e.RouteErr != nil || e.Route.SessionKey() != key {
			// Another session of the spawn tree: an ancestor shapes a
			// subagent's first state, a subagent's taint reaches its
			// parent at subagentStop. Not a step of this timeline.
			eng.Decide(e)
			return nil
		}
		before := cloneTaints(eng.Memory.Sessions[key])
		out := eng.Decide(e)
		after := eng.Memory.Sessions[key]
		st := describe(e, out)
		if tl.Agent == "" {
			tl.Agent = guardian.AgentOf(e.Data)
		}
		if after != nil {
			st.Turn = after.CurrentTurn(st.TurnID)
			st.Depth = stepDepth(depth, out, e.Route.Hook, after)
			st.Taint = taintEvents(rs, before, after.Taints)
			for label := range after.Taints {
				st.Tainted = append(st.Tainted, label)
			}
			slices.Sort(st.Tainted)
		}
		joinRecorded(&st, out, rec, e.Seq)
		if d, ok := rec.Decisions[e.Seq]; ok && d.Response.Result != nil {
			if by := rulesetOf(d.Response.Result.PolicyData); by != "" && !slices.Contains(tl.DecidedBy, by) {
				tl.DecidedBy = append(tl.DecidedBy, by)
			}
		}
		if st.Chain == "broken" && tl.ChainOK {
			tl.ChainOK, tl.FirstBreak = false, e.Seq
		}
		if st.Chain == "ok" || st.Chain == "broken" {
			tl.Chained++
		}
		if after != nil {
			tl.Turns = after.TurnsStarted
		}
		tl.Steps = append(tl.Steps, st)
		return nil
	})
	return tl, err
}

// rulesetOf is the rule set a recorded decision names in its
// policy_data: "name revision", or "".
func rulesetOf(pd map[string]any) string {
	tg, _ := pd["turnguard"].(map[string]any)
	rs, _ := tg["ruleset"].(map[string]any)
	name, _ := rs["name"].(string)
	rev, _ := rs["revision"].(string)
	if name == "" && rev == "" {
		return ""
	}
	return name + " " + rev
}

func cloneTaints(s *turnstate.Session) map[string]turnstate.Taint {
	out := map[string]turnstate.Taint{}
	if s != nil {
		for k, t := range s.Taints {
			out[k] = *t
		}
	}
	return out
}

// describe is what a step says about itself, from the envelope and the
// core's outcome.
func describe(e Envelope, out guardian.Outcome) Step {
	st := Step{Seq: e.Seq, Hook: e.Route.Hook, RequestID: out.RequestID, TurnID: out.TurnID}
	if e.RouteErr != nil {
		st.Hook = e.Subject
	}
	// Refused envelopes too: the outcome's facts are only what a refusal
	// could read, so the envelope is read for its time and payload.
	f, _ := guardian.ReadFacts(e.Data)
	st.Time, st.Stored = f.Timestamp, e.Time.UTC().Format(time.RFC3339Nano)
	st.Tool, st.Summary = summarize(e.Route.Hook, f.PayloadValue())
	for _, v := range out.Violations {
		st.Violations = append(st.Violations, v.Name)
	}
	return st
}

// summarize gives a step's tool and a one-line summary of its payload.
func summarize(hook string, payload any) (tool, summary string) {
	p, _ := payload.(map[string]any)
	if t, ok := p["tool"].(map[string]any); ok {
		tool, _ = t["name"].(string)
	}
	switch hook {
	case "toolCallRequest":
		args, _ := p["arguments"].(map[string]any)
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(args)) {
			v := args[k]
			if a, ok := v.(map[string]any); ok {
				v = a["value"]
			}
			raw, _ := json.Marshal(v)
			parts = append(parts, k+"="+string(raw))
		}
		summary = strings.Join(parts, " ")
	case "toolCallResult":
		summary, _ = p["exit_status"].(string)
		if outs, ok := p["outputs"].([]any); ok && len(outs) > 0 {
			if o, ok := outs[0].(map[string]any); ok {
				raw, _ := json.Marshal(o["value"])
				summary += " " + string(raw)
			}
		}
	case "userMessage", "agentResponse":
		if cs, ok := p["content"].([]any); ok && len(cs) > 0 {
			if c, ok := cs[0].(map[string]any); ok {
				summary, _ = c["value"].(string)
			}
		}
	case "turnStart":
		summary, _ = p["triggered_by"].(string)
	case "turnEnd":
		summary, _ = p["outcome"].(string)
	case "sessionEnd":
		summary, _ = p["reason"].(string)
		if summary == "" {
			summary, _ = p["session_reason"].(string)
		}
	}
	return tool, truncate(strings.Join(strings.Fields(summary), " "), 80)
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// stepDepth nests a step under its turn: a turn's own turnStart and
// turnEnd sit at the turn's depth, its other steps one deeper.
func stepDepth(depth map[string]int, out guardian.Outcome, hook string, s *turnstate.Session) int {
	id := out.TurnID
	if id == "" {
		return 0
	}
	if hook == "turnStart" {
		d := 0
		if t := s.OpenTurn(id); t != nil && t.ParentTurnID != "" {
			if pd, ok := depth[t.ParentTurnID]; ok {
				d = pd + 1
			}
		}
		depth[id] = d
		return d
	}
	d, ok := depth[id]
	if !ok {
		return 0
	}
	if hook == "turnEnd" {
		return d
	}
	return d + 1
}

// taintEvents compares a session's taint labels before and after a step.
func taintEvents(rs *policy.Set, before map[string]turnstate.Taint, after map[string]*turnstate.Taint) []TaintEvent {
	var evs []TaintEvent
	for _, label := range sortedTaintKeys(before, after) {
		b, had := before[label]
		a, has := after[label]
		switch {
		case had && !has:
			evs = append(evs, TaintEvent{Label: label, Event: "clear"})
		case has && (!had || a.Last.Seq != b.Last.Seq):
			ev := TaintEvent{Label: label, Event: "set", By: strings.TrimSpace(a.Last.Hook + " " + a.Last.Tool),
				ProvenanceIDs: a.Last.ProvenanceIDs, Origins: a.Last.Origins, SourceIDs: a.Last.SourceIDs}
			if had {
				ev.Event = "refresh"
			}
			if rs != nil {
				for _, t := range rs.Taints {
					if t.ID != label {
						continue
					}
					if t.Window.Turns != nil {
						ev.UntilTurn = a.Last.Turn + *t.Window.Turns
					}
					if t.Window.Duration != nil {
						ev.UntilTime = a.Last.Time.Add(*t.Window.Duration).UTC().Format(time.RFC3339)
					}
				}
			}
			evs = append(evs, ev)
		}
	}
	return evs
}

func sortedTaintKeys(a map[string]turnstate.Taint, b map[string]*turnstate.Taint) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// joinRecorded fills a step with what was recorded for it and checks the
// chain hash the core recomputed against the recorded one.
func joinRecorded(st *Step, out guardian.Outcome, rec Recorded, seq uint64) {
	for _, a := range rec.Alerts[seq] {
		st.Alerts = append(st.Alerts, a.RuleID)
	}
	slices.Sort(st.Alerts)
	replayed, recomputed := responseKind(out.Response), chainHashOf(out.Response)
	d, ok := rec.Decisions[seq]
	if !ok {
		st.Decision, st.Chain = "none", "unrecorded"
		if replayed != "none" {
			st.Replayed = replayed
		}
		return
	}
	st.Decision = d.Kind()
	if res := d.Response.Result; res != nil {
		st.Reasoning, st.ReasonCodes, st.ChainHash = res.Reasoning, res.ReasonCodes, res.ChainHash
		for _, ref := range res.PolicyReferences {
			if ref.PolicyID != guardian.ProtocolPolicyID {
				st.Rules = append(st.Rules, ref.RuleID)
			}
		}
	} else if d.Response.Error != nil {
		st.Reasoning = d.Response.Error.Message
	} else if d.ParseErr != nil {
		st.Reasoning = d.ParseErr.Error()
	}
	switch {
	case st.ChainHash == "" && recomputed == "":
		st.Chain = "unchained"
	case st.ChainHash == recomputed:
		st.Chain = "ok"
	default:
		st.Chain = "broken"
	}
	if replayed != st.Decision {
		st.Replayed = replayed
	}
}

// chainHashOf is a response's chain_hash ("" for errors, which are not
// chained).
func chainHashOf(r *acs.Response) string {
	if r == nil || r.Result == nil {
		return ""
	}
	return r.Result.ChainHash
}

// WriteTable prints a timeline for a terminal.
func WriteTable(w io.Writer, tl *Timeline) error {
	fmt.Fprintf(w, "session %s  tenant %s  agent %s\nrules   %s\n", tl.SessionID, tl.Tenant, tl.Agent, tl.Ruleset)
	if others := slices.DeleteFunc(slices.Clone(tl.DecidedBy), func(by string) bool { return by == tl.Ruleset }); len(others) > 0 {
		// Say it plainly: the "(now …)" marks compare with other rules
		// than the ones that decided.
		fmt.Fprintf(w, "decided %s — not the rules above: \"(now …)\" is what they decide; --rules (or --config) with the files that decided re-decides with those\n",
			strings.Join(others, ", "))
	}
	// The counts use the words of the session state and of replay verify:
	// a step per envelope, a chain entry per chained decision, turns as
	// turns_started counts them.
	fmt.Fprintf(w, "steps   %s, %s, %s\n", plural(len(tl.Steps), "envelope", "envelopes"),
		plural(tl.Chained, "chain entry", "chain entries"), plural(tl.Turns, "turn", "turns"))
	if tl.ChainOK {
		fmt.Fprintf(w, "chain   intact%s\n", unchainedNote(len(tl.Steps)-tl.Chained))
	} else {
		fmt.Fprintf(w, "chain   BROKEN at stream sequence %d\n", tl.FirstBreak)
	}
	if tl.Ignored > 0 {
		fmt.Fprintf(w, "ignored %s on the decision and alert subjects that are not verified answers (replay verify lists them)\n", plural(tl.Ignored, "message", "messages"))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tTURN\tSTEP\tDECISION\tWHY\tALERTS\tTAINT\tCHAIN")
	for _, s := range tl.Steps {
		step := strings.Repeat("  ", s.Depth) + s.Hook
		if s.Tool != "" {
			step += " " + s.Tool
		}
		if s.Summary != "" {
			step += ": " + truncate(s.Summary, 48)
		}
		why := strings.Join(s.ReasonCodes, ",")
		if len(s.Rules) > 0 {
			why = strings.TrimPrefix(why+" ["+strings.Join(s.Rules, ",")+"]", " ")
		}
		decision := s.Decision
		if s.Replayed != "" {
			decision += " (now " + s.Replayed + ")"
		}
		var taint []string
		for _, ev := range s.Taint {
			t := ev.Event + " " + ev.Label
			if ev.By != "" {
				t += " by " + ev.By
			}
			if ev.UntilTurn > 0 {
				t += fmt.Sprintf(" until turn %d", ev.UntilTurn)
			}
			taint = append(taint, t)
		}
		turn := "-"
		if s.Turn > 0 {
			turn = fmt.Sprint(s.Turn)
		}
		when := s.Time
		if when == "" {
			when = s.Stored
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Seq, shortTime(when), turn, step, decision, why,
			strings.Join(s.Alerts, ","), strings.Join(taint, "; "), s.Chain)
	}
	return tw.Flush()
}

func shortTime(ts string) string {
	if t, err := time.Parse(time.RFC3339Nano, ts); err == nil {
		return t.UTC().Format("15:04:05")
	}
	return ts
}

// WriteJSON prints a timeline as JSON Lines: one object per step.
func WriteJSON(w io.Writer, tl *Timeline) error {
	enc := json.NewEncoder(w)
	for _, s := range tl.Steps {
		if err := enc.Encode(s); err != nil {
			return err
		}
	}
	return nil
}
