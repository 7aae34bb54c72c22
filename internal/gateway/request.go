package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/pkg/client"
)

// origin is who sent a request: the authenticated caller (the anonymous
// one of an open endpoint) and the client's address.
type origin struct {
	caller *Caller
	remote string
	// dl is what is left of the request's dead letters; nil: no bound.
	dl *dlBudget
	// extend, when set, renews the connection's write deadline before
	// each item of a batch.
	extend func()
}

// reply is one JSON-RPC answer: raw, as the processor published it, or a
// document the endpoint made; with its Ed25519 receipt and, for a
// processor decision, the stream sequence the receipt is bound to.
type reply struct {
	raw        json.RawMessage
	doc        any
	receipt    string
	receiptKey string
	seq        uint64
}

func (r reply) MarshalJSON() ([]byte, error) {
	if r.raw != nil {
		return r.raw, nil
	}
	return json.Marshal(r.doc)
}

// incoming is one request as read: its raw bytes, its head (acs.ReadHead:
// all the gateway reads of it before the processor decides it), and what a
// response needs to be correlated and signed.
type incoming struct {
	raw       []byte
	head      acs.Head
	id        json.RawMessage
	sessionID string
	keyID     string
	// omitted, on a request's summary dead letter, is how many of its
	// refusals it stands for.
	omitted int
}

// one answers one JSON-RPC request.
func (g *Gateway) one(ctx context.Context, from origin, raw []byte, tls bool) reply {
	in := incoming{raw: raw}
	var err error
	if in.head, err = acs.ReadHead(raw); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return g.reject(ctx, from, in, &acs.Error{Code: acs.CodeInvalidRequest, Reason: acs.ReasonEnvelopeInvalid, Message: "a request is a JSON object: " + err.Error()}, false)
		}
		return g.reject(ctx, from, in, &acs.Error{Code: acs.CodeParseError, Reason: acs.ReasonParseError, Message: err.Error()}, false)
	}
	req := &in.head
	if validID(req.ID) {
		in.id = req.ID
	}
	in.sessionID, in.keyID = req.SessionID, req.KeyID()
	if req.Method != "" && !acs.Defined(req.Method) {
		// Refused here, as the processor would (-32601 before anything
		// else of the envelope), so that the dead letter names the caller.
		return g.reject(ctx, from, in, acs.MethodError(req.Method), false)
	}
	if who := from.caller; who.AgentID != "" && req.HasParams && req.AgentID != who.AgentID {
		// A caller bound to an agent speaks for that agent only.
		return g.reject(ctx, from, in, &acs.Error{Code: acs.CodeSessionRefused, Reason: acs.ReasonAgentNotBound,
			Message: fmt.Sprintf("caller %s may only send for agent %q, not %q", who.Name, who.AgentID, req.AgentID)}, false)
	}
	if req.Method == acs.HandshakeMethod {
		return g.handshake(ctx, from, in, tls)
	}
	if req.Method == "" || !req.HasParams || req.RequestID == "" || acs.CheckSession(req.SessionID) != nil {
		// Nowhere to route it: refused, and kept in the dead-letter stream.
		return g.reject(ctx, from, in, &acs.Error{Code: acs.CodeInvalidRequest, Reason: acs.ReasonEnvelopeInvalid,
			Message: "a request needs a method, params.request_id and params.metadata.session_id (a UUID)"}, false)
	}
	if ref := g.checkNegotiated(ctx, from.caller, in); ref != nil {
		if ref.Code == acs.CodeInternalError {
			return g.refuse(in, ref)
		}
		return g.reject(ctx, from, in, ref, false)
	}
	// Everything else — methods turnguard does not evaluate included — is
	// decided by the processor, which refuses, signs and dead-letters it
	// like any message on the stream.
	// Read once here: the client routes it by what was read.
	env := client.Envelope{Data: raw, Method: in.head.Method, RequestID: in.head.RequestID, SessionID: in.sessionID}
	d, err := g.clients[from.caller.Tenant].DecideEnvelope(ctx, env, g.attest.options(from.caller, in, raw)...)
	switch {
	case err != nil:
		return g.reject(ctx, from, in, &acs.Error{Code: acs.CodeInvalidRequest, Reason: acs.ReasonEnvelopeInvalid, Message: err.Error()}, false)
	case d.Replayed:
		return g.refuse(in, &acs.Error{Code: acs.CodeReplayDetected, Reason: acs.ReasonReplayed,
			Message: fmt.Sprintf("request %s of this session was already received", d.RequestID)})
	case d.FromPosture:
		// No decision: an error, so that the agent applies its own
		// on_decision_failure, as ACS §6.4 prescribes.
		return g.refuse(in, &acs.Error{Code: acs.CodeInternalError, Reason: "decision_timeout", Message: d.Failure.Error()})
	}
	// Only a verified decision gets here; its receipt headers are passed
	// on only when they are the ones that verified (never with receipts
	// off).
	rep := reply{raw: d.Response}
	if d.Verified {
		rep.receipt, rep.receiptKey, rep.seq = d.Receipt, d.ReceiptKey, d.Seq
	}
	return rep
}

// checkNegotiated holds a step to its session's handshake (ACS §4): with
// the handshake required, a session must have negotiated, and in any case
// a negotiated session may only send the methods it negotiated, signed
// with the key and from the agent that negotiated it, by the caller that
// negotiated it. With the handshake optional, an authenticated caller's
// first step of a session binds the session to it.
// system/ping is exempt, and so are methods turnguard does not evaluate,
// which the processor refuses with their own code.
func (g *Gateway) checkNegotiated(ctx context.Context, who *Caller, in incoming) *acs.Error {
	method := in.head.Method
	spec := acs.LookupMethod(method)
	if spec == nil || spec.Scope == acs.Liveness {
		return nil
	}
	key := acs.SessionKey(who.Tenant, in.sessionID)
	n, err := g.handshakes.get(ctx, key)
	if err == nil && n == nil && g.cfg.Handshake == HandshakeOptional && who.Name != "" {
		// First use without a handshake: bound to its caller from now on.
		// Whoever gets there first of two racing callers owns it.
		n, err = g.handshakes.put(ctx, key, &negotiation{Caller: who.Name, At: g.cfg.Now().UTC()})
	}
	switch {
	case err != nil:
		return &acs.Error{Code: acs.CodeInternalError, Reason: "handshake_unavailable", Message: err.Error()}
	case n == nil && g.cfg.Handshake == HandshakeRequired:
		return &acs.Error{Code: acs.CodeCapabilityNotNegotiated, Reason: acs.ReasonHandshakeRequired,
			Message: fmt.Sprintf("session %s has not completed handshake/hello", in.sessionID)}
	case n == nil:
		return nil
	case n.Caller != who.Name:
		return callerNotBound(in.sessionID, who.Name)
	case !n.negotiated() && g.cfg.Handshake == HandshakeRequired:
		return &acs.Error{Code: acs.CodeCapabilityNotNegotiated, Reason: acs.ReasonHandshakeRequired,
			Message: fmt.Sprintf("session %s has not completed handshake/hello", in.sessionID)}
	case !n.negotiated():
		return nil
	case !n.evaluates(method):
		return &acs.Error{Code: acs.CodeCapabilityNotNegotiated, Reason: acs.ReasonNotNegotiated,
			Message: fmt.Sprintf("method %s was not negotiated in this session's handshake", method)}
	case n.KeyID != "" && in.keyID != n.KeyID:
		// The session belongs to whoever negotiated it: with a key per
		// agent, another agent's valid signature must not reach into it
		// (the Go reference's key_not_bound).
		return &acs.Error{Code: acs.CodeSignatureInvalid, Reason: acs.ReasonKeyNotBound,
			Message: fmt.Sprintf("session %s was negotiated with key %q, not %q", in.sessionID, n.KeyID, in.keyID)}
	case in.head.AgentID != n.AgentID:
		return &acs.Error{Code: acs.CodeSessionRefused, Reason: acs.ReasonAgentNotBound,
			Message: fmt.Sprintf("session %s was negotiated by agent %q, not %q", in.sessionID, n.AgentID, in.head.AgentID)}
	}
	return nil
}

// validID reports a JSON-RPC id a response may echo: a string or a number.
// Anything else (an object, an array, true) cannot be echoed in a valid
// response; it is answered with a null id, as an unreadable one.
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	switch c := id[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return true
	}
	return false
}
