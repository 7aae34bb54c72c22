package agentdojo

import (
	"fmt"

	"github.com/turnguard/turnguard/internal/acs"
	"github.com/turnguard/turnguard/internal/guardian"
	"github.com/turnguard/turnguard/internal/replay"
	"github.com/turnguard/turnguard/internal/rules"
)

// Decision is what the Guardian answered to one envelope.
type Decision struct {
	// Decision is allow, deny, ask, modify or defer; "error" for a
	// JSON-RPC error (the envelope was refused as bad input), "none" for
	// no answer.
	Decision    string   `json:"decision"`
	Rules       []string `json:"rules,omitempty"`
	ReasonCodes []string `json:"reason_codes,omitempty"`
	Reason      string   `json:"reason,omitempty"`
	// Error is a refusal's code and reason.
	Error string `json:"error,omitempty"`
}

// Allowed reports whether the call may go ahead.
func (d Decision) Allowed() bool { return d.Decision == string(acs.Allow) }

// Decided is a session's decisions.
type Decided struct {
	// Calls are the toolCallRequests' decisions, in Session.Calls order.
	Calls []Decision
	// Refused counts the envelopes of any hook refused as bad input
	// (JSON-RPC errors): a mapping that the schemas or the protocol
	// reject, so it should be 0. Others counts the envelopes other than
	// tool calls that were not allowed, and FirstOther is the first such.
	Refused    int
	FirstError string
	Others     int
	FirstOther string
}

// Decide decides every envelope of a session in order with the core and
// the rule set, in a fresh state: the same path as replay's (replay.Engine,
// guardian.Memory.Decide).
func Decide(g *guardian.Guardian, rs *rules.Set, s *Session) Decided {
	e := replay.NewEngine(g, rs)
	d := Decided{Calls: make([]Decision, len(s.Calls))}
	for i, env := range s.Envelopes {
		route := acs.Route{Tenant: Tenant, SessionID: s.ID, Hook: env.Hook}
		out := e.Decide(replay.Envelope{Seq: uint64(i + 1), Time: env.Time, Subject: env.Subject, Data: env.Data, Route: route})
		dec := decisionOf(out)
		if dec.Decision == "error" {
			if d.Refused == 0 {
				d.FirstError = fmt.Sprintf("%s (envelope %d): %s", env.Hook, i+1, dec.Error)
			}
			d.Refused++
		}
		if env.Call >= 0 {
			d.Calls[env.Call] = dec
			continue
		}
		if !dec.Allowed() && dec.Decision != "error" {
			if d.Others == 0 {
				d.FirstOther = fmt.Sprintf("%s (envelope %d): %s %v", env.Hook, i+1, dec.Decision, dec.Rules)
			}
			d.Others++
		}
	}
	return d
}

// decisionOf reads an outcome's answer.
func decisionOf(out guardian.Outcome) Decision {
	r := out.Response
	switch {
	case r == nil:
		return Decision{Decision: "none"}
	case r.Error != nil:
		d := Decision{Decision: "error", Error: fmt.Sprintf("%d %s", r.Error.Code, r.Error.Message)}
		if r.Error.Data != nil {
			d.Error += " (" + r.Error.Data.Reason + ")"
		}
		return d
	case r.Result == nil:
		return Decision{Decision: "none"}
	}
	d := Decision{Decision: string(r.Result.Decision), ReasonCodes: r.Result.ReasonCodes}
	if d.Decision != string(acs.Allow) {
		// An allow's reasoning says nothing the decision does not.
		d.Reason = r.Result.Reasoning
	}
	for _, p := range r.Result.PolicyReferences {
		if p.RuleID != "" {
			d.Rules = append(d.Rules, p.RuleID)
		}
	}
	return d
}
