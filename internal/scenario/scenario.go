// Package scenario reads the envelope scenarios under testdata/scenarios:
// a compact YAML description of a sequence of ACS envelopes across one or
// more sessions, with the decision, violations and dead-lettering each must
// get and the session states they must leave behind. The pure-core tests,
// the end-to-end tests and replay all run the same files.
package scenario

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/turnguard/turnguard/internal/core/acs"
)

// Scenario is one file.
type Scenario struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Tenant defaults to "default", Agent to "scenario-agent".
	Tenant string `yaml:"tenant"`
	Agent  string `yaml:"agent"`
	// Start is the timestamp of the first step; each step is one second
	// after the previous unless it says otherwise.
	Start time.Time `yaml:"start"`
	// Sessions names the sessions besides "main"; their ids are derived
	// from the scenario name, or given explicitly.
	Sessions []string `yaml:"sessions"`
	Steps    []Step   `yaml:"steps"`
	// States maps a session alias to fields its final state must have:
	// each key must be present in the state's JSON with an equal value.
	States map[string]map[string]any `yaml:"states"`
}

// Step is one envelope (or raw message) and what it must get.
type Step struct {
	// Hook is the method's hook name: "turnStart", "toolCallRequest",
	// "agbom/snapshot", "system/ping"; or a full method ("steps/x").
	Hook string `yaml:"hook"`
	// Session is the alias of the session (default "main").
	Session string `yaml:"session"`
	// Turn names the turn: on turnStart it opens the turn of that name
	// (turn_id = this envelope's request_id unless TurnID is given); on
	// other steps it sets metadata.turn_id to that turn's id.
	Turn   string `yaml:"turn"`
	TurnID string `yaml:"turn_id"`
	// Request names this envelope's request id so that a later step can
	// reuse it (RequestID: "@name"), e.g. to replay it.
	Request   string `yaml:"request"`
	RequestID string `yaml:"request_id"`
	// Payload is the hook payload. Strings may reference {{session.X}},
	// {{turn.X}} and {{request.X}}.
	Payload map[string]any `yaml:"payload"`
	// Metadata entries override params.metadata (null removes a key);
	// Params entries override params members.
	Metadata map[string]any `yaml:"metadata"`
	Params   map[string]any `yaml:"params"`
	// PadBytes adds a filler string of this many bytes to the payload.
	PadBytes int `yaml:"pad_bytes"`
	// Raw replaces the whole message body.
	Raw *string `yaml:"raw"`
	// Subject replaces the inbound subject (tenant.session.hook under
	// acs.hooks unless it starts with "acs.").
	Subject string `yaml:"subject"`
	// At is the offset from Start (default: one second per step).
	At     *Duration `yaml:"at"`
	Expect Expect    `yaml:"expect"`
}

// Expect is what a step must get.
type Expect struct {
	// Decision is allow, deny, ask, error (a JSON-RPC error response) or
	// none (no response at all: the subject names no session).
	Decision string `yaml:"decision"`
	// Violations are the turn-state violation names, in order; in a strict
	// scenario none when omitted, in a lenient one unchecked.
	Violations []string `yaml:"violations"`
	// Rules are the ids of the enforcing rules cited in the decision's
	// policy_references; Alerts the rule ids of the alerts raised; Shadow
	// the rules that would have decided in shadow mode. Unchecked when
	// omitted.
	Rules  []string `yaml:"rules"`
	Alerts []string `yaml:"alerts"`
	Shadow []string `yaml:"shadow"`
	// Cited, when given, must equal the decision's cited_provenance_ids.
	Cited []string `yaml:"cited"`
	// ReasonCodes, when given, must equal the decision's reason codes.
	ReasonCodes []string `yaml:"reason_codes"`
	// Code, when non-zero, is the refusal's ACS/JSON-RPC error code.
	Code int `yaml:"code"`
	// DeadLetter says the message must be dead-lettered.
	DeadLetter bool `yaml:"dead_letter"`

	strict bool
}

// Duration is a YAML duration ("1m30s").
type Duration struct{ time.Duration }

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	d.Duration = v
	return nil
}

// Load reads and checks a scenario file. Unknown fields are errors.
func Load(path string) (*Scenario, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	var s Scenario
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := s.Prepare(true); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}

// Prepare fills the defaults and checks the steps. A strict scenario (a
// file under testdata/scenarios) states the decision of every step and
// lists every violation; a lenient one (a rule file's test case) checks
// only what a step's expect says.
func (s *Scenario) Prepare(strict bool) error {
	if s.Name == "" || len(s.Steps) == 0 {
		return errors.New("a scenario needs a name and steps")
	}
	if s.Tenant == "" {
		s.Tenant = "default"
	}
	if s.Agent == "" {
		s.Agent = "scenario-agent"
	}
	if s.Start.IsZero() {
		s.Start = time.Date(2026, 9, 19, 10, 0, 0, 0, time.UTC)
	}
	for i := range s.Steps {
		st := &s.Steps[i]
		st.Expect.strict = strict
		switch st.Expect.Decision {
		case "allow", "deny", "ask", "error", "none":
		case "":
			if strict {
				return fmt.Errorf("step %d: expect.decision is required", i+1)
			}
		default:
			return fmt.Errorf("step %d: expect.decision %q: want allow, deny, ask, error or none", i+1, st.Expect.Decision)
		}
		if st.Hook == "" && st.Raw == nil {
			return fmt.Errorf("step %d: needs a hook or raw", i+1)
		}
	}
	return nil
}

// Message is one built step: where it is published and its bytes.
type Message struct {
	Index   int
	Subject string
	Data    []byte
	// Tenant and SessionID are where its decision is expected.
	Tenant    string
	SessionID string
	RequestID string
	Expect    Expect
}

// SessionID returns the id of a session alias.
func (s *Scenario) SessionID(alias string) string {
	if alias == "" {
		alias = "main"
	}
	return s.uuid("session", alias)
}

// Built is a scenario turned into messages and expected final states.
type Built struct {
	Messages []Message
	States   []ExpectedState
}

// ExpectedState is the fields a session's final state must have.
type ExpectedState struct {
	Alias     string
	Tenant    string
	SessionID string
	Fields    map[string]any
}

// Build builds every step's message and expands the expected states. Ids
// are derived from the scenario name, so a scenario builds the same bytes
// every time.
func (s *Scenario) Build() (Built, error) {
	b := builder{s: s, turns: map[string]string{}, requests: map[string]string{}}
	var out Built
	for i := range s.Steps {
		m, err := b.build(i)
		if err != nil {
			return Built{}, fmt.Errorf("scenario %s step %d: %w", s.Name, i+1, err)
		}
		out.Messages = append(out.Messages, m)
	}
	aliases := slices.Sorted(maps.Keys(s.States))
	for _, alias := range aliases {
		if alias != "main" && !slices.Contains(s.Sessions, alias) {
			return Built{}, fmt.Errorf("scenario %s: states names undeclared session %q", s.Name, alias)
		}
		fields, _ := b.expandAll(s.States[alias]).(map[string]any)
		out.States = append(out.States, ExpectedState{Alias: alias, Tenant: s.Tenant, SessionID: s.SessionID(alias), Fields: fields})
	}
	return out, nil
}

type builder struct {
	s        *Scenario
	turns    map[string]string
	requests map[string]string
}

// build makes step i's message: its ids, subject and envelope.
func (b *builder) build(i int) (Message, error) {
	st := b.s.Steps[i]
	session := st.Session
	if session == "" {
		session = "main"
	}
	if session != "main" && !slices.Contains(b.s.Sessions, session) {
		return Message{}, fmt.Errorf("session %q is not declared under sessions", session)
	}
	m := Message{Index: i, Tenant: b.s.Tenant, SessionID: b.s.SessionID(session), Expect: st.Expect}
	method := st.Hook
	if !strings.Contains(method, "/") && method != "" {
		method = "steps/" + method
	}
	var err error
	if m.RequestID, err = b.requestID(i, st); err != nil {
		return Message{}, err
	}
	turnID, err := b.turnID(st, method, m.RequestID)
	if err != nil {
		return Message{}, err
	}
	m.Subject = acs.InboundSubject(b.s.Tenant, m.SessionID, acs.HookToken(method))
	if st.Subject != "" {
		m.Subject = st.Subject
		if !strings.HasPrefix(st.Subject, "acs.") {
			m.Subject = acs.InboundPrefix + "." + st.Subject
		}
		m.Subject = b.expand(m.Subject)
	}
	if st.Raw != nil {
		m.Data = []byte(b.expand(*st.Raw))
		return m, nil
	}
	m.Data, err = b.envelope(i, st, method, m, turnID)
	return m, err
}

// requestID is step i's request id: generated, an earlier step's
// (@name), or given; a step that names its request remembers it.
func (b *builder) requestID(i int, st Step) (string, error) {
	id := b.s.uuid("request", fmt.Sprint(i))
	if ref, ok := strings.CutPrefix(st.RequestID, "@"); ok {
		if id, ok = b.requests[ref]; !ok {
			return "", fmt.Errorf("request_id @%s names no earlier request", ref)
		}
	} else if st.RequestID != "" {
		id = st.RequestID
	}
	if st.Request != "" {
		b.requests[st.Request] = id
	}
	return id, nil
}

// turnID is the turn id of a step in a named turn: a turnStart opens the
// turn with its request id (or the turn id given), later steps use it.
func (b *builder) turnID(st Step, method, requestID string) (string, error) {
	if st.Turn == "" {
		return "", nil
	}
	if method == "steps/turnStart" {
		id := requestID
		if st.TurnID != "" {
			id = st.TurnID
		}
		b.turns[st.Turn] = id
		return id, nil
	}
	id := b.turns[st.Turn]
	if id == "" {
		return "", fmt.Errorf("turn %q was not started by an earlier turnStart", st.Turn)
	}
	return id, nil
}

// envelope encodes step i's JSON-RPC envelope, with the step's payload,
// metadata and params overrides applied.
func (b *builder) envelope(i int, st Step, method string, m Message, turnID string) ([]byte, error) {
	at := time.Duration(i) * time.Second
	if st.At != nil {
		at = st.At.Duration
	}
	payload := b.expandAll(st.Payload)
	if payload == nil {
		payload = map[string]any{}
	}
	pm := payload.(map[string]any)
	if method == "steps/turnStart" || method == "steps/turnEnd" {
		if _, ok := pm["turn_id"]; !ok {
			pm["turn_id"] = turnID
		}
	}
	if st.PadBytes > 0 {
		pm["x_padding"] = strings.Repeat("x", st.PadBytes)
	}
	md := map[string]any{"agent_id": b.s.Agent, "session_id": m.SessionID}
	if turnID != "" {
		md["turn_id"] = turnID
	}
	merge(md, b.expandAll(st.Metadata))
	params := map[string]any{
		"acs_version": acs.Version,
		"request_id":  m.RequestID,
		"timestamp":   b.s.Start.Add(at).UTC().Format(time.RFC3339Nano),
		"metadata":    md,
		"payload":     pm,
	}
	merge(params, b.expandAll(st.Params))
	return json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "id": m.RequestID, "params": params})
}

// merge applies overrides; a nil value deletes the key.
func merge(dst map[string]any, src any) {
	o, _ := src.(map[string]any)
	for k, v := range o {
		if v == nil {
			delete(dst, k)
		} else {
			dst[k] = v
		}
	}
}

// expandAll replaces references in every string of a YAML value.
func (b *builder) expandAll(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = b.expandAll(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = b.expandAll(x)
		}
		return out
	case string:
		return b.expand(t)
	}
	return v
}

// expand replaces {{session.X}}, {{turn.X}} and {{request.X}}.
func (b *builder) expand(s string) string {
	for {
		start := strings.Index(s, "{{")
		if start < 0 {
			return s
		}
		end := strings.Index(s[start:], "}}")
		if end < 0 {
			return s
		}
		ref := s[start+2 : start+end]
		kind, name, _ := strings.Cut(ref, ".")
		var val string
		switch kind {
		case "session":
			val = b.s.SessionID(name)
		case "turn":
			val = b.turns[name]
		case "request":
			val = b.requests[name]
		}
		s = s[:start] + val + s[start+end+2:]
	}
}

// uuid derives a stable version-4-shaped UUID from the scenario name.
func (s *Scenario) uuid(kind, key string) string {
	sum := sha256.Sum256([]byte(s.Name + "/" + kind + "/" + key))
	sum[6] = sum[6]&0x0f | 0x40
	sum[8] = sum[8]&0x3f | 0x80
	h := hex.EncodeToString(sum[:16])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// Observed is what happened to one message, as a runner saw it.
type Observed struct {
	// Decision is allow/deny/ask (result), error (JSON-RPC error) or none.
	Decision    string
	ReasonCodes []string
	// Violations are the turn-state violation names reported.
	Violations []string
	// Rules, Alerts and Shadow are rule ids, as in Expect.
	Rules      []string
	Alerts     []string
	Shadow     []string
	Cited      []string
	Code       int
	DeadLetter bool
}

// Check compares an observation with a step's expectation.
func (e Expect) Check(o Observed) error {
	var errs []error
	if (e.strict || e.Decision != "") && o.Decision != e.Decision {
		errs = append(errs, fmt.Errorf("decision %s, want %s", o.Decision, e.Decision))
	}
	if (e.strict || e.Violations != nil) && !slices.Equal(o.Violations, e.Violations) {
		errs = append(errs, fmt.Errorf("violations %v, want %v", o.Violations, e.Violations))
	}
	for _, c := range []struct {
		what      string
		got, want []string
	}{{"rules", o.Rules, e.Rules}, {"alerts", o.Alerts, e.Alerts}, {"shadow rules", o.Shadow, e.Shadow}, {"cited provenance ids", o.Cited, e.Cited}} {
		if c.want != nil && !slices.Equal(slices.Sorted(slices.Values(c.got)), slices.Sorted(slices.Values(c.want))) {
			errs = append(errs, fmt.Errorf("%s %v, want %v", c.what, c.got, c.want))
		}
	}
	if e.ReasonCodes != nil && !slices.Equal(o.ReasonCodes, e.ReasonCodes) {
		errs = append(errs, fmt.Errorf("reason codes %v, want %v", o.ReasonCodes, e.ReasonCodes))
	}
	if e.Code != 0 && o.Code != e.Code {
		errs = append(errs, fmt.Errorf("code %d, want %d", o.Code, e.Code))
	}
	if (e.strict || e.DeadLetter) && o.DeadLetter != e.DeadLetter {
		errs = append(errs, fmt.Errorf("dead-lettered %v, want %v", o.DeadLetter, e.DeadLetter))
	}
	return errors.Join(errs...)
}

// CheckState compares a session state, as JSON, with the expected fields:
// every field given must be present and equal, where an expected object
// matches an object that has at least its fields (recursively); lists and
// scalars must be equal.
func CheckState(alias string, state []byte, want map[string]any) error {
	var got map[string]any
	if err := json.Unmarshal(state, &got); err != nil {
		return fmt.Errorf("session %s: state is not a JSON object: %w", alias, err)
	}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(want)) {
		wj, _ := json.Marshal(want[k])
		var w any
		_ = json.Unmarshal(wj, &w)
		if !subset(w, got[k]) {
			gj, _ := json.Marshal(got[k])
			errs = append(errs, fmt.Errorf("session %s: %s is %s, want %s", alias, k, gj, wj))
		}
	}
	return errors.Join(errs...)
}

func subset(want, got any) bool {
	wm, ok := want.(map[string]any)
	if !ok {
		wj, _ := json.Marshal(want)
		gj, _ := json.Marshal(got)
		return bytes.Equal(wj, gj)
	}
	gm, ok := got.(map[string]any)
	if !ok {
		return false
	}
	for k, w := range wm {
		g, present := gm[k]
		if !present || !subset(w, g) {
			return false
		}
	}
	return true
}
