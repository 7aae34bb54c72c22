package policy

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/interpreter"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/shellcmd"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// Hit is one rule that matched an envelope.
type Hit struct {
	Rule    *Rule
	Message string
	// Taint and TaintLabel are the label behind a guard's hit; AgeTurns is
	// how many turns ago the window's anchor was set.
	TaintLabel string
	Taint      *turnstate.Taint
	AgeTurns   int
	// Count is a threshold rule's count including this event.
	Count int
}

// EvalError is a condition that failed to evaluate. The caller applies
// its evaluation-error posture: a rule set never fails open silently.
type EvalError struct {
	// Rule is the rule whose condition failed, nil for a taint condition.
	Rule  *Rule
	Where string
	Err   error
}

func (e EvalError) Error() string { return fmt.Sprintf("%s: %v", e.Where, e.Err) }

// Result is what the rules concluded about one envelope.
type Result struct {
	Hits   []Hit
	Errors []EvalError
	// AgentChanged is set when an agent-keyed threshold counted the
	// envelope: the agent's state must be saved.
	AgentChanged bool
	// Turn is the index of the turn the envelope belongs to.
	Turn       int
	Provenance ProvenanceView
	// Unanswered are the labels an unanswered source would set for this
	// call: the caller remembers them (Set.Decided) once the decision lets
	// the call run.
	Unanswered []turnstate.UnansweredCall
	// Files are the files the call writes that a files source gives a
	// label: remembered once the decision lets the call run (Decided).
	Files []turnstate.FileTaint
	// Stop is the stop a call of a tool classed stops_task makes while a
	// label is held: remembered once the decision lets it run (Decided),
	// to let its source go at its result.
	Stop *turnstate.StopCall
	// Pointed: the call names, in every argument, a source the user
	// typed — a page at their URL, a file at their path — and lists no
	// records: once the decision lets it run, its output is content the
	// user pointed at (Decided, lineage.Index.Point).
	Pointed bool
}

// Evaluate runs the rule set on one envelope already applied to sess. It
// updates the session's rule state — provenance memory, taint labels,
// threshold counters — in this order: taints are cleared and set first, so
// a guard sees the taint its own envelope carries; then every rule of the
// envelope's hook is evaluated. agent is the envelope's agent's shared
// state, needed only when AgentKeyed. It reads nothing but its arguments.
func (s *Set) Evaluate(sess *turnstate.Session, agent *turnstate.Agent, in Input) Result {
	e := &evalCtx{set: s, sess: sess, agent: agent, in: in, hook: ruleHook(*in.Spec)}
	e.turn = sess.CurrentTurn(in.Req.Params.Metadata.TurnID)
	e.windowTurn = sess.CurrentWindowTurn(in.Req.Params.Metadata.TurnID)
	res := Result{Turn: e.turn}
	e.prov = e.provenance()
	res.Provenance = e.prov
	e.noteActivation()
	e.updateTaints(&res)
	if s.usesLineage {
		e.updateLineage()
	}
	e.taintsReady = true
	e.inheritTaints()
	for _, r := range s.byHook[e.hook] {
		if r.Mode == Off {
			continue
		}
		if h, ok := e.rule(r, &res); ok {
			res.Hits = append(res.Hits, h)
			if sess.RuleHits == nil {
				sess.RuleHits = map[string]uint64{}
			}
			sess.RuleHits[r.ID]++
		}
	}
	e.pruneCounters()
	if s.usesLineage && e.hook == "toolCallRequest" {
		res.Pointed = e.pointsAtSource()
	}
	if e.agentCounted {
		if agent.Applied == nil {
			agent.Applied = map[string]uint64{}
		}
		agent.Applied[strconv.Itoa(in.Partition)] = in.Seq
		res.AgentChanged = true
	}
	return res
}

type evalCtx struct {
	set   *Set
	sess  *turnstate.Session
	agent *turnstate.Agent
	in    Input
	// agentCounted is set once an agent-keyed counter took the envelope.
	agentCounted bool
	hook         string
	// contentTaints is set once the envelope set a taint label itself
	// (setTaint): what it brings is content that taints, which the lineage
	// index notes (lineage.Source.Taints).
	contentTaints bool
	turn          int
	// windowTurn is the envelope's turn among those that age windows
	// (turnstate.Session.WindowTurns).
	windowTurn int
	prov       ProvenanceView

	// taints is built on first use once the labels are final (most
	// conditions never read it); before that, while taint conditions run,
	// it reads as nil.
	taints      map[string]TaintView
	taintsReady bool
	tool        *ToolView
	payload     map[string]any
	lineage     map[string]LineageView
	// argTexts are the call's argument texts (evalCtx.argumentTexts).
	argTexts map[string][]string

	// The interface forms of the variables that cannot change during one
	// Evaluate, kept once built: CEL resolves a name on every evaluation
	// that reads it, and boxing a string or a view struct anew each time
	// was an allocation per condition. The strings and the violations are
	// kept as CEL values, which CEL takes as they are: a Go string or
	// slice it converts (boxes, wraps) on every read.
	hookVal, methodVal, toolVal, provVal, violationsVal, contentVal any
	taintsVal, payloadVal, timeVal, lineageVal                      any
}

// specValuesOf holds the CEL values of the hook and method variables of
// every method, for a Set to build once: nearly every condition reads
// hook.
func specValuesOf() map[string][2]any {
	m := map[string][2]any{}
	for _, spec := range acs.Methods() {
		m[spec.Method] = [2]any{types.String(ruleHook(spec)), types.String(spec.Method)}
	}
	return m
}

// specValue is the CEL value of hook (i=0) or method (i=1).
func (e *evalCtx) specValue(i int) any {
	if v, ok := e.set.specValues[e.in.Spec.Method]; ok && v[0] == types.String(e.hook) {
		return v[i]
	}
	if i == 0 {
		return types.String(e.hook)
	}
	return types.String(e.in.Spec.Method)
}

// ResolveName gives CEL the envelope's variables, computing each on first
// use.
func (e *evalCtx) ResolveName(name string) (any, bool) {
	switch name {
	case "hook":
		if e.hookVal == nil {
			e.hookVal = e.specValue(0)
		}
		return e.hookVal, true
	case "method":
		if e.methodVal == nil {
			e.methodVal = e.specValue(1)
		}
		return e.methodVal, true
	case "tool":
		// The views by pointer: CEL reads a struct's fields the same
		// through one, and the pointer, unlike the struct, boxes without
		// a copy. Neither view changes once built.
		if e.toolVal == nil {
			e.toolVal = e.toolView()
		}
		return e.toolVal, true
	case "session":
		return e.sessionView(), true
	case "turn":
		return e.turnView(), true
	case "provenance":
		if e.provVal == nil {
			e.provVal = &e.prov
		}
		return e.provVal, true
	case "violations":
		if e.violationsVal == nil {
			if len(e.in.Violations) == 0 {
				e.violationsVal = e.set.noViolations
				return e.violationsVal, true
			}
			vs := make([]ViolationView, len(e.in.Violations))
			for i, v := range e.in.Violations {
				vs[i] = ViolationView{Name: v.Name, Severity: string(v.Severity), Message: v.Message}
			}
			e.violationsVal = e.set.adapter.NativeToValue(vs)
		}
		return e.violationsVal, true
	case "taints":
		if !e.taintsReady {
			return e.taints, true
		}
		if e.taintsVal == nil {
			e.taints = e.taintViews()
			e.taintsVal = e.set.adapter.NativeToValue(e.taints)
		}
		return e.taintsVal, true
	case "payload":
		if e.payloadVal == nil {
			e.payloadVal = e.set.adapter.NativeToValue(e.payloadMap())
		}
		return e.payloadVal, true
	case "content":
		if e.contentVal == nil {
			e.contentVal = types.String(contentText(e.in.Payload))
		}
		return e.contentVal, true
	case "time":
		if e.timeVal == nil {
			e.timeVal = types.Timestamp{Time: e.in.Time}
		}
		return e.timeVal, true
	case "subagent":
		return e.subagentView(), true
	case "lineage":
		if e.lineageVal == nil {
			e.lineageVal = e.set.adapter.NativeToValue(e.lineageViews())
		}
		return e.lineageVal, true
	}
	return nil, false
}

// subagentView describes Input.Subagent, but only on a subagentStop and
// only for a session this one spawned: a subagentStop naming someone
// else's session must not import (or hide) that session's taint.
func (e *evalCtx) subagentView() SubagentView {
	v := SubagentView{Taints: []string{}}
	c := e.in.Subagent
	if e.hook != "subagentStop" || !e.sess.Spawned(c) {
		return v
	}
	v.Present, v.SessionID = true, c.SessionID
	for label := range c.Taints {
		v.Taints = append(v.Taints, label)
	}
	slices.Sort(v.Taints)
	return v
}

// Parent implements interpreter.Activation.
func (e *evalCtx) Parent() interpreter.Activation { return nil }

func (e *evalCtx) payloadMap() map[string]any {
	if e.payload == nil {
		e.payload, _ = plain(e.in.Payload).(map[string]any)
		if e.payload == nil {
			e.payload = map[string]any{}
		}
	}
	return e.payload
}

func (e *evalCtx) toolView() *ToolView {
	if e.tool != nil {
		return e.tool
	}
	t := &ToolView{Classes: []string{}, Args: map[string]any{}}
	// The raw payload, not payloadMap: only the argument values need
	// plain's conversion, and converting the whole payload for them was a
	// large share of a decision's allocations.
	p, _ := e.in.Payload.(map[string]any)
	if tool, ok := p["tool"].(map[string]any); ok {
		t.Name, _ = tool["name"].(string)
		t.Version, _ = tool["version"].(string)
		t.Provider, _ = tool["provider"].(string)
	}
	t.Operation, _ = p["operation"].(string)
	t.Capability, _ = p["capability"].(string)
	t.RawCommand, _ = p["raw_command"].(string)
	t.ExitStatus, _ = p["exit_status"].(string)
	// The arguments the call carries, for the catalog's args matchers
	// and its sinks: a read-only tool called with an argument that
	// executes (ripgrep's pre, a command) acts, and an argument the
	// catalog does not know is a sink. An argument left null, false or
	// empty is not carried. raw_command is the command line the tool runs
	// (ACS): it counts as an argument of that name.
	var carried []string
	if args, ok := p["arguments"].(map[string]any); ok {
		for k, v := range args {
			if a, ok := v.(map[string]any); ok {
				t.Args[k] = plain(a["value"])
				if carries(a["value"]) {
					if carried == nil {
						carried = make([]string, 0, len(args)+1)
					}
					carried = append(carried, k)
				}
			}
		}
	}
	if t.RawCommand != "" {
		carried = append(carried, "raw_command")
	}
	// Sorted, so that tool.sinks does not follow the map's random order;
	// an argument named raw_command and the payload's are one.
	slices.Sort(carried)
	carried = slices.Compact(carried)
	t.Classes, t.Sinks, t.SinksKnown = e.set.lookup(t.Name, t.Capability, carried, true, carried)
	if t.Sinks == nil {
		t.Sinks = []string{}
	}
	// The carried arguments that are not sinks (lookup wrote the sinks
	// over carried).
	t.Others = []string{}
	if n := len(t.Args) - len(t.Sinks); n > 0 {
		t.Others = make([]string, 0, n)
		for k, v := range t.Args {
			if carries(v) && !slices.Contains(t.Sinks, k) {
				t.Others = append(t.Others, k)
			}
		}
		slices.Sort(t.Others)
	}
	t.NestedDestinations = nil
	for k, v := range t.Args {
		budget := maxNestedFields
		if nestedDestination(v, 0, &budget) {
			if t.NestedDestinations == nil {
				t.NestedDestinations = map[string]bool{}
			}
			t.NestedDestinations[k] = true
		}
	}
	t.Programs = commandPrograms(t)
	if e.set.usesReadsOnly {
		t.ReadsOnly = commandReadsOnly(t)
	}
	if e.set.usesInteractive {
		eachCommand(t, func(line string) { t.Interactive = t.Interactive || shellcmd.Interactive(line) },
			func(argv []string) { t.Interactive = t.Interactive || shellcmd.ArgvInteractive(argv) }, func() {})
	}
	t.PathParts = []string{}
	if e.set.usesPathParts {
		t.PathParts = pathParts(t)
	}
	e.tool = t
	return t
}

// commandArgs are the argument names (as normalize spells them) whose
// value is a command line the tool runs.
var commandArgs = []string{"command", "cmd", "cmdline", "command_line", "raw_command"}

// commandPrograms is ToolView.Programs: what the command lines among the
// call's sinks run. A command argument the catalog says is not a sink (a
// docs site's search command) is not run by a shell.
func commandPrograms(t *ToolView) []string {
	var out []string
	eachCommand(t, func(line string) { out = append(out, shellcmd.Programs(line)...) },
		func(argv []string) { out = append(out, shellcmd.Argv(argv)...) },
		// Not a command line or an argument vector: nothing names what it runs.
		func() { out = append(out, shellcmd.Unknown) })
	if out == nil {
		return []string{}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// quietArgs are the arguments of the hosts' shell tools (as normalize
// spells them) that change nothing a command reads: what it is for
// (Claude Code's description, Cursor's explanation, Codex's
// justification), how long it may run, how much output comes back,
// whether it waits. Any other argument beside a command — an environment
// (GIT_EXTERNAL_DIFF), a shell to run it with (pwsh), the sandbox switched
// off or escalated (the line is then all that stands between it and the
// network), one nobody listed — makes the call not only read.
var quietArgs = []string{"description", "explanation", "justification", "timeout", "timeout_ms", "run_in_background",
	"is_background", "yield_time_ms", "max_output_tokens"}

// dirArgs name the directory the command runs in (Codex's workdir): no
// harm to ls or cat, but git reads the configuration of the repository it
// finds there, which can name a program to run (core.fsmonitor).
var dirArgs = []string{"workdir", "cwd", "working_directory", "working_dir", "dir", "directory"}

// commandReadsOnly is ToolView.ReadsOnly: the call carries a command, every
// sink is one, each only reads, and no other argument changes how it runs.
func commandReadsOnly(t *ToolView) bool {
	for _, k := range t.Sinks {
		if !slices.Contains(commandArgs, normalize(k, false)) {
			return false
		}
	}
	for _, k := range t.Others {
		name := normalize(k, false)
		if slices.Contains(quietArgs, name) {
			continue
		}
		// A working directory: a string naming no other host (a UNC share,
		// /net/host), for a line that runs no git.
		if dir, ok := t.Args[k].(string); ok && slices.Contains(dirArgs, name) && shellcmd.NamesNoHost(dir) && !slices.Contains(t.Programs, "git") {
			continue
		}
		return false
	}
	n, reads := 0, true
	eachCommand(t, func(line string) { n++; reads = reads && shellcmd.ReadsOnly(line) },
		func(argv []string) { n++; reads = reads && shellcmd.ArgvReadsOnly(argv) },
		func() { reads = false })
	return n > 0 && reads
}

// eachCommand calls line with each command line among the call's sinks
// (commandArgs, and the payload's raw_command), argv with each argument
// vector, and other for a command argument that is neither.
func eachCommand(t *ToolView, line func(string), argv func([]string), other func()) {
	for _, k := range t.Sinks {
		name := normalize(k, false)
		if !slices.Contains(commandArgs, name) {
			continue
		}
		if name == "raw_command" && t.RawCommand != "" {
			line(t.RawCommand)
		}
		switch v := t.Args[k].(type) {
		case string:
			line(v)
		case []any:
			words := make([]string, 0, len(v))
			for _, a := range v {
				if s, ok := a.(string); ok {
					words = append(words, s)
				}
			}
			if len(words) != len(v) {
				other()
				continue
			}
			argv(words)
		case nil:
		default:
			other()
		}
	}
}

// carries reports whether an argument value is given: not null, false or
// the empty string.
func carries(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case string:
		return v != ""
	}
	return true
}

func (e *evalCtx) sessionView() SessionView {
	s := e.sess
	return SessionView{ID: s.SessionID, Tenant: s.Tenant, AgentID: s.AgentID, Started: s.Started,
		Envelopes: int64(s.Envelopes), TurnsStarted: int64(s.TurnsStarted), WindowTurns: int64(s.WindowTurns), OpenTurns: int64(len(s.OpenTurns)),
		ProvenanceSeen: s.Provenance != nil && s.Provenance.Seen, ActivatedBy: s.ActivatedBy, Platform: e.in.Req.Params.Metadata.Platform}
}

func (e *evalCtx) turnView() TurnView {
	tv := TurnView{Index: int64(e.turn)}
	id := e.in.Req.Params.Metadata.TurnID
	t := e.sess.OpenTurn(id)
	if t == nil && e.sess.LastClosedTurn != nil && e.sess.LastClosedTurn.TurnID == id && id != "" {
		lc := e.sess.LastClosedTurn
		return TurnView{ID: lc.TurnID, Index: int64(lc.Index), Steps: int64(lc.Steps), ToolCalls: int64(lc.ToolCalls), Implicit: lc.Implicit}
	}
	if t == nil {
		return tv
	}
	depth := int64(0)
	for p := t.ParentTurnID; p != ""; {
		pt := e.sess.OpenTurn(p)
		if pt == nil || depth > turnstate.MaxOpenTurns {
			break
		}
		depth++
		p = pt.ParentTurnID
	}
	return TurnView{ID: t.TurnID, Index: int64(t.Index), ParentID: t.ParentTurnID, TriggeredBy: t.TriggeredBy,
		Steps: int64(t.Steps), ToolCalls: int64(t.ToolCalls), Depth: depth, Denied: t.Denied, Implicit: t.Implicit}
}

// provenance derives the trust of every provenance object the envelope
// carries (ACS §7.2: agent_generated takes the minimum trust of its
// lineage; lineage turnguard cannot resolve counts as untrusted) and
// remembers it for later lineage lookups.
func (e *evalCtx) provenance() ProvenanceView {
	v := ProvenanceView{Origins: []string{}, IDs: []string{}, UntrustedIDs: []string{}, SourceIDs: []string{}}
	ps := e.in.Provenance
	if ps == nil {
		ps = acs.ProvenanceOf(e.in.Payload)
	}
	if len(ps) == 0 {
		return v
	}
	if e.sess.Provenance == nil {
		e.sess.Provenance = &turnstate.ProvenanceMemory{}
	}
	mem := e.sess.Provenance
	mem.Seen = true
	v.Present = true
	// The four lists, each at most one item per provenance object, share
	// one array.
	n := len(ps)
	lists := make([]string, 4*n)
	v.Origins, v.IDs, v.UntrustedIDs, v.SourceIDs = lists[:0:n], lists[n:n:2*n], lists[2*n:2*n:3*n], lists[3*n:3*n]
	local := map[string]bool{}
	for _, p := range ps {
		if p.Origin != "agent_generated" {
			local[p.ProvenanceID] = untrustedOrigin(p.Origin)
		}
	}
	for _, p := range ps {
		untrusted := untrustedOrigin(p.Origin)
		if p.Origin == "agent_generated" {
			for _, id := range p.DerivedFrom {
				u, ok := local[id]
				if !ok {
					u, ok = mem.Lookup(id)
				}
				untrusted = untrusted || u || !ok
			}
		}
		if !slices.Contains(v.Origins, p.Origin) {
			v.Origins = append(v.Origins, p.Origin)
		}
		if p.ProvenanceID != "" {
			v.IDs = append(v.IDs, p.ProvenanceID)
			mem.Remember(p.ProvenanceID, untrusted)
		}
		if untrusted {
			v.Untrusted = true
			if p.ProvenanceID != "" {
				v.UntrustedIDs = append(v.UntrustedIDs, p.ProvenanceID)
			}
			if p.SourceID != "" && !slices.Contains(v.SourceIDs, p.SourceID) {
				v.SourceIDs = append(v.SourceIDs, p.SourceID)
			}
		}
	}
	slices.Sort(v.Origins)
	return v
}

// rule evaluates one rule; it reports a hit and whether there was one.
func (e *evalCtx) rule(r *Rule, res *Result) (Hit, bool) {
	ok, err := e.eval(r.when)
	if err != nil {
		res.Errors = append(res.Errors, EvalError{Rule: r, Where: "rule " + r.ID + " when", Err: err})
		return Hit{}, false
	}
	if r.Threshold != nil && r.Threshold.Consecutive && !ok {
		if c := e.sess.Counters[r.ID]; c != nil {
			c.Count = 0
		}
	}
	if !ok {
		return Hit{}, false
	}
	for _, ex := range r.exceptions {
		hit, err := e.eval(ex.when)
		if err != nil {
			res.Errors = append(res.Errors, EvalError{Rule: r, Where: "rule " + r.ID + " exception " + ex.name, Err: err})
			continue
		}
		if hit {
			return Hit{}, false
		}
	}
	h := Hit{Rule: r}
	if g := r.After; g != nil {
		t, set := e.sess.Taints[g.Taint]
		if !set {
			return Hit{}, false
		}
		w := g.Within
		if w.Turns == nil && w.Duration == nil && w.Steps == nil {
			w = e.set.taint(g.Taint).Window
		}
		in, age := e.within(g.Taint, t, w)
		if !in {
			return Hit{}, false
		}
		cp := *t
		h.TaintLabel, h.Taint, h.AgeTurns = g.Taint, &cp, age
	}
	if th := r.Threshold; th != nil {
		if th.ByAgent {
			if e.agent == nil {
				res.Errors = append(res.Errors, EvalError{Rule: r, Where: "rule " + r.ID + " threshold", Err: errNoAgent})
				return Hit{}, false
			}
			h.Count = e.countAgent(r.ID, th)
		} else {
			h.Count = e.count(r.ID, th)
		}
		if h.Count <= th.Max {
			return Hit{}, false
		}
	}
	h.Message = e.render(r, h)
	return h, true
}

func (e *evalCtx) eval(c *condition) (bool, error) {
	if c.settledFalse(e) {
		return false, nil
	}
	out, _, err := c.prg.Eval(e)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("condition returned %s, not bool", out.Type())
	}
	return bool(b), nil
}

// render fills a rule's message template; without one, the title.
func (e *evalCtx) render(r *Rule, h Hit) string {
	if r.message == nil {
		return r.Title
	}
	data := map[string]any{
		"rule":    map[string]any{"id": r.ID, "title": r.Title, "severity": r.Severity},
		"hook":    e.hook,
		"tool":    toolData(e.toolView()),
		"session": map[string]any{"id": e.sess.SessionID, "tenant": e.sess.Tenant, "agent_id": e.sess.AgentID},
		"turn":    map[string]any{"id": e.in.Req.Params.Metadata.TurnID, "index": e.turn},
		"count":   h.Count,
	}
	if r.Threshold != nil {
		data["max"] = r.Threshold.Max
	}
	if h.Taint != nil {
		taint := map[string]any{"label": h.TaintLabel, "age_turns": h.AgeTurns, "hits": h.Taint.Hits,
			"lookback_turns": max(e.turn-h.Taint.First.Turn, 0),
			"first":          hitData(h.Taint.First), "last": hitData(h.Taint.Last)}
		if note := heldNote(e.sess, h.TaintLabel); note != "" {
			taint["held"] = note // absent, a template's {{if .taint.held}} is false
		}
		data["taint"] = taint
	}
	if e.set.usesLineage {
		data["lineage"] = e.lineageData()
	}
	var names []string
	for _, v := range e.in.Violations {
		names = append(names, v.Name)
	}
	data["violations"] = names
	var b bytes.Buffer
	if err := r.message.Execute(&b, data); err != nil {
		return fmt.Sprintf("%s (message template failed: %v)", r.Title, err)
	}
	return b.String()
}

func toolData(t *ToolView) map[string]any {
	return map[string]any{"name": t.Name, "capability": t.Capability, "operation": t.Operation, "classes": t.Classes, "args": t.Args,
		"sinks": t.Sinks, "sinks_known": t.SinksKnown, "others": t.Others}
}

func hitData(h turnstate.TaintHit) map[string]any {
	return map[string]any{"request_id": h.RequestID, "hook": h.Hook, "tool": h.Tool, "turn": h.Turn, "seq": h.Seq,
		"origins": h.Origins, "provenance_ids": h.ProvenanceIDs, "source_ids": h.SourceIDs, "source": h.Source, "session": h.Session}
}

// maxNestedFields and maxNestedDepth bound the walk of an argument's
// value for a destination's field; past them the value counts as holding
// one (fail closed).
const (
	maxNestedFields = 256
	maxNestedDepth  = 8
)

// destinationWords are the words of a field's name that say it holds a
// destination — who receives, where it goes, what a client fetches — and
// destinationParts the parts that say so wherever they stand in the name
// (TORECIPIENTS, emailaddress, rcpts: a name in one case has no words).
var (
	destinationWords = map[string]bool{"to": true, "cc": true, "bcc": true, "uri": true, "src": true, "link": true,
		"links": true, "target": true, "members": true, "users": true}
	destinationParts = []string{"recipient", "rcpt", "address", "addr", "email", "mail", "url", "href", "account",
		"iban", "webhook", "endpoint", "channel", "phone", "destination", "attendee", "participant", "invitee",
		"sendto"}
)

// nestedDestination reports whether v, inside an object or a list, has a
// field named like a destination (toRecipients, emailAddress, image_url):
// a scalar has none.
func nestedDestination(v any, depth int, budget *int) bool {
	switch x := v.(type) {
	case []any:
		for _, item := range x {
			if nestedDestination(item, depth+1, budget) {
				return true
			}
		}
	case map[string]any:
		if depth >= maxNestedDepth {
			return true
		}
		for k, item := range x {
			if *budget--; *budget < 0 {
				return true
			}
			key := catalogKey(k)
			for w := range strings.SplitSeq(key, "_") {
				if destinationWords[w] {
					return true
				}
			}
			for _, part := range destinationParts {
				if strings.Contains(key, part) {
					return true
				}
			}
			// HTML or Markdown inside an object (SendGrid's content
			// [{type: text/html, value}], Graph's body {contentType:
			// HTML}): the images it links are fetched as it is read.
			if v, ok := item.(string); ok && strings.Contains(key, "type") && markup(v) {
				return true
			}
			if nestedDestination(item, depth+1, budget) {
				return true
			}
		}
	}
	return false
}

// markup reports whether a content type names HTML or Markdown.
func markup(contentType string) bool {
	l := strings.ToLower(contentType)
	return strings.Contains(l, "html") || strings.Contains(l, "markdown")
}
