package policy

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/ext"
	"go.yaml.in/yaml/v3"
)

// Compiling CEL conditions: the environment rules are checked in, the
// expansion of $list and $macro references, the cost bounds, and the
// mapping of CEL's error locations back to the rule file.

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
	obj := func(t any) *cel.Type { return cel.ObjectType("policy." + reflect.TypeOf(t).Name()) }
	env, err := cel.NewEnv(
		ext.NativeTypes(reflect.TypeFor[ToolView](), reflect.TypeFor[SessionView](), reflect.TypeFor[TurnView](),
			reflect.TypeFor[ProvenanceView](), reflect.TypeFor[ViolationView](), reflect.TypeFor[TaintView](), reflect.TypeFor[SubagentView](),
			reflect.TypeFor[LineageView](), ext.ParseStructTags(true)),
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
		cel.Variable("lineage", cel.MapType(cel.StringType, obj(LineageView{}))),
		cel.Macros(taintMacro("tainted", "active"), taintMacro("taint_age_turns", "age_turns")),
	)
	if err != nil {
		// The environment is fixed by this package; failing here is a bug.
		panic(fmt.Sprintf("rules: CEL environment: %v", err))
	}
	return env
}

var refPattern = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)`)

// pathPartsRef finds a read of tool.path_parts in an expanded condition
// (a string literal holding the word only makes every call pay for it).
var pathPartsRef = regexp.MustCompile(`\bpath_parts\b`)

// readsOnlyRef finds a read of tool.reads_only, as pathPartsRef does.
var readsOnlyRef = regexp.MustCompile(`\breads_only\b`)

// interactiveRef finds a read of tool.interactive, as pathPartsRef does.
var interactiveRef = regexp.MustCompile(`\binteractive\b`)

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

// condition is a compiled boolean condition.
type condition struct {
	prg cel.Program
	// The guards are operands of the condition's top-level conjunction
	// that an envelope can fail without the condition being evaluated:
	// CEL's && is false when any operand is, whatever the others would
	// give (errors included), so where a guard fails the condition is
	// false and is not evaluated. Most taint sources run on every envelope
	// and watch one hook, and the protocol rules run on every envelope and
	// look for a violation, which nearly none has: evaluating them, with
	// their cost tracking, was most of the rules' allocations.
	//
	// hook is set (hookGuarded) for an operand hook == "<hook>";
	// needsViolations for an operand that is false on an envelope without
	// violations: a comprehension over them (violations.exists(...)) whose
	// result is its accumulator, initialised to false.
	hook            string
	hookGuarded     bool
	needsViolations bool
}

// settledFalse reports whether one of c's guards fails on e's envelope.
func (c *condition) settledFalse(e *evalCtx) bool {
	return c.hookGuarded && c.hook != e.hook || c.needsViolations && len(e.in.Violations) == 0
}

// findGuards sets c's guards from the top-level conjunction of its
// checked expression.
func (c *condition) findGuards(a *cel.Ast) {
	native := a.NativeRep()
	refs := native.ReferenceMap()
	// variable reports an identifier naming the variable name (at the top
	// level, outside any comprehension, nothing shadows it).
	variable := func(e ast.Expr, name string) bool {
		if e.Kind() != ast.IdentKind || e.AsIdent() != name {
			return false
		}
		r, ok := refs[e.ID()]
		return ok && r.Name == name && r.Value == nil
	}
	literal := func(e ast.Expr) (string, bool) {
		if e.Kind() != ast.LiteralKind {
			return "", false
		}
		s, ok := e.AsLiteral().(types.String)
		return string(s), ok
	}
	var walk func(e ast.Expr)
	walk = func(e ast.Expr) {
		switch e.Kind() {
		case ast.CallKind:
			call := e.AsCall()
			args := call.Args()
			switch {
			case call.IsMemberFunction():
			case call.FunctionName() == "_&&_":
				for _, a := range args {
					walk(a)
				}
			case call.FunctionName() == "_==_" && len(args) == 2 && !c.hookGuarded:
				if lit, ok := literal(args[1]); ok && variable(args[0], "hook") {
					c.hook, c.hookGuarded = lit, true
				} else if lit, ok := literal(args[0]); ok && variable(args[1], "hook") {
					c.hook, c.hookGuarded = lit, true
				}
			}
		case ast.ComprehensionKind:
			// Over an empty range a comprehension is its result with the
			// accumulator at its initial value: false here.
			comp := e.AsComprehension()
			init, result := comp.AccuInit(), comp.Result()
			if variable(comp.IterRange(), "violations") && init.Kind() == ast.LiteralKind && init.AsLiteral() == types.False &&
				result.Kind() == ast.IdentKind && result.AsIdent() == comp.AccuVar() {
				c.needsViolations = true
			}
		}
	}
	walk(native.Expr())
}

// expr compiles a boolean CEL condition, reporting errors at their place in
// the file.
func (c *compiler) expr(f *File, s Str, what string) *condition {
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
	if pathPartsRef.MatchString(exp.text) {
		c.set.usesPathParts = true
	}
	if readsOnlyRef.MatchString(exp.text) {
		c.set.usesReadsOnly = true
	}
	if interactiveRef.MatchString(exp.text) {
		c.set.usesInteractive = true
	}
	for _, ref := range checked.NativeRep().ReferenceMap() {
		if ref.Name == "lineage" {
			c.set.usesLineage = true
		}
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
	cond := &condition{prg: prg}
	cond.findGuards(checked)
	return cond
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
