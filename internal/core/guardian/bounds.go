package guardian

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/turnguard/turnguard/internal/core/acs"
)

// checkBounds refuses an envelope that carries a value the session's state
// would keep beyond its bound (acs.MaxIDBytes and the expected_inputs
// bounds): a schema-valid id of any length would otherwise grow the state
// past what one KV value can hold, and every later write of the partition
// would fail. Envelope fields are refused -32600, payload fields -32602,
// both with ReasonFieldTooLong, before anything changes. It walks the
// payload's provenance (e.provenance) once for the decision too.
func checkBounds(e *envelope) *acs.Error {
	md := &e.req.Params.Metadata
	var vs []acs.Violation
	add := func(pointer, s string, max int) {
		if v := acs.CheckStored(pointer, s, max); v != nil {
			vs = append(vs, *v)
		}
	}
	add("/params/metadata/agent_id", md.AgentID, acs.MaxIDBytes)
	add("/params/metadata/turn_id", md.TurnID, acs.MaxIDBytes)
	add("/params/metadata/parent_turn_id", md.ParentTurnID, acs.MaxIDBytes)
	if len(vs) > 0 {
		return tooLong(acs.CodeInvalidRequest, "an envelope identifier", vs)
	}
	const pp = "/params/payload/"
	switch st := &e.step; {
	case st.TurnStart != nil:
		add(pp+"turn_id", st.TurnStart.TurnID, acs.MaxIDBytes)
		add(pp+"parent_turn_id", st.TurnStart.ParentTurnID, acs.MaxIDBytes)
		in := st.TurnStart.ExpectedInputs
		if len(in) > acs.MaxExpectedInputs {
			vs = append(vs, acs.Violation{Pointer: pp + "expected_inputs",
				Message: fmt.Sprintf("%d items; at most %d", len(in), acs.MaxExpectedInputs)})
		}
		for i, s := range in {
			// The pointer is spelled only for an item that is too long.
			if acs.StoredLen(s) > acs.MaxExpectedInputBytes {
				add(pp+"expected_inputs/"+strconv.Itoa(i), s, acs.MaxExpectedInputBytes)
			}
		}
	case st.TurnEnd != nil:
		add(pp+"turn_id", st.TurnEnd.TurnID, acs.MaxIDBytes)
	case st.SubagentStart != nil:
		add(pp+"subagent_session_id", st.SubagentStart.SubagentSessionID, acs.MaxIDBytes)
		add(pp+"parent_session_id", st.SubagentStart.ParentSessionID, acs.MaxIDBytes)
		add(pp+"parent_step_id", st.SubagentStart.ParentStepID, acs.MaxIDBytes)
	}
	if e.spec.Scope != acs.Liveness {
		if e.provenance = acs.ProvenanceOf(e.payload); e.provenance == nil {
			e.provenance = []acs.Provenance{}
		}
		if provenanceTooLong(e.provenance) {
			vs = append(vs, provenanceViolations(e.payload, "/params/payload")...)
		}
	}
	if len(vs) > 0 {
		return tooLong(acs.CodeInvalidParams, "a payload identifier", vs)
	}
	return nil
}

func tooLong(code acs.Code, what string, vs []acs.Violation) *acs.Error {
	return &acs.Error{Code: code, Reason: acs.ReasonFieldTooLong, Violations: vs,
		Message: fmt.Sprintf("%s is longer than turnguard keeps in a session's state", what)}
}

// provenanceTooLong reports whether any id of ps exceeds acs.MaxIDBytes:
// the common case, decided without building a pointer.
func provenanceTooLong(ps []acs.Provenance) bool {
	long := func(s string) bool { return acs.StoredLen(s) > acs.MaxIDBytes }
	for _, p := range ps {
		if long(p.ProvenanceID) || long(p.SourceID) || slices.ContainsFunc(p.DerivedFrom, long) {
			return true
		}
	}
	return false
}

// provenanceViolations locates the over-long ids of the provenance objects
// in v, walking it as acs.ProvenanceOf does, with their JSON pointers.
func provenanceViolations(v any, ptr string) []acs.Violation {
	var vs []acs.Violation
	add := func(pointer, s string) {
		if x := acs.CheckStored(pointer, s, acs.MaxIDBytes); x != nil {
			vs = append(vs, *x)
		}
	}
	switch t := v.(type) {
	case map[string]any:
		if p, ok := t["provenance"].(map[string]any); ok {
			if origin, _ := p["origin"].(string); origin != "" {
				base := ptr + "/provenance/"
				if s, ok := p["provenance_id"].(string); ok {
					add(base+"provenance_id", s)
				}
				if s, ok := p["source_id"].(string); ok {
					add(base+"source_id", s)
				}
				if d, ok := p["derived_from"].([]any); ok {
					for i, x := range d {
						if s, ok := x.(string); ok {
							add(base+"derived_from/"+strconv.Itoa(i), s)
						}
					}
				}
			}
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			if k != "provenance" {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			vs = append(vs, provenanceViolations(t[k], ptr+"/"+pointerToken(k))...)
		}
	case []any:
		for i, x := range t {
			vs = append(vs, provenanceViolations(x, ptr+"/"+strconv.Itoa(i))...)
		}
	}
	return vs
}

// pointerToken escapes a member name for a JSON pointer (RFC 6901).
func pointerToken(k string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
}
