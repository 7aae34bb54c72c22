package policy

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"text/template"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"

	"github.com/turnguard/turnguard/internal/core/acs"
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
	// Steps bounds the window in the session's envelopes: the one that
	// set the label and the next Steps (a single-turn session's window
	// is otherwise the rest of it).
	Steps *int
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

	when       *condition
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
	when *condition
}

// TaintLabel is a compiled taint declaration.
type TaintLabel struct {
	ID      string
	Sources []taintSource
	// Window is the default window of tainted() and of guards without
	// their own.
	Window    Window
	clearWhen *condition
}

type taintSource struct {
	id   string
	when *condition
	// unanswered: see SourceDef.Unanswered.
	unanswered bool
	// output: see SourceDef.Output.
	output bool
	// files: see SourceDef.Files.
	files bool
}

type toolClass struct {
	match, capability string
	// matchPrefix and capPrefix are the globs' literal prefixes: a name
	// without it cannot match, which rules out most of a large catalog
	// before any glob is matched.
	matchPrefix, capPrefix string
	// args are argument name globs, verbs words, both in catalog form;
	// nil: not a matcher of the entry.
	args, verbs []string
	classes     []string
	// sinks are argument name globs in catalog form; nil: the entry
	// declares none.
	sinks []string
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
	// usesLineage: some condition reads the variable lineage, so sessions
	// index what enters them (eval_lineage.go). Without it they keep no
	// index: no cost, no state.
	usesLineage bool
	// usesPathParts: some condition reads tool.path_parts, so calls'
	// paths are split for it (pathParts); otherwise it stays empty.
	usesPathParts bool
	// usesReadsOnly: some condition reads tool.reads_only (a second
	// reading of every command line).
	usesReadsOnly bool
	// usesInteractive: some condition reads tool.interactive (a third
	// reading of every command line).
	usesInteractive bool
	// byHook lists, per hook name, the rules that run on it in set order.
	byHook map[string][]*Rule
	// adapter converts the values of CEL variables as the environment
	// does; noViolations is the violations variable of an envelope
	// without any, converted once; specValues the hook and method
	// variables of each method (specValuesOf).
	adapter      types.Adapter
	noViolations any
	specValues   map[string][2]any
	// cited are Name and Revision boxed once (Cited).
	cited [2]any
}

// Cited returns Name and Revision as interface values, as every decision's
// policy_data cites them: boxed once by Compile instead of for each
// decision (boxed anew when the fields have changed since, or for a Set
// Compile did not make).
func (s *Set) Cited() (name, revision any) {
	if n, ok := s.cited[0].(string); ok && n == s.Name {
		if r, ok := s.cited[1].(string); ok && r == s.Revision {
			return s.cited[0], s.cited[1]
		}
	}
	return s.Name, s.Revision
}

// TestCase is a test a rule file carries, as written: internal/ruletest
// reads it (its format is the scenario format) and runs it; the engine
// only says where it is.
type TestCase struct {
	File string
	Pos  Pos
	// Source is the whole file, Index the case's place in its tests.
	Source []byte
	Index  int
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
	c.set.cited = [2]any{c.set.Name, c.set.Revision}
	// Declarations first, so that any file may use what another declares.
	for _, f := range files {
		c.declare(f)
	}
	if len(c.diags) == 0 {
		c.env = c.newEnv()
		c.set.adapter = c.env.CELTypeAdapter()
		c.set.noViolations = c.set.adapter.NativeToValue([]ViolationView{})
		c.set.specValues = specValuesOf()
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

// RawFile is a rule file as read: where it was read from (diagnostics name
// it) and its bytes.
type RawFile struct {
	Path  string
	Bytes []byte
}

// CompileRaw parses and compiles rule files; every problem found, in
// any of them, comes back in one Diagnostics error. Reading the files is
// the caller's (rules.Load reads paths and names the built-in packs).
func CompileRaw(sources ...RawFile) (*Set, error) {
	var files []*File
	var diags Diagnostics
	for _, src := range sources {
		f, err := ParseFile(src.Path, src.Bytes)
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
	for _, name := range slices.Sorted(maps.Keys(f.Lists)) {
		p := c.keyPos(f, "lists", name)
		if !isIdent(name) {
			c.errf(f, p, "list name %q: use letters, digits and '_'", name)
		}
		if !dup("list", name, p) {
			c.lists[name] = f.Lists[name]
		}
	}
	for _, name := range slices.Sorted(maps.Keys(f.Macros)) {
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
		if !t.Match.Set() && !t.Capability.Set() && len(t.Args) == 0 && len(t.Verbs) == 0 {
			c.errf(f, firstPos(slices.Concat(t.Classes, t.Sinks)), "a tool class entry needs match (a tool name glob), capability (a capability glob), args (argument name globs) or verbs (words of the name)")
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
		if tc.args = c.argGlobs(f, "argument", t.Args); len(tc.args) == 0 {
			tc.args = nil // args: [] is no args matcher, as before
		}
		tc.sinks = c.argGlobs(f, "sink", t.Sinks)
		for _, v := range t.Verbs {
			w := catalogKey(v.Value)
			// A verb is compared with one word of a name: a glob or two
			// words could never match, and an empty one would read as
			// "no verb matcher".
			if w == "" || strings.ContainsAny(w, "_*?[\\") {
				c.errf(f, v.Pos, "verb %q: one word, without glob characters", v.Value)
			}
			tc.verbs = append(tc.verbs, w)
		}
		// sinks: [] is a declaration too: the tool carries nothing out.
		if len(t.Classes) == 0 && t.Sinks == nil {
			c.errf(f, toolEntryPos(t), "a tool class entry needs classes or sinks")
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
			if s.Files && !s.Output {
				c.errf(f, s.ID.Pos, "taint source %q: files needs output: the files are written when the call runs", s.ID.Value)
			}
			if p := c.expr(f, s.When, "when"); p != nil {
				tl.Sources = append(tl.Sources, taintSource{id: s.ID.Value, when: p, unanswered: s.Unanswered || s.Output, output: s.Output, files: s.Files})
			}
		}
		if t.ClearWhen.Set() {
			tl.clearWhen = c.expr(f, t.ClearWhen, "clear_when")
		}
		c.set.Taints = append(c.set.Taints, tl)
	}
	for _, name := range slices.Sorted(maps.Keys(f.Macros)) {
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
		c.set.Tests = append(c.set.Tests, TestCase{File: f.Path, Pos: c.testPos(f, i), Source: f.Source, Index: i})
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

func posOr(s Str, fallback Str) Pos {
	if s.Set() {
		return s.Pos
	}
	return fallback.Pos
}

// argGlobs checks and converts a catalog entry's argument name globs
// (args, sinks) to catalog form; nil when the field is absent, empty when
// it is an empty list.
func (c *compiler) argGlobs(f *File, what string, src []Str) []string {
	if src == nil {
		return nil
	}
	globs := make([]string, 0, len(src))
	for _, a := range src {
		g := catalogGlob(a.Value)
		if _, err := path.Match(g, ""); err != nil {
			c.errf(f, a.Pos, "%s glob %q: %v", what, a.Value, err)
		} else if g == "" {
			c.errf(f, a.Pos, "%s glob %q is empty", what, a.Value)
		}
		globs = append(globs, g)
	}
	return globs
}

// toolEntryPos is the position of a catalog entry's first matcher.
func toolEntryPos(t ToolClassDef) Pos {
	for _, s := range slices.Concat([]Str{t.Match, t.Capability}, t.Args, t.Verbs) {
		if s.Set() {
			return s.Pos
		}
	}
	return Pos{1, 1}
}

func firstPos(ss []Str) Pos {
	if len(ss) > 0 {
		return ss[0].Pos
	}
	return Pos{1, 1}
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
