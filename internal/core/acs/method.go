package acs

import (
	"fmt"
	"slices"
	"strings"
)

// Scope says where a method sits relative to turns.
type Scope int

const (
	// TurnStep methods happen inside a turn when one is open and then must
	// carry metadata.turn_id.
	TurnStep Scope = iota
	// SessionLevel methods (sessionStart, sessionEnd, agentTrigger) never
	// carry a turn id.
	SessionLevel
	// Liveness methods (system/ping) are outside session state entirely.
	Liveness
)

// MethodSpec is one row of the ACS method table (spec §5): what a method's
// payload must look like, which dispositions a Guardian may return for it,
// and how it relates to turns.
type MethodSpec struct {
	// Method is the JSON-RPC method name, e.g. "steps/turnStart".
	Method string
	// Hook is the short name used in subjects, expected_inputs and logs
	// ("turnStart"); for non-steps namespaces it is the namespace.
	Hook string
	// PayloadSchema is the payload schema's path under the schema base,
	// optionally with a fragment (e.g. "hooks/turn-start.json").
	PayloadSchema string
	// Permitted lists the dispositions the hook permits, most restrictive
	// first. A hook whose list lacks Deny is audit-only.
	Permitted []Disposition
	Scope     Scope
	// Chain is true when the Guardian writes a ContextEntry for the step.
	Chain bool
}

// Permits reports whether d is a disposition this method permits.
func (m *MethodSpec) Permits(d Disposition) bool { return slices.Contains(m.Permitted, d) }

// DecisionEligible reports whether the method can be denied.
func (m *MethodSpec) DecisionEligible() bool { return m.Permits(Deny) }

var (
	allowDeny       = []Disposition{Deny, Allow}
	allowDenyModify = []Disposition{Deny, Modify, Allow}
	allowOnly       = []Disposition{Allow}
	allFive         = []Disposition{Deny, Defer, Ask, Modify, Allow}
)

// methodTable is the one table of methods turnguard evaluates: the 19 steps/*
// hooks of ACS v0.1.0 plus agbom/* and system/ping. Dispositions follow the
// spec §5 table (the Go reference's internal/method table).
var methodTable = []MethodSpec{
	{"steps/sessionStart", "sessionStart", "hooks/session-start.json", allowDeny, SessionLevel, true},
	{"steps/agentTrigger", "agentTrigger", "hooks/agent-trigger.json", allowDenyModify, SessionLevel, true},
	{"steps/turnStart", "turnStart", "hooks/turn-start.json", allowDeny, TurnStep, true},
	{"steps/userMessage", "userMessage", "hooks/user-message.json", allowDenyModify, TurnStep, true},
	{"steps/agentResponse", "agentResponse", "hooks/agent-response.json", allowDenyModify, TurnStep, true},
	{"steps/knowledgeRetrieval", "knowledgeRetrieval", "hooks/knowledge-retrieval.json", allowDenyModify, TurnStep, true},
	{"steps/memoryContextRetrieval", "memoryContextRetrieval", "hooks/memory-context-retrieval.json", allowDenyModify, TurnStep, true},
	{"steps/memoryStore", "memoryStore", "hooks/memory-store.json", allowDenyModify, TurnStep, true},
	{"steps/toolCallRequest", "toolCallRequest", "hooks/tool-call-request.json", allFive, TurnStep, true},
	{"steps/toolCallResult", "toolCallResult", "hooks/tool-call-result.json", allowDenyModify, TurnStep, true},
	{"steps/preCompact", "preCompact", "hooks/pre-compact.json", allowDeny, TurnStep, true},
	{"steps/postCompact", "postCompact", "hooks/post-compact.json", []Disposition{Modify, Allow}, TurnStep, true},
	{"steps/subagentStart", "subagentStart", "hooks/subagent-start.json", allowDeny, TurnStep, true},
	{"steps/subagentStop", "subagentStop", "hooks/subagent-stop.json", allowOnly, TurnStep, true},
	{"steps/skillRegister", "skillRegister", "hooks/skill-register.json", allowDeny, TurnStep, true},
	{"steps/skillLoad", "skillLoad", "hooks/skill-load.json", allowDeny, TurnStep, true},
	{"steps/skillUnload", "skillUnload", "hooks/skill-unload.json", allowOnly, TurnStep, true},
	{"steps/turnEnd", "turnEnd", "hooks/turn-end.json", allowOnly, TurnStep, true},
	{"steps/sessionEnd", "sessionEnd", "hooks/session-end.json", allowOnly, SessionLevel, true},
	{"agbom/snapshot", "agbom", "hooks/agbom-snapshot.json", allowDeny, TurnStep, true},
	{"agbom/changed", "agbom", "hooks/agbom-changed.json", allowDeny, TurnStep, true},
	{"system/ping", "system", "hooks/system-ping.json", allowOnly, Liveness, false},
}

// Methods returns the method table, in spec order. The slice is a copy.
func Methods() []MethodSpec { return slices.Clone(methodTable) }

// LookupMethod returns the spec for a method name, or nil when turnguard does
// not evaluate that method.
func LookupMethod(method string) *MethodSpec {
	for i := range methodTable {
		if methodTable[i].Method == method {
			return &methodTable[i]
		}
	}
	return nil
}

// Defined reports whether ACS v0.1.0 defines a method: the methods turnguard
// evaluates, handshake/hello, and the wrapped-protocol namespaces. A method
// outside them is "method not found" (-32601), one inside that turnguard
// does not evaluate is "not negotiated" (-32003), as ACS §17 has it.
func Defined(method string) bool {
	if LookupMethod(method) != nil || method == HandshakeMethod {
		return true
	}
	for _, ns := range []string{"protocols/MCP/", "protocols/A2A/", "wrapped:"} {
		if rest, ok := strings.CutPrefix(method, ns); ok && rest != "" {
			return true
		}
	}
	return false
}

// HandshakeMethod is ACS's capability negotiation (§4).
const HandshakeMethod = "handshake/hello"

// MethodError is the refusal of a method turnguard does not evaluate, nil for
// one it does.
func MethodError(method string) *Error {
	switch {
	case LookupMethod(method) != nil:
		return nil
	case !Defined(method):
		return &Error{Code: CodeMethodNotFound, Reason: ReasonMethodNotFound,
			Message: fmt.Sprintf("method %q is not an ACS v%s method", method, Version)}
	}
	return &Error{Code: CodeCapabilityNotNegotiated, Reason: ReasonUnknownMethod,
		Message: fmt.Sprintf("method %s is not evaluated by this Guardian", method)}
}

// HookToken returns the subject token for a method: the last segment of a
// steps/* method, otherwise the namespace ("agbom", "system", "handshake",
// "protocols", "wrapped"). It is defined for any method string, known or not,
// so a subject can be checked against a body before the method is looked up.
func HookToken(method string) string {
	if rest, ok := strings.CutPrefix(method, "steps/"); ok {
		return rest
	}
	if strings.HasPrefix(method, "wrapped:") {
		return "wrapped"
	}
	ns, _, _ := strings.Cut(method, "/")
	return ns
}
