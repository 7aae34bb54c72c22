package policy

import (
	"slices"
	"strings"
	"text/template"

	"github.com/turnguard/turnguard/internal/core/acs"
)

// Compiling one rule definition: its hooks, decision, ask block, guard
// (after or threshold), message and exceptions, and the windows they use.

// hookName maps what a rule may write in on: — a steps/* hook name
// ("toolCallRequest"), its method ("steps/toolCallRequest"), or an agbom/*
// method — to the name rules use. system/ping is never evaluated.
func hookName(s string) (string, bool) {
	for _, m := range acs.Methods() {
		if m.Scope == acs.Liveness {
			continue
		}
		if name := ruleHook(m); s == name || s == m.Method {
			return name, true
		}
	}
	return "", false
}

// ruleHook is the name rules use for a method: the steps/* hook name, or
// the method itself for agbom/*.
func ruleHook(m acs.MethodSpec) string {
	if strings.HasPrefix(m.Method, "steps/") {
		return m.Hook
	}
	return m.Method
}

func specOf(hook string) *acs.MethodSpec {
	if strings.Contains(hook, "/") {
		return acs.LookupMethod(hook)
	}
	return acs.LookupMethod("steps/" + hook)
}

// rule checks and compiles one rule definition, reporting every problem
// it finds; nil only for a rule without an id.
func (c *compiler) rule(f *File, d *RuleDef) *Rule {
	r := &Rule{ID: d.ID.Value, Title: d.Title.Value, Description: d.Description, Tags: d.Tags, File: f.Path, Pos: d.ID.Pos, ReasonCodes: d.ReasonCodes}
	switch {
	case !d.ID.Set():
		c.errf(f, d.When.Pos, "a rule needs an id")
		return nil
	case !isToken(r.ID):
		c.errf(f, d.ID.Pos, "rule id %q: letters, digits, '-' and '_' (it becomes a subject token)", r.ID)
	}
	if prev, ok := c.seen["rule:"+r.ID]; ok {
		c.errf(f, d.ID.Pos, "rule %q is declared twice (first at line %d)", r.ID, prev.Line)
	}
	c.seen["rule:"+r.ID] = d.ID.Pos
	if !d.Title.Set() {
		c.errf(f, d.ID.Pos, "rule %s: title is required", r.ID)
	}
	r.Severity = d.Severity.Value
	if !slices.Contains(severities, r.Severity) {
		c.errf(f, posOr(d.Severity, d.ID), "rule %s: severity %q: want one of %v", r.ID, r.Severity, severities)
	}
	r.Mode = Mode(d.Mode.Value)
	switch {
	case !d.Mode.Set():
		r.Mode = Enforce
	case r.Mode != Enforce && r.Mode != Shadow && r.Mode != Off:
		c.errf(f, d.Mode.Pos, "rule %s: mode %q: want enforce, shadow or off", r.ID, d.Mode.Value)
	}
	r.Hooks = c.ruleHooks(f, d, r.ID)
	c.ruleDecision(f, d, r)
	if !d.When.Set() {
		c.errf(f, d.ID.Pos, "rule %s: when is required (use 'true' to match every event of its hooks)", r.ID)
	} else {
		r.when = c.expr(f, d.When, "when")
	}
	c.ruleGuard(f, d, r)
	if d.Message.Set() {
		tmpl, err := template.New(r.ID).Option("missingkey=zero").Parse(d.Message.Value)
		if err != nil {
			c.errf(f, d.Message.Pos, "rule %s: message template: %v", r.ID, err)
		}
		r.message = tmpl
	}
	for _, e := range d.Exceptions {
		if !e.Name.Set() {
			c.errf(f, e.When.Pos, "rule %s: an exception needs a name", r.ID)
		}
		if p := c.expr(f, e.When, "exception "+e.Name.Value); p != nil {
			r.exceptions = append(r.exceptions, exception{name: e.Name.Value, when: p})
		}
	}
	return r
}

// ruleHooks is the rule names of the hooks in the rule's on: list, nil for
// ["*"] (every hook). Unknown names are reported and left out.
func (c *compiler) ruleHooks(f *File, d *RuleDef, id string) []string {
	var hooks []string
	if len(d.On) == 0 {
		c.errf(f, d.ID.Pos, `rule %s: on is required: the hooks it runs on, or ["*"] for every hook`, id)
	}
	for _, h := range d.On {
		if h.Value == "*" {
			if len(d.On) > 1 {
				c.errf(f, h.Pos, `rule %s: "*" stands alone in on`, id)
			}
			continue
		}
		name, ok := hookName(h.Value)
		if !ok {
			c.errf(f, h.Pos, "rule %s: unknown hook %q", id, h.Value)
			continue
		}
		hooks = append(hooks, name)
	}
	return hooks
}

// ruleDecision sets r.Decision and r.Ask, checking the decision against
// what each of r.Hooks permits (so r.Hooks must be set) and the ask block
// against the decision.
func (c *compiler) ruleDecision(f *File, d *RuleDef, r *Rule) {
	r.Decision = Decision(d.Decision.Value)
	validDecision := true
	switch r.Decision {
	case DecideDeny, DecideAsk, DecideAllow, DecideNone:
	default:
		validDecision = false
		c.errf(f, posOr(d.Decision, d.ID), "rule %s: decision %q: want deny, ask, allow or none", r.ID, d.Decision.Value)
	}
	if disp := acs.Disposition(r.Decision); validDecision && r.Decision != DecideNone {
		for i, h := range r.Hooks {
			if spec := specOf(h); spec != nil && !spec.Permits(disp) {
				c.errf(f, d.On[i].Pos, "rule %s: %s cannot return %s (it permits %v)", r.ID, h, disp, spec.Permitted)
			}
		}
	}
	switch {
	case r.Decision == DecideAsk && d.Ask == nil:
		c.errf(f, d.Decision.Pos, "rule %s: decision ask needs an ask block (approver, question, timeout_seconds)", r.ID)
	case r.Decision == DecideAsk:
		r.Ask = c.ask(f, r.ID, d.Ask)
	case d.Ask != nil:
		c.errf(f, d.Decision.Pos, "rule %s: an ask block only goes with decision ask", r.ID)
	}
}

// ruleGuard sets what else must hold besides when: r.After (a taint guard)
// or r.Threshold, refusing a rule with both.
func (c *compiler) ruleGuard(f *File, d *RuleDef, r *Rule) {
	if d.After != nil && d.Threshold != nil {
		c.errf(f, d.ID.Pos, "rule %s: a rule is a taint guard (after) or a threshold, not both", r.ID)
	}
	if a := d.After; a != nil {
		g := &Guard{Taint: a.Taint.Value}
		if !c.taintIDs[g.Taint] {
			c.errf(f, posOr(a.Taint, d.ID), "rule %s: after.taint %q is not a declared taint label", r.ID, g.Taint)
		}
		if a.Within != nil {
			g.Within = c.window(f, a.Within, "after.within")
		}
		r.After = g
	}
	if t := d.Threshold; t != nil {
		r.Threshold = c.threshold(f, r.ID, t)
	}
}

func (c *compiler) ask(f *File, id string, a *AskDef) *acs.AskDetails {
	ad := &acs.AskDetails{Approver: acs.Approver{Type: a.Approver.Type.Value, ID: a.Approver.ID.Value, Endpoint: a.Approver.Endpoint},
		Question: a.Question.Value, TimeoutSeconds: a.TimeoutSeconds.Value, Options: a.Options}
	if !slices.Contains([]string{"human", "agent", "service"}, ad.Approver.Type) || ad.Approver.ID == "" {
		c.errf(f, posOr(a.Approver.Type, a.Question), "rule %s: ask.approver needs type (human, agent or service) and id", id)
	}
	if ad.Question == "" {
		c.errf(f, a.Approver.ID.Pos, "rule %s: ask.question is required", id)
	}
	if ad.TimeoutSeconds < 1 {
		c.errf(f, a.TimeoutSeconds.Pos, "rule %s: ask.timeout_seconds must be at least 1", id)
	}
	switch a.TimeoutDisposition.Value {
	case "", "deny", "allow":
		ad.TimeoutDisposition = a.TimeoutDisposition.Value
	default:
		c.errf(f, a.TimeoutDisposition.Pos, "rule %s: ask.timeout_disposition %q: want allow or deny", id, a.TimeoutDisposition.Value)
	}
	return ad
}

func (c *compiler) threshold(f *File, id string, t *ThresholdDef) *Threshold {
	th := &Threshold{Max: t.Max.Value, Per: t.Per.Value, Consecutive: t.Consecutive}
	if !t.Max.set || th.Max < 1 {
		c.errf(f, t.Max.Pos, "rule %s: threshold.max must be at least 1 (the rule hits on the event after the max-th)", id)
	}
	switch t.Key.Value {
	case "", "session":
	case "agent":
		th.ByAgent = true
		if t.Within == nil || t.Within.Duration == nil || t.Within.Turns != nil || th.Per != "" || th.Consecutive {
			c.errf(f, t.Key.Pos, "rule %s: an agent-keyed threshold counts within a duration (within: {duration: …}): turns belong to sessions", id)
		}
	default:
		c.errf(f, t.Key.Pos, "rule %s: threshold.key %q: want session or agent", id, t.Key.Value)
	}
	scopes := 0
	if th.Per != "" {
		scopes++
		if th.Per != "turn" && th.Per != "session" {
			c.errf(f, t.Per.Pos, "rule %s: threshold.per %q: want turn or session", id, th.Per)
		}
	}
	if t.Within != nil {
		scopes++
		w := c.window(f, t.Within, "threshold.within")
		th.Within = &w
		if w.Turns == nil && w.Duration == nil {
			c.errf(f, t.Within.pos, "rule %s: threshold.within needs turns or duration", id)
		}
		if w.Steps != nil {
			c.errf(f, t.Within.Steps.Pos, "rule %s: threshold.within counts in turns or a duration, not steps", id)
		}
	}
	if th.Consecutive {
		scopes++
	}
	if scopes != 1 {
		c.errf(f, t.Max.Pos, "rule %s: a threshold counts in exactly one of per (turn or session), within (a sliding window) or consecutive", id)
	}
	return th
}

// window checks a window: bounds must be positive (turns may be 0: the
// anchor's turn only).
func (c *compiler) window(f *File, w *WindowDef, what string) Window {
	var out Window
	if w.Turns == nil && w.Duration == nil && w.Steps == nil {
		c.errf(f, w.pos, "%s needs turns, steps or duration (or leave it out for no bound)", what)
	}
	if w.Steps != nil {
		if w.Steps.Value < 0 || w.Steps.Value > 100000 {
			c.errf(f, w.Steps.Pos, "%s.steps %d: want 0 (the envelope that set the label only) to 100000", what, w.Steps.Value)
		}
		n := w.Steps.Value
		out.Steps = &n
	}
	if w.Turns != nil {
		if w.Turns.Value < 0 || w.Turns.Value > 100000 {
			c.errf(f, w.Turns.Pos, "%s.turns %d: want 0 (the same turn only) to 100000", what, w.Turns.Value)
		}
		n := w.Turns.Value
		out.Turns = &n
	}
	if w.Duration != nil {
		if w.Duration.Value <= 0 {
			c.errf(f, w.Duration.Pos, "%s.duration %s: want a positive duration", what, w.Duration.Value)
		}
		d := w.Duration.Value
		out.Duration = &d
	}
	return out
}
