package policy

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// APIVersion is the rule file format this engine reads.
const APIVersion = "turnguard/v1"

// File is one rule file as written (see rules/README.md for the format).
// Scalars that diagnostics point at carry their position.
type File struct {
	APIVersion Str                 `yaml:"apiVersion"`
	Kind       Str                 `yaml:"kind"`
	Metadata   Metadata            `yaml:"metadata"`
	Lists      map[string][]string `yaml:"lists"`
	Macros     map[string]Str      `yaml:"macros"`
	Tools      []ToolClassDef      `yaml:"tools"`
	Taints     []TaintDef          `yaml:"taints"`
	Rules      []RuleDef           `yaml:"rules"`
	Overrides  []OverrideDef       `yaml:"overrides"`
	// Tests are the file's test cases, read by internal/ruletest in its
	// scenario format: the engine runs none.
	Tests []yaml.Node `yaml:"tests"`

	// Path is where the file was read from; Source its bytes.
	Path   string `yaml:"-"`
	Source []byte `yaml:"-"`
	root   *yaml.Node
}

// Metadata names a rule file.
type Metadata struct {
	Name        Str    `yaml:"name"`
	Description string `yaml:"description"`
	Owner       string `yaml:"owner"`
}

// ToolClassDef gives classes and sinks to tools by name glob, capability
// glob, argument name globs and verbs of the name; every matcher given must
// match.
type ToolClassDef struct {
	Match      Str `yaml:"match"`
	Capability Str `yaml:"capability"`
	// Args: the call carries an argument (with a value other than null,
	// false or "") whose name matches one of these globs.
	Args []Str `yaml:"args"`
	// Verbs: a word in verb position of the tool's name is one of these.
	Verbs   []Str `yaml:"verbs"`
	Classes []Str `yaml:"classes"`
	// Sinks: globs on the names of the arguments of the matched tools
	// that carry data or authority out of the session (a recipient, a
	// URL, a command, a path written).
	Sinks []Str `yaml:"sinks"`
}

// TaintDef declares a taint label: what sets it, what clears it, and the
// default window of tainted().
type TaintDef struct {
	ID          Str         `yaml:"id"`
	Description string      `yaml:"description"`
	Sources     []SourceDef `yaml:"sources"`
	Window      *WindowDef  `yaml:"window"`
	ClearWhen   Str         `yaml:"clear_when"`
}

// SourceDef is one condition that sets (or refreshes) a taint.
type SourceDef struct {
	ID   Str `yaml:"id"`
	When Str `yaml:"when"`
	// Unanswered defers the source: a call it matches, once let through,
	// sets the label only if another envelope of the session arrives
	// before the call's result (taintUnanswered).
	Unanswered bool `yaml:"unanswered"`
	// Output makes the call's output the source, whatever tool brought
	// it: a call it matches, once let through, sets the label when its
	// result arrives (the result as evidence), or as Unanswered does when
	// another envelope arrives first. For a call whose arguments, not its
	// tool, say it brings content in (a shell's curl).
	Output bool `yaml:"output"`
	// Files (with Output) makes the files the call writes carry the
	// label: a later call naming one of them — a Read of it, a command
	// that cats or runs it — is a source too, its output setting the
	// label as Output does (a page a curl -o saved, read turns later).
	Files bool `yaml:"files"`
}

// WindowDef bounds a window in turns and/or time; whichever ends first.
type WindowDef struct {
	Turns    *Int `yaml:"turns"`
	Duration *Dur `yaml:"duration"`
	Steps    *Int `yaml:"steps"`
	pos      Pos
}

// RuleDef is one rule.
type RuleDef struct {
	ID          Str            `yaml:"id"`
	Title       Str            `yaml:"title"`
	Description string         `yaml:"description"`
	Severity    Str            `yaml:"severity"`
	Tags        []string       `yaml:"tags"`
	References  []string       `yaml:"references"`
	Mode        Str            `yaml:"mode"`
	On          []Str          `yaml:"on"`
	When        Str            `yaml:"when"`
	After       *AfterDef      `yaml:"after"`
	Threshold   *ThresholdDef  `yaml:"threshold"`
	Decision    Str            `yaml:"decision"`
	ReasonCodes []string       `yaml:"reason_codes"`
	Message     Str            `yaml:"message"`
	Ask         *AskDef        `yaml:"ask"`
	Exceptions  []ExceptionDef `yaml:"exceptions"`
}

// AfterDef makes a rule a taint-window guard.
type AfterDef struct {
	Taint  Str        `yaml:"taint"`
	Within *WindowDef `yaml:"within"`
}

// ThresholdDef makes a rule a threshold: it hits when more than Max
// matching events fall in the counting scope.
type ThresholdDef struct {
	Max Int `yaml:"max"`
	// Per is turn or session; Within a sliding window instead.
	Per         Str        `yaml:"per"`
	Within      *WindowDef `yaml:"within"`
	Consecutive bool       `yaml:"consecutive"`
	// Key is session (default) or agent.
	Key Str `yaml:"key"`
}

// AskDef is the ask_details of a rule whose decision is ask.
type AskDef struct {
	Approver struct {
		Type     Str    `yaml:"type"`
		ID       Str    `yaml:"id"`
		Endpoint string `yaml:"endpoint"`
	} `yaml:"approver"`
	Question           Str      `yaml:"question"`
	TimeoutSeconds     Int      `yaml:"timeout_seconds"`
	TimeoutDisposition Str      `yaml:"timeout_disposition"`
	Options            []string `yaml:"options"`
}

// OverrideDef changes the mode of a rule declared in another file, so a
// deployment can put a rule of the default pack in shadow mode or turn it
// off without copying the pack.
type OverrideDef struct {
	Rule Str `yaml:"rule"`
	Mode Str `yaml:"mode"`
}

// ExceptionDef suppresses a rule's hit when its condition holds.
type ExceptionDef struct {
	Name Str `yaml:"name"`
	When Str `yaml:"when"`
}

// Pos is a position in a rule file (1-based line and column).
type Pos struct {
	Line, Col int
}

// Str is a YAML scalar string with its position.
type Str struct {
	Value string
	Pos   Pos
	// Style is the YAML scalar style, used to place positions inside it.
	Style yaml.Style
	set   bool
}

// UnmarshalYAML keeps the scalar's value and position.
func (s *Str) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &typeError{Pos{n.Line, n.Column}, "want a string"}
	}
	*s = Str{Value: n.Value, Pos: Pos{n.Line, n.Column}, Style: n.Style, set: true}
	return nil
}

// Set reports whether the field was present.
func (s Str) Set() bool { return s.set }

// Int is a YAML integer with its position.
type Int struct {
	Value int
	Pos   Pos
	set   bool
}

// UnmarshalYAML parses an integer.
func (i *Int) UnmarshalYAML(n *yaml.Node) error {
	v, err := strconv.Atoi(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		return &typeError{Pos{n.Line, n.Column}, fmt.Sprintf("want an integer, not %q", n.Value)}
	}
	*i = Int{Value: v, Pos: Pos{n.Line, n.Column}, set: true}
	return nil
}

// Dur is a YAML duration ("90s", "15m") with its position.
type Dur struct {
	Value time.Duration
	Pos   Pos
}

// UnmarshalYAML parses a Go duration.
func (d *Dur) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		return &typeError{Pos{n.Line, n.Column}, fmt.Sprintf("want a duration such as 90s or 15m, not %q", n.Value)}
	}
	*d = Dur{Value: v, Pos: Pos{n.Line, n.Column}}
	return nil
}

// UnmarshalYAML keeps the window's position for diagnostics.
func (w *WindowDef) UnmarshalYAML(n *yaml.Node) error {
	type plain WindowDef
	if n.Kind != yaml.MappingNode {
		return &typeError{Pos{n.Line, n.Column}, "want a mapping such as {turns: 2, duration: 30m}"}
	}
	if err := checkKeys(n, "turns", "duration", "steps"); err != nil {
		return err
	}
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*w = WindowDef(p)
	w.pos = Pos{n.Line, n.Column}
	return nil
}

// typeError is a decoding error at a known position.
type typeError struct {
	pos Pos
	msg string
}

func (e *typeError) Error() string { return fmt.Sprintf("line %d: %s", e.pos.Line, e.msg) }

// checkKeys refuses keys other than the allowed ones in a mapping decoded
// by a custom unmarshaler (the decoder's own unknown-field check does not
// reach inside those).
func checkKeys(n *yaml.Node, allowed ...string) error {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		ok := false
		for _, a := range allowed {
			ok = ok || k.Value == a
		}
		if !ok {
			return &typeError{Pos{k.Line, k.Column}, fmt.Sprintf("unknown field %q (want one of %v)", k.Value, allowed)}
		}
	}
	return nil
}

// Diagnostic is one problem in a rule file, at a position.
type Diagnostic struct {
	File string
	Pos  Pos
	Msg  string
}

func (d Diagnostic) String() string {
	return fmt.Sprintf("%s:%d:%d: %s", d.File, d.Pos.Line, d.Pos.Col, d.Msg)
}

// Diagnostics is the error of a rule set that does not load: every problem
// found, each with its file and position.
type Diagnostics []Diagnostic

func (ds Diagnostics) Error() string {
	var b bytes.Buffer
	for i, d := range ds {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(d.String())
	}
	return b.String()
}

var yamlLineErr = regexp.MustCompile(`line (\d+): (.*)`)

// ParseFile reads one rule file. YAML errors, unknown fields and wrongly
// typed values come back as Diagnostics with positions.
func ParseFile(path string, src []byte) (*File, error) {
	f := &File{Path: path, Source: src}
	var root yaml.Node
	if err := yaml.Unmarshal(src, &root); err != nil {
		return nil, f.yamlError(err, nil)
	}
	if len(root.Content) == 0 {
		return nil, Diagnostics{{File: path, Pos: Pos{1, 1}, Msg: "empty rule file"}}
	}
	f.root = &root
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(f); err != nil {
		return nil, f.yamlError(err, &root)
	}
	return f, nil
}

// yamlError turns the YAML library's errors ("line N: …") into positioned
// diagnostics, finding the column from the node tree where it can.
func (f *File) yamlError(err error, root *yaml.Node) Diagnostics {
	var te *typeError
	if errors.As(err, &te) {
		return Diagnostics{{File: f.Path, Pos: te.pos, Msg: te.msg}}
	}
	var ds Diagnostics
	msgs := []string{err.Error()}
	var ye *yaml.TypeError
	if errors.As(err, &ye) {
		msgs = ye.Errors
	}
	for _, m := range msgs {
		sub := yamlLineErr.FindStringSubmatch(m)
		if sub == nil {
			ds = append(ds, Diagnostic{File: f.Path, Pos: Pos{1, 1}, Msg: m})
			continue
		}
		line, _ := strconv.Atoi(sub[1])
		msg := readableTypeError(sub[2])
		col := 1
		if fm := unknownField.FindStringSubmatch(msg); fm != nil {
			msg = fmt.Sprintf("unknown field %q", fm[1])
			col = findKeyColumn(root, line, fm[1])
		} else {
			col = findColumn(root, line)
		}
		ds = append(ds, Diagnostic{File: f.Path, Pos: Pos{line, col}, Msg: msg})
	}
	return ds
}

var unknownField = regexp.MustCompile(`field (\S+) not found in type`)

var goTypeName = regexp.MustCompile("cannot unmarshal (!!\\w+)( `[^`]*`)? into (\\S+)")

// readableTypeError says what a wrongly typed value should have been, in
// YAML terms rather than Go type names.
func readableTypeError(msg string) string {
	m := goTypeName.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	want := "a mapping"
	switch {
	case strings.HasPrefix(m[3], "[]"):
		want = "a list"
	case strings.HasSuffix(m[3], "policy.Str") || m[3] == "string":
		want = "a string"
	case strings.HasSuffix(m[3], "policy.Int") || strings.HasPrefix(m[3], "int"):
		want = "an integer"
	case m[3] == "bool":
		want = "true or false"
	}
	return fmt.Sprintf("want %s here, not %s%s", want, m[1], m[2])
}

func findKeyColumn(n *yaml.Node, line int, key string) int {
	if n == nil {
		return 1
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; k.Line == line && k.Value == key {
				return k.Column
			}
		}
	}
	for _, c := range n.Content {
		if col := findKeyColumn(c, line, key); col != 1 {
			return col
		}
	}
	return 1
}

// findColumn returns the column of the last scalar on a line: in
// "key: value" the value, which is what a type error is about.
func findColumn(n *yaml.Node, line int) int {
	col := 1
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n == nil {
			return
		}
		if n.Line == line && n.Kind == yaml.ScalarNode && n.Column > col {
			col = n.Column
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
	return col
}
