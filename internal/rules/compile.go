package rules

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/ext"
	"go.yaml.in/yaml/v3"

	"github.com/turnguard/turnguard/internal/acs"
	"github.com/turnguard/turnguard/internal/scenario"
	rulepack "github.com/turnguard/turnguard/rules"
)

// Mode says whether a rule decides.
type Mode string

// Rule modes.
const (
	// Enforce: the rule's decision counts and its hits alert.
	Enforce Mode = "enforce"
	// Shadow: the rule is evaluated and alerts, and the decision records
	// what it would have decided, but it never changes the decision.
	Shadow Mode = "shadow"
	// Off: the rule is loaded and checked but not evaluated.
	Off Mode = "off"
)

// Decision is what a rule asks for when it hits.
type Decision string

// Rule decisions. None only alerts.
const (
	DecideDeny  Decision = "deny"
	DecideAsk   Decision = "ask"
	DecideAllow Decision = "allow"
	DecideNone  Decision = "none"
)

// Severities, lowest first, as OCSF names them.
var severities = []string{"informational", "low", "medium", "high", "critical"}

// Window bounds a taint or threshold window; nil fields are unbounded.
type Window struct {
	Turns    *int
	Duration *time.Duration
}

// Rule is a compiled rule.
type Rule struct {
	ID          string
	Title       string
	Description string
	Severity    string
	Tags        []string
	Mode        Mode
	// Hooks are the hook names the rule runs on; nil means every hook.
	Hooks       []string
	Decision    Decision
	ReasonCodes []string
	Ask         *acs.AskDetails
	// After is set on taint-window guards.
	After *Guard
	// Threshold is set on threshold rules.
	Threshold *Threshold
	File      string
	Pos       Pos

	when       cel.Program
	message    *template.Template
	exceptions []exception
}

// Guard is the taint condition of a guard rule.
type Guard struct {
	Taint  string
	Within Window
}

// Threshold is the counting condition of a threshold rule: the rule hits
// on every matching event beyond Max in its scope.
type Threshold struct {
	Max int
	// Per is "turn" or "session" when counting per scope; Within is set
	// for sliding windows; Consecutive counts matching events in a row.
	Per         string
	Within      *Window
	Consecutive bool
	// ByAgent counts across all sessions of the envelope's agent instead
	// of within its session.
	ByAgent bool
}

type exception struct {
	name string
	when cel.Program
}

// TaintLabel is a compiled taint declaration.
type TaintLabel struct {
	ID      string
	Sources []taintSource
	// Window is the default window of tainted() and of guards without
	// their own.
	Window    Window
	clearWhen cel.Program
}

type taintSource struct {
	id   string
	when cel.Program
}

type toolClass struct {
	match, capability string
	// matchPrefix and capPrefix are the globs' literal prefixes: a name
	// without it cannot match, which rules out most of a large catalog
	// before any glob is matched.
	matchPrefix, capPrefix string
	classes                []string
}

// Set is a compiled, checked rule set: one or more files merged.
type Set struct {
	// Name joins the files' metadata names; Revision is a hash of their
	// content, cited in every decision so a replay can pin the rules.
	Name     string
	Revision string
	Files    []string
	Rules    []*Rule
	Taints   []*TaintLabel
	Tests    []TestCase

	tools []toolClass
	// byHook lists, per hook name, the rules that run on it in set order.
	byHook map[string][]*Rule
}

// TestCase is a test a rule file carries.
type TestCase struct {
	File string
	Pos  Pos
	Spec *scenario.Scenario
}

// revision is the content revision of a rule set made of files: a hash of
// their contents in the order given, which is the order they are merged
// in. Paths do not enter it — the embedded pack, rules/default.yaml,
// ./rules/default.yaml and a copy elsewhere are one rule set, and a
// decision's policy_version must say so, so that replay can pin the rules
// whatever they were called. Each file's length precedes its bytes, so no
// two lists of contents hash alike by moving bytes between files.
func revision(files []*File) string {
	h := sha256.New()
	var n [8]byte
	for _, f := range files {
		binary.BigEndian.PutUint64(n[:], uint64(len(f.Source)))
		h.Write(n[:])
		h.Write(f.Source)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))[:16]
}

// Compile checks and compiles rule files into one Set. Every problem found
// comes back in one Diagnostics error; a set with any problem is refused
// whole.
func Compile(files []*File) (*Set, error) {
	c := &compiler{set: &Set{byHook: map[string][]*Rule{}}, lists: map[string][]string{}, macros: map[string]Str{},
		macroFile: map[string]*File{}, taintIDs: map[string]bool{}, seen: map[string]Pos{}}
	var names []string
	for _, f := range files {
		c.header(f)
		names = append(names, f.Metadata.Name.Value)
		c.set.Files = append(c.set.Files, f.Path)
	}
	c.set.Name = strings.Join(names, "+")
	c.set.Revision = revision(files)
	// Declarations first, so that any file may use what another declares.
	for _, f := range files {
		c.declare(f)
	}
	if len(c.diags) == 0 {
		c.env = c.newEnv()
	}
	if c.env != nil {
		for _, f := range files {
			c.compileFile(f)
		}
		for _, f := range files {
			c.override(f)
		}
	}
	if len(c.diags) > 0 {
		// Files in the order they were given (the order rules merge in),
		// then by position: a total order, so the report reads the same
		// every time.
		order := map[string]int{}
		for i, f := range files {
			if _, ok := order[f.Path]; !ok {
				order[f.Path] = i
			}
		}
		slices.SortStableFunc(c.diags, func(a, b Diagnostic) int {
			if a.File != b.File {
				ia, oka := order[a.File]
				ib, okb := order[b.File]
				switch {
				case oka && okb && ia != ib:
					return ia - ib
				case oka != okb:
					// A diagnostic of no given file (none so far) goes last.
					if oka {
						return -1
					}
					return 1
				}
				return strings.Compare(a.File, b.File)
			}
			if a.Pos.Line != b.Pos.Line {
				return a.Pos.Line - b.Pos.Line
			}
			return a.Pos.Col - b.Pos.Col
		})
		return nil, c.diags
	}
	for _, m := range acs.Methods() {
		h := ruleHook(m)
		for _, r := range c.set.Rules {
			if r.Hooks == nil || slices.Contains(r.Hooks, h) {
				c.set.byHook[h] = append(c.set.byHook[h], r)
			}
		}
	}
	return c.set, nil
}

// LoadFiles reads and compiles the rule files at paths; the path
// builtin:default names the embedded default pack.
func LoadFiles(paths ...string) (*Set, error) {
	var files []*File
	var diags Diagnostics
	for _, p := range paths {
		src, err := readRuleFile(p)
		if err != nil {
			return nil, err
		}
		f, err := ParseFile(p, src)
		if err != nil {
			ds, ok := err.(Diagnostics)
			if !ok {
				return nil, err
			}
			diags = append(diags, ds...)
			continue
		}
		files = append(files, f)
	}
	if len(diags) > 0 {
		return nil, diags
	}
	return Compile(files)
}

// AgentKeyed reports whether any evaluated rule counts per agent, so that
// the caller must supply the agent's state.
func (s *Set) AgentKeyed() bool {
	return slices.ContainsFunc(s.Rules, func(r *Rule) bool { return r.Mode != Off && r.Threshold != nil && r.Threshold.ByAgent })
}

// Default compiles the embedded default pack.
func Default() (*Set, error) { return LoadFiles(rulepack.DefaultPath) }

func readRuleFile(p string) ([]byte, error) {
	if p == rulepack.DefaultPath {
		return rulepack.Default(), nil
	}
	src, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("read rule file: %w", err)
	}
	return src, nil
}

type compiler struct {
	set       *Set
	diags     Diagnostics
	lists     map[string][]string
	macros    map[string]Str
	macroFile map[string]*File
	taintIDs  map[string]bool
	// seen records declared names ("rule:X", "list:X", …) for duplicates.
	seen map[string]Pos
	env  *cel.Env
}

func (c *compiler) errf(f *File, p Pos, format string, args ...any) {
	if p.Line == 0 {
		p = Pos{1, 1}
	}
	c.diags = append(c.diags, Diagnostic{File: f.Path, Pos: p, Msg: fmt.Sprintf(format, args...)})
}

func (c *compiler) header(f *File) {
	switch {
	case !f.APIVersion.Set():
		c.errf(f, Pos{1, 1}, "apiVersion is missing (want %s)", APIVersion)
	case f.APIVersion.Value != APIVersion:
		c.errf(f, f.APIVersion.Pos, "apiVersion %q is not supported (want %s)", f.APIVersion.Value, APIVersion)
	}
	if f.Kind.Value != "RuleSet" {
		c.errf(f, f.Kind.Pos, "kind %q: want RuleSet", f.Kind.Value)
	}
	if !f.Metadata.Name.Set() || !isToken(f.Metadata.Name.Value) {
		c.errf(f, f.Metadata.Name.Pos, "metadata.name is required: letters, digits, '-' and '_'")
	}
}

// declare records lists, macros, tool classes and taint labels, refusing
// duplicates across files.
func (c *compiler) declare(f *File) {
	dup := func(kind, name string, p Pos) bool {
		key := kind + ":" + name
		if prev, ok := c.seen[key]; ok {
			c.errf(f, p, "%s %q is declared twice (first at line %d)", kind, name, prev.Line)
			return true
		}
		c.seen[key] = p
		return false
	}
	for _, name := range sortedKeys(f.Lists) {
		p := c.keyPos(f, "lists", name)
		if !isIdent(name) {
			c.errf(f, p, "list name %q: use letters, digits and '_'", name)
		}
		if !dup("list", name, p) {
			c.lists[name] = f.Lists[name]
		}
	}
	for _, name := range sortedKeys(f.Macros) {
		p := c.keyPos(f, "macros", name)
		if !isIdent(name) {
			c.errf(f, p, "macro name %q: use letters, digits and '_'", name)
		}
		if _, isList := c.lists[name]; isList {
			c.errf(f, p, "%q is both a list and a macro", name)
		}
		if !dup("macro", name, p) {
			c.macros[name] = f.Macros[name]
			c.macroFile[name] = f
		}
	}
	for _, t := range f.Tools {
		if !t.Match.Set() && !t.Capability.Set() {
			c.errf(f, firstPos(t.Classes), "a tool class entry needs match (a tool name glob) or capability (a capability glob)")
			continue
		}
		// Globs are kept in catalog form (see catalogGlob) and checked in
		// that form: that is the pattern matching will use.
		tc := toolClass{match: catalogGlob(t.Match.Value), capability: catalogGlob(t.Capability.Value)}
		for _, g := range []struct {
			src  Str
			glob string
		}{{t.Match, tc.match}, {t.Capability, tc.capability}} {
			if !g.src.Set() {
				continue
			}
			if _, err := path.Match(g.glob, ""); err != nil {
				c.errf(f, g.src.Pos, "glob %q: %v", g.src.Value, err)
			} else if g.glob == "" {
				// An empty glob would read as "any tool" below.
				c.errf(f, g.src.Pos, "glob %q is empty", g.src.Value)
			}
		}
		if len(t.Classes) == 0 {
			c.errf(f, t.Match.Pos, "a tool class entry needs classes")
		}
		tc.matchPrefix, tc.capPrefix = literalPrefix(tc.match), literalPrefix(tc.capability)
		for _, cl := range t.Classes {
			tc.classes = append(tc.classes, cl.Value)
		}
		c.set.tools = append(c.set.tools, tc)
	}
	for _, t := range f.Taints {
		if !isToken(t.ID.Value) {
			c.errf(f, t.ID.Pos, "taint id %q: letters, digits, '-' and '_'", t.ID.Value)
			continue
		}
		if !dup("taint", t.ID.Value, t.ID.Pos) {
			c.taintIDs[t.ID.Value] = true
		}
	}
}

// keyPos finds the position of a key in a top-level mapping section.
func (c *compiler) keyPos(f *File, section, key string) Pos {
	if f.root == nil || len(f.root.Content) == 0 {
		return Pos{1, 1}
	}
	doc := f.root.Content[0]
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value != section {
			continue
		}
		sec := doc.Content[i+1]
		for j := 0; j+1 < len(sec.Content); j += 2 {
			if sec.Content[j].Value == key {
				return Pos{sec.Content[j].Line, sec.Content[j].Column}
			}
		}
		return Pos{doc.Content[i].Line, doc.Content[i].Column}
	}
	return Pos{1, 1}
}

func (c *compiler) newEnv() *cel.Env {
	labels := c.taintIDs
	taintMacro := func(name, field string) cel.Macro {
		return cel.GlobalMacro(name, 1, func(eh cel.MacroExprFactory, _ ast.Expr, args []ast.Expr) (ast.Expr, *common.Error) {
			arg := args[0]
			if arg.Kind() != ast.LiteralKind {
				return nil, eh.NewError(arg.ID(), name+"() takes a taint label as a string literal")
			}
			label, ok := arg.AsLiteral().Value().(string)
			if !ok {
				return nil, eh.NewError(arg.ID(), name+"() takes a taint label as a string literal")
			}
			if !labels[label] {
				return nil, eh.NewError(arg.ID(), fmt.Sprintf("unknown taint label %q (declare it under taints)", label))
			}
			return eh.NewSelect(eh.NewCall("_[_]", eh.NewIdent("taints"), eh.NewLiteral(types.String(label))), field), nil
		})
	}
	obj := func(t any) *cel.Type { return cel.ObjectType("rules." + reflect.TypeOf(t).Name()) }
	env, err := cel.NewEnv(
		ext.NativeTypes(reflect.TypeFor[ToolView](), reflect.TypeFor[SessionView](), reflect.TypeFor[TurnView](),
			reflect.TypeFor[ProvenanceView](), reflect.TypeFor[ViolationView](), reflect.TypeFor[TaintView](), reflect.TypeFor[SubagentView](), ext.ParseStructTags(true)),
		ext.Strings(),
		cel.Variable("hook", cel.StringType),
		cel.Variable("method", cel.StringType),
		cel.Variable("tool", obj(ToolView{})),
		cel.Variable("session", obj(SessionView{})),
		cel.Variable("turn", obj(TurnView{})),
		cel.Variable("provenance", obj(ProvenanceView{})),
		cel.Variable("violations", cel.ListType(obj(ViolationView{}))),
		cel.Variable("taints", cel.MapType(cel.StringType, obj(TaintView{}))),
		cel.Variable("payload", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("content", cel.StringType),
		cel.Variable("time", cel.TimestampType),
		cel.Variable("subagent", obj(SubagentView{})),
		cel.Macros(taintMacro("tainted", "active"), taintMacro("taint_age_turns", "age_turns")),
	)
	if err != nil {
		// The environment is fixed by this package; failing here is a bug.
		panic(fmt.Sprintf("rules: CEL environment: %v", err))
	}
	return env
}

func (c *compiler) compileFile(f *File) {
	for _, t := range f.Taints {
		if !c.taintIDs[t.ID.Value] {
			continue
		}
		tl := &TaintLabel{ID: t.ID.Value}
		if t.Window != nil {
			tl.Window = c.window(f, t.Window, "window")
		}
		if len(t.Sources) == 0 {
			c.errf(f, t.ID.Pos, "taint %q has no sources", t.ID.Value)
		}
		for _, s := range t.Sources {
			if !isToken(s.ID.Value) {
				c.errf(f, s.ID.Pos, "taint source id %q: letters, digits, '-' and '_'", s.ID.Value)
			}
			if p := c.expr(f, s.When, "when"); p != nil {
				tl.Sources = append(tl.Sources, taintSource{id: s.ID.Value, when: p})
			}
		}
		if t.ClearWhen.Set() {
			tl.clearWhen = c.expr(f, t.ClearWhen, "clear_when")
		}
		c.set.Taints = append(c.set.Taints, tl)
	}
	for _, name := range sortedKeys(f.Macros) {
		// A macro is checked where it is written, so its errors point there.
		m := f.Macros[name]
		c.expr(f, m, "macro "+name)
	}
	for i := range f.Rules {
		if r := c.rule(f, &f.Rules[i]); r != nil {
			c.set.Rules = append(c.set.Rules, r)
		}
	}
	for i := range f.Tests {
		t := &f.Tests[i]
		pos := c.testPos(f, i)
		if err := t.Prepare(false); err != nil {
			c.errf(f, pos, "test %q: %v", t.Name, err)
			continue
		}
		if _, err := t.Build(); err != nil {
			c.errf(f, pos, "test %q: %v", t.Name, err)
			continue
		}
		c.set.Tests = append(c.set.Tests, TestCase{File: f.Path, Pos: pos, Spec: &f.Tests[i]})
	}
}

// override applies a file's overrides to rules of any file.
func (c *compiler) override(f *File) {
	for _, o := range f.Overrides {
		i := slices.IndexFunc(c.set.Rules, func(r *Rule) bool { return r.ID == o.Rule.Value })
		if i < 0 {
			c.errf(f, o.Rule.Pos, "override: no rule %q in the rule set", o.Rule.Value)
			continue
		}
		switch m := Mode(o.Mode.Value); m {
		case Enforce, Shadow, Off:
			c.set.Rules[i].Mode = m
		default:
			c.errf(f, posOr(o.Mode, o.Rule), "override of %s: mode %q: want enforce, shadow or off", o.Rule.Value, o.Mode.Value)
		}
	}
}

func (c *compiler) testPos(f *File, i int) Pos {
	if f.root == nil {
		return Pos{1, 1}
	}
	doc := f.root.Content[0]
	for k := 0; k+1 < len(doc.Content); k += 2 {
		if doc.Content[k].Value == "tests" && i < len(doc.Content[k+1].Content) {
			n := doc.Content[k+1].Content[i]
			return Pos{n.Line, n.Column}
		}
	}
	return Pos{1, 1}
}

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
	if len(d.On) == 0 {
		c.errf(f, d.ID.Pos, `rule %s: on is required: the hooks it runs on, or ["*"] for every hook`, r.ID)
	}
	for _, h := range d.On {
		if h.Value == "*" {
			if len(d.On) > 1 {
				c.errf(f, h.Pos, `rule %s: "*" stands alone in on`, r.ID)
			}
			continue
		}
		name, ok := hookName(h.Value)
		if !ok {
			c.errf(f, h.Pos, "rule %s: unknown hook %q", r.ID, h.Value)
			continue
		}
		r.Hooks = append(r.Hooks, name)
	}
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
	if !d.When.Set() {
		c.errf(f, d.ID.Pos, "rule %s: when is required (use 'true' to match every event of its hooks)", r.ID)
	} else {
		r.when = c.expr(f, d.When, "when")
	}
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
	if w.Turns == nil && w.Duration == nil {
		c.errf(f, w.pos, "%s needs turns or duration (or leave it out for no bound)", what)
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

var refPattern = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)`)

// expansion maps offsets of an expanded expression back to its source.
type expansion struct {
	text string
	// subs are the replaced $refs: [srcStart, srcEnd, expStart, expEnd].
	subs [][4]int
}

func (e expansion) srcOffset(exp int) int {
	delta := 0
	for _, s := range e.subs {
		if exp < s[2] {
			break
		}
		if exp < s[3] {
			return s[0]
		}
		delta += (s[3] - s[2]) - (s[1] - s[0])
	}
	return exp - delta
}

// expand replaces $list with a list literal and $macro with the macro's
// (expanded) expression in parentheses.
func (c *compiler) expand(src string, depth int) (expansion, error) {
	var e expansion
	var b strings.Builder
	last := 0
	for _, m := range refPattern.FindAllStringSubmatchIndex(src, -1) {
		name := src[m[2]:m[3]]
		var repl string
		if l, ok := c.lists[name]; ok {
			raw, _ := json.Marshal(l)
			repl = string(raw)
		} else if mac, ok := c.macros[name]; ok {
			if depth > 16 {
				return e, &exprError{offset: m[0], msg: fmt.Sprintf("macro $%s expands too deeply (a cycle?)", name)}
			}
			inner, err := c.expand(mac.Value, depth+1)
			if err != nil {
				return e, &exprError{offset: m[0], msg: fmt.Sprintf("in macro $%s: %v", name, err)}
			}
			repl = "(" + inner.text + ")"
		} else {
			return e, &exprError{offset: m[0], msg: fmt.Sprintf("$%s is neither a list nor a macro", name)}
		}
		b.WriteString(src[last:m[0]])
		start := b.Len()
		b.WriteString(repl)
		e.subs = append(e.subs, [4]int{m[0], m[1], start, b.Len()})
		last = m[1]
	}
	b.WriteString(src[last:])
	e.text = b.String()
	return e, nil
}

// MaxConditionCost bounds what one evaluation of one condition may cost, in
// CEL's cost units (a few per list element a comprehension visits, a tenth
// per byte of a string operation): about a tenth of a second of CPU. A
// scan of a list as long as a default-sized (256 KiB) envelope can hold
// fits; rules check refuses conditions whose cost grows faster than the
// envelope (MaxEstimatedCost), and this stops what is left — many scans of
// a large list in one condition, say — at a bounded cost: the evaluation
// fails and --on-rule-error decides.
const MaxConditionCost = 1_000_000

// MaxEstimatedCost is the most a condition's statically estimated cost may
// be, with every string and list it reads as large as a 1 MiB envelope:
// conditions linear in the envelope estimate at a few million at most,
// ones quadratic in it (a comprehension inside a comprehension over
// envelope data) at 10^12 or more, or unbounded. rules check refuses the
// latter with the condition's file:line:col.
const MaxEstimatedCost = 1_000_000_000

type exprError struct {
	offset int
	msg    string
}

func (e *exprError) Error() string { return e.msg }

// expr compiles a boolean CEL condition, reporting errors at their place in
// the file.
func (c *compiler) expr(f *File, s Str, what string) cel.Program {
	if !s.Set() || strings.TrimSpace(s.Value) == "" {
		c.errf(f, s.Pos, "%s: empty condition", what)
		return nil
	}
	exp, err := c.expand(s.Value, 0)
	if err != nil {
		ee := err.(*exprError)
		c.errf(f, scalarPos(f, s, ee.offset), "%s: %s", what, ee.msg)
		return nil
	}
	checked, iss := c.env.Compile(exp.text)
	if iss != nil && iss.Err() != nil {
		for _, e := range iss.Errors() {
			off := offsetOf(exp.text, e.Location.Line(), e.Location.Column())
			c.errf(f, scalarPos(f, s, exp.srcOffset(off)), "%s: %s", what, e.Message)
		}
		return nil
	}
	est, err := c.env.EstimateCost(checked, envelopeSized{})
	if err != nil || est.Max > MaxEstimatedCost {
		// Such a condition would hit MaxConditionCost on a large enough
		// envelope, and leave the decision to --on-rule-error: refused
		// here, where its author sees it, instead.
		c.errf(f, s.Pos, "%s: the condition's cost grows faster than the envelope (nested comprehensions over envelope data?): estimated at more than %d CEL cost units on a 1 MiB envelope", what, uint64(MaxEstimatedCost))
		return nil
	}
	if checked.OutputType() != cel.BoolType {
		c.errf(f, s.Pos, "%s: the condition is %s, want bool", what, checked.OutputType())
		return nil
	}
	opts := []cel.ProgramOption{cel.EvalOptions(cel.OptOptimize)}
	if est.Max > MaxConditionCost {
		// The cost limit counts CEL's own operation costs, not time: the
		// same condition on the same envelope is cut off at the same point
		// on every processor and in replay, and the failure goes to
		// --on-rule-error. Only where the estimate — an upper bound, with
		// every value as large as the largest envelope — says it could be
		// reached: tracking the cost doubles a condition's evaluation time.
		opts = append(opts, cel.CostLimit(MaxConditionCost))
	}
	prg, err := c.env.Program(checked, opts...)
	if err != nil {
		c.errf(f, s.Pos, "%s: %v", what, err)
		return nil
	}
	return prg
}

// offsetOf converts a CEL location (1-based line, 0-based column) into a
// byte offset of text.
func offsetOf(text string, line, col int) int {
	off := 0
	for l := 1; l < line; l++ {
		i := strings.IndexByte(text[off:], '\n')
		if i < 0 {
			break
		}
		off += i + 1
	}
	return min(off+col, len(text))
}

// scalarPos is the file position of byte offset off inside a YAML scalar.
func scalarPos(f *File, s Str, off int) Pos {
	switch s.Style {
	case yaml.LiteralStyle, yaml.FoldedStyle:
		return blockPos(f, s, off)
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		return Pos{s.Pos.Line, s.Pos.Col + 1 + off}
	}
	return Pos{s.Pos.Line, s.Pos.Col + off}
}

// blockPos places an offset of a block scalar (| or >) on its source line:
// the value's lines are the source lines after the indicator, joined by a
// newline (|) or a space (>).
func blockPos(f *File, s Str, off int) Pos {
	lines := strings.Split(string(f.Source), "\n")
	line := s.Pos.Line // the indicator's line; content starts below
	for i := line; i < len(lines); i++ {
		text := lines[i]
		trimmed := strings.TrimLeft(text, " ")
		indent := len(text) - len(trimmed)
		if off <= len(trimmed) {
			return Pos{i + 1, indent + 1 + off}
		}
		off -= len(trimmed) + 1
	}
	return s.Pos
}

func posOr(s Str, fallback Str) Pos {
	if s.Set() {
		return s.Pos
	}
	return fallback.Pos
}

func firstPos(ss []Str) Pos {
	if len(ss) > 0 {
		return ss[0].Pos
	}
	return Pos{1, 1}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

func isIdent(s string) bool {
	return isToken(s) && !strings.Contains(s, "-") && !(s[0] >= '0' && s[0] <= '9')
}
