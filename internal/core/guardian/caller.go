package guardian

import (
	"fmt"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/alert"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// CallerRuleID names the alert of an envelope refused because its session
// belongs to another caller.
const CallerRuleID = "TG-CALLER-001"

// callerOf is the identity an envelope is decided as: the caller the
// processor verified (Message.Caller), or the tenant's NATS agents.
func callerOf(msg Message) string {
	if msg.Caller == "" {
		return turnstate.CallerNATS
	}
	return msg.Caller
}

// refuseCaller refuses an envelope that its session's owner did not send
// (issue 23, finding 4: a holder of the tenant's NATS agent credential
// injected empty turns into an HTTP caller's session), or whose caller
// attestation did not verify, or, with requireSigned, that was published
// on NATS unsigned. It is refused before it touches the state, so it can
// neither open nor end a turn there, and alerted. nil: the envelope may be
// decided.
func refuseCaller(state *turnstate.Session, route acs.Route, env *envelope, caller string, requireSigned bool) (*acs.Error, *Alert) {
	owner := ""
	if state != nil {
		owner = state.Caller
	}
	unsigned := requireSigned && caller == turnstate.CallerNATS
	if caller != turnstate.CallerForged && !unsigned && (owner == "" || owner == caller) {
		return nil, nil
	}
	ref := &acs.Error{Code: acs.CodeSessionRefused, Reason: acs.ReasonCallerNotBound,
		Message: fmt.Sprintf("session %s belongs to %s, not to the publisher of this envelope (%s)", route.SessionID, owner, caller)}
	switch {
	case caller == turnstate.CallerForged:
		ref.Message = fmt.Sprintf("the envelope for session %s carries a caller attestation or signature that fails verification (a forged caller)", route.SessionID)
	case unsigned:
		ref.Message = fmt.Sprintf("the envelope for session %s was published on NATS without its publisher's signature (Acs-Caller-Key, Acs-Caller-Sig), which this processor requires (--require-caller-signatures): publish with pkg/client, which signs with its credential", route.SessionID)
	}
	a := callerAlert(route, env, owner, caller, ref.Message)
	return ref, &a
}

// callerAlert is the high-severity finding of a refused foreign envelope.
func callerAlert(r acs.Route, env *envelope, owner, caller, msg string) Alert {
	seq := env.step.Seq
	md := env.req.Params.Metadata
	tg := map[string]any{"rule_id": CallerRuleID, "severity": "high", "decision": acs.Deny, "tenant": r.Tenant, "session_id": r.SessionID,
		"agent_id": md.AgentID, "request_id": env.req.Params.RequestID, "stream_seq": seq, "hook": env.spec.Hook,
		"session_caller": owner, "envelope_caller": caller}
	return sessionFinding{ruleID: CallerRuleID, title: "Envelope from another caller than the session's", types: []string{"acs.protocol", "identity"},
		severity: "high", message: msg, action: "Denied", actionID: 2, disposition: "Blocked", dispositionID: 2,
		tenant: r.Tenant, sessionID: r.SessionID, agentID: md.AgentID, turnguard: tg,
		evidences: []alert.Evidence{{Data: map[string]any{"role": "trigger", "request_id": env.req.Params.RequestID, "stream_seq": seq, "hook": env.spec.Hook, "method": env.spec.Method}}},
	}.alert(env)
}
