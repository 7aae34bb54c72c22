package agentdojo

import (
	"context"
	"fmt"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/replay"
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

// A Decider decides a run: it builds the run's session and has every
// envelope of it decided, in order.
type Decider interface {
	DecideRun(ctx context.Context, r *Run) (*Session, Decided, error)
}

// InProcess decides with the processor's core in this process: the same
// path as replay's (replay.Engine, guardian.Memory.Decide), a fresh state
// per session.
type InProcess struct {
	Guardian *guardian.Guardian
	Rules    *policy.Set
}

// DecideRun builds the run's session (Build) and decides it.
func (p InProcess) DecideRun(_ context.Context, r *Run) (*Session, Decided, error) {
	s, err := Build(r)
	if err != nil {
		return nil, Decided{}, badRun{err}
	}
	return s, Decide(p.Guardian, p.Rules, s), nil
}

// Decide decides every envelope of a session in order with the core and
// the rule set, in a fresh state.
func Decide(g *guardian.Guardian, rs *policy.Set, s *Session) Decided {
	e := replay.NewEngine(g, rs)
	var d decisions
	d.init(s)
	for i, env := range s.Envelopes {
		route := acs.Route{Tenant: Tenant, SessionID: s.ID, Hook: env.Hook}
		out := e.Decide(replay.Envelope{Seq: uint64(i + 1), Time: env.Time, Subject: env.Subject, Data: env.Data, Route: route})
		d.record(i, env, decisionOf(out.Response))
	}
	return d.Decided
}

// decisions collects a session's decisions as they come.
type decisions struct{ Decided }

func (d *decisions) init(s *Session) { d.Calls = make([]Decision, len(s.Calls)) }

func (d *decisions) record(i int, env Envelope, dec Decision) {
	if dec.Decision == "error" {
		if d.Refused == 0 {
			d.FirstError = fmt.Sprintf("%s (envelope %d): %s", env.Hook, i+1, dec.Error)
		}
		d.Refused++
	}
	if env.Call >= 0 {
		d.Calls[env.Call] = dec
		return
	}
	if !dec.Allowed() && dec.Decision != "error" {
		if d.Others == 0 {
			d.FirstOther = fmt.Sprintf("%s (envelope %d): %s %v", env.Hook, i+1, dec.Decision, dec.Rules)
		}
		d.Others++
	}
}

// badRun marks an error of the run itself (it cannot be mapped), as
// opposed to one of the decider (a processor that cannot be reached).
type badRun struct{ err error }

func (b badRun) Error() string { return b.err.Error() }
func (b badRun) Unwrap() error { return b.err }

// decisionOf reads a response.
func decisionOf(r *acs.Response) Decision {
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
