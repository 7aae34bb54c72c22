// Package guardian is turnguard's pure decision core: Decide turns one
// inbound message and the session's state into the next state, an unsigned
// ACS response, and (for bad input) a dead-letter refusal; Seal signs a
// response and its alerts where they are published. It reads no clock, no
// network and no randomness, so replaying recorded traffic through it gives
// the decisions live processing gave.
package guardian

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/core/receipt"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/schema"
)

// DefaultMaxEnvelopeBytes is the default size limit of one envelope. It sits
// below the ACS_HOOKS stream's 1 MiB message limit on purpose: an envelope
// between the two is stored, refused with -32600, and dead-lettered with its
// original bytes, instead of being rejected unseen by the server.
const DefaultMaxEnvelopeBytes = 256 << 10

// Protocol policy identity cited in policy_references for turn-state
// violations and refusals.
const (
	ProtocolPolicyID   = "turnguard.protocol"
	ProtocolPolicyName = "ACS session and turn protocol"
)

// Config tunes the decision core.
type Config struct {
	// MaxEnvelopeBytes refuses larger envelopes (default
	// DefaultMaxEnvelopeBytes).
	MaxEnvelopeBytes int
	// OnRuleError is the decision a rule condition that fails to evaluate
	// counts as: deny (the default; AARM allows no fail-open) or allow.
	OnRuleError acs.Disposition
	// Keys verifies request signatures and signs responses; nil: requests
	// are not verified and responses not signed.
	Keys *acs.Keyring
	// RequireSignatures refuses unsigned requests (-32004).
	RequireSignatures bool
	// RequireCallerSignatures refuses envelopes published on NATS without
	// their publisher's signature (Message.Caller empty: the tenant's
	// agents, not one credential), so that every session belongs to one
	// credential or one HTTP caller (-32000 caller_not_bound).
	RequireCallerSignatures bool
	// SkewWindow refuses signed requests whose timestamp is further than
	// this from the stream's receive time (-32006); 0 disables the check.
	SkewWindow time.Duration
	// Receipts signs every published response and alert with the
	// processor's Ed25519 key (Seal); Decide never signs.
	Receipts *receipt.Signer
}

// DefaultSkewWindow is ACS's default skew_window_ms.
const DefaultSkewWindow = 300 * time.Second

// Guardian decides on envelopes. It is safe for concurrent use.
type Guardian struct {
	validator *schema.Validator
	cfg       Config
}

// New returns a Guardian validating with v.
func New(v *schema.Validator, cfg Config) *Guardian {
	if cfg.MaxEnvelopeBytes <= 0 {
		cfg.MaxEnvelopeBytes = DefaultMaxEnvelopeBytes
	}
	if cfg.OnRuleError != acs.Allow {
		cfg.OnRuleError = acs.Deny
	}
	return &Guardian{validator: v, cfg: cfg}
}

// Message is one inbound message as stored in the hooks stream.
type Message struct {
	Subject string
	Data    []byte
	// Seq is the message's stream sequence; Time is its stream timestamp,
	// used only where ACS wants a Guardian time (system/ping).
	Seq  uint64
	Time time.Time
	// Subagent is the state of the subagent session a subagentStop names
	// (see SubagentOf), when the caller has it: the rules may carry its
	// taint to this session. Decide only reads it.
	Subagent *turnstate.Session
	// Caller is who published the message, as the caller verified it
	// (turnstate.HTTPCaller for an envelope the HTTP endpoint attested,
	// turnstate.NATSCaller for one a NATS user signed,
	// turnstate.CallerForged for an attestation or signature that does not
	// verify); "" is turnstate.CallerNATS. A session belongs to the caller of its first
	// envelope: anyone else's are refused.
	Caller string
	// MsgID is the Nats-Msg-Id the message was published with: one that
	// names the SHA-256 of other bytes is refused (acs.MsgIDDigestMismatch).
	MsgID string
}

// Outcome is everything Decide concluded about one message. Its Response
// is unsigned: Seal signs it and its alerts for publication.
type Outcome struct {
	Route acs.Route
	// Facts identify the request, as far as it could be read (a refusal
	// of unreadable input has fewer of them).
	Facts
	// Skipped is set when the message was already applied to the session (a
	// redelivery); nothing else is set then.
	Skipped bool
	// Response is the ACS response to publish on the session's decision
	// subject; nil when there is nobody to answer.
	Response *acs.Response
	// Refusal is set when the message is bad input; it goes to the
	// dead-letter stream with its original bytes.
	Refusal    *acs.Error
	Violations []turnstate.Violation
	// State is the session's next state, nil when the message did not
	// change it. Spawned is the first state of the subagent session a
	// subagentStart announced — allowed or denied: a framework that does
	// not wait for the decision runs the subagent either way, and it must
	// start linked, with the parent's live taints. A subagent session that
	// already exists (begun before the spawn was applied) is linked to it
	// instead (turnstate.Session.Adopt).
	State   *turnstate.Session
	Spawned *turnstate.Session
	// Agent is the agent's shared state when an agent-keyed rule counted
	// the envelope (it must be saved), else nil.
	Agent *turnstate.Agent
	// Hits are the rules that hit (enforcing and shadow); Alerts their
	// findings.
	Hits   []policy.Hit
	Alerts []Alert
}

// Decide evaluates one message published to route against the rule set rs
// (nil: no rules; protocol violations are then only recorded). state is the
// session's current state, or nil for a session nothing has been applied
// to; agent is the shared state of the envelope's agent (see AgentOf),
// needed only when rs.AgentKeyed(). Decide takes ownership of both: the
// returned Outcome.State and Outcome.Agent may be the same values, advanced.
func (g *Guardian) Decide(rs *policy.Set, state *turnstate.Session, agent *turnstate.Agent, route acs.Route, msg Message) Outcome {
	out := Outcome{Route: route}
	if state != nil && state.Applied(msg.Seq) {
		out.Skipped = true
		return out
	}
	env, k, ref := g.intake(route, msg)
	if ref != nil {
		out.Facts = k.facts()
		out.Refusal = ref
		out.Response = refusalResponse(k, ref)
		return out
	}
	out.Facts = env.facts()
	if env.spec.Scope == acs.Liveness {
		out.Response = pingResponse(env, msg.Time)
		return out
	}
	if ref := replayed(state, env); ref != nil {
		// ACS §10.3: a request id or nonce seen before in the session is
		// refused -32005 and changes nothing.
		out.Refusal = ref
		out.Response = refusalResponse(known{id: env.req.ID, method: env.req.Method, requestID: env.req.Params.RequestID}, ref)
		return out
	}
	env.step.Seq = msg.Seq
	caller := callerOf(msg)
	if ref, a := refuseCaller(state, route, env, caller, g.cfg.RequireCallerSignatures); ref != nil {
		out.Refusal = ref
		out.Response = refusalResponse(known{id: env.req.ID, method: env.req.Method, requestID: env.req.Params.RequestID}, ref)
		out.Alerts = []Alert{*a}
		return out
	}
	if state == nil {
		state = turnstate.New(route.Tenant, route.SessionID)
	}
	env.step.Caller = caller
	// env.provenance, walked once in intake (checkBounds), serves the
	// chain entry and the rules.
	applied := state.Apply(env.step)
	state.RememberNonce(env.req.Params.Nonce)
	// The entry goes on the chain before the decision, as the Go reference
	// does, so denied steps are on the chain too.
	if err := appendEntry(state, env); err != nil {
		out.Refusal = &acs.Error{Code: acs.CodeInternalError, Reason: "chain_failed", Message: err.Error()}
		out.Response = refusalResponse(known{id: env.req.ID, method: env.req.Method, requestID: env.req.Params.RequestID}, out.Refusal)
		return out
	}
	var rr policy.Result
	if rs != nil {
		if agent != nil && agent.AgentID != env.req.Params.Metadata.AgentID {
			// Not this envelope's agent: agent-keyed rules get no state and
			// fail, and the error posture decides.
			agent = nil
		}
		rr = rs.Evaluate(state, agent, policy.Input{Spec: env.spec, Req: &env.req, Payload: env.payload, Seq: msg.Seq,
			Time: env.step.Time, Violations: applied.Violations, Partition: route.Partition, Provenance: env.provenance, Subagent: msg.Subagent,
			Spawned: applied.Spawned})
		if rr.AgentChanged {
			out.Agent = agent
		}
	}
	v := g.decide(rs, env, state, applied.Violations, rr)
	state.RecordDecision(env.step, v.decision)
	if rs != nil {
		rs.Decided(state, *env.spec, env.req.Params.RequestID, env.payload, rr, v.decision)
	}
	out.State = state
	out.Violations = applied.Violations
	if applied.Spawned != nil {
		// Created and remembered even when denied: a framework that did
		// not wait for the decision runs the subagent anyway, and it must
		// carry the parent's taint and hand its own back at its stop.
		state.RememberSubagent(applied.Spawned.SessionID)
		out.Spawned = applied.Spawned
	}
	v.response.Result.ChainHash = state.ChainHead
	out.Response = v.response
	out.Hits = rr.Hits
	out.Alerts = v.alerts
	return out
}

// appendEntry appends the envelope's ContextEntry to the session's chain.
func appendEntry(s *turnstate.Session, env *envelope) error {
	// Its request hash and provenance summary are written from what the
	// envelope holds (EntryHashOf), not made to be written once.
	e := acs.ContextEntry{EntryID: strconv.FormatUint(s.ChainLength+1, 10), StepID: env.req.Params.RequestID, StepType: env.req.Method,
		Timestamp: env.req.Params.Timestamp, TurnID: env.req.Params.Metadata.TurnID}
	h, err := acs.EntryHashOf(e, env.requestSum, env.provenance, s.ChainHead)
	if err != nil {
		return fmt.Errorf("chain entry %s: %w", e.EntryID, err)
	}
	s.ChainHead, s.ChainLength = h, s.ChainLength+1
	return nil
}

// replayed refuses an envelope whose request id or nonce the session has
// seen (nil state: a new session has seen nothing).
func replayed(state *turnstate.Session, env *envelope) *acs.Error {
	switch p := &env.req.Params; {
	case state == nil:
		return nil
	case state.Replayed(p.RequestID):
		return &acs.Error{Code: acs.CodeReplayDetected, Reason: acs.ReasonReplayed,
			Message: fmt.Sprintf("request_id %s was already received in this session", p.RequestID)}
	case state.NonceSeen(p.Nonce):
		return &acs.Error{Code: acs.CodeReplayDetected, Reason: acs.ReasonNonceReplayed,
			Message: fmt.Sprintf("nonce %q was already used in this session", p.Nonce)}
	}
	return nil
}

// Receipts is the signer of the core's receipts (nil: receipts are off),
// for the processor's own operational alerts, which the core does not make.
func (g *Guardian) Receipts() *receipt.Signer { return g.cfg.Receipts }

// AgentOf reads the agent id of an inbound message without deciding it, so
// a caller can fetch the agent's shared state first. "" when unreadable.
func AgentOf(data []byte) string {
	f, _ := ReadFacts(data)
	return f.AgentID
}

// SubagentOf returns the subagent session id a subagentStop names, or ""
// for any other message (or one that does not decode): a caller that
// keeps session states passes that session's state as Message.Subagent.
func SubagentOf(route acs.Route, data []byte) string {
	if route.Hook != "subagentStop" {
		return ""
	}
	return SubagentSessionID(data)
}

// SubagentSessionID reads params.payload.subagent_session_id of an
// envelope (a subagentStart or subagentStop) without deciding it; "" when
// it has none or does not decode.
func SubagentSessionID(data []byte) string {
	f, _ := ReadFacts(data)
	return f.SubagentSessionID
}

// Unroutable is the outcome for a message whose subject names no usable
// tenant/session/hook: it can only be dead-lettered.
func (g *Guardian) Unroutable(subjectErr error) Outcome {
	return Outcome{Refusal: &acs.Error{Code: acs.CodeInvalidRequest, Reason: acs.ReasonBadSubject, Message: subjectErr.Error()}}
}

// answeredWithError reports the refusals ACS answers with its own error
// codes (a client fails closed on them, whatever its posture); the others
// get a decision, deny where the hook permits it.
func answeredWithError(c acs.Code) bool {
	switch c {
	case acs.CodeUnsupportedVersion, acs.CodeCapabilityNotNegotiated, acs.CodeSignatureInvalid,
		acs.CodeReplayDetected, acs.CodeTimestampOutOfWindow, acs.CodeInternalError:
		return true
	}
	return false
}

// refusalResponse answers bad input. With a readable request id and a known
// method the answer is a decision — deny where the hook permits it, so that a
// framework on the default fail-open posture does not proceed — otherwise a
// JSON-RPC error.
func refusalResponse(k known, ref *acs.Error) *acs.Response {
	id := k.id
	if id == nil {
		id = acs.NullID
	}
	spec := acs.LookupMethod(k.method)
	if k.requestID == "" || spec == nil || answeredWithError(ref.Code) {
		return &acs.Response{JSONRPC: "2.0", ID: id, Error: ref.RPC(k.method)}
	}
	d := acs.Allow
	if spec.DecisionEligible() {
		d = acs.Deny
	}
	if string(id) == "null" {
		// A result response must carry a non-null id; the request id is the
		// best correlation left when the JSON-RPC id was unusable.
		id, _ = json.Marshal(k.requestID)
	}
	r := newResponse(id, k.requestID, d, fmt.Sprintf("refused (%s %d): %s", ref.Code, int(ref.Code), ref.Message))
	res := r.Result
	res.ReasonCodes = []string{ref.Reason}
	res.PolicyReferences = []acs.PolicyReference{{PolicyID: ProtocolPolicyID, PolicyName: ProtocolPolicyName, RuleID: ref.Reason}}
	res.PolicyData = map[string]any{"turnguard": map[string]any{"error": ref.RPC(k.method)}}
	return r
}

// pingResponse answers system/ping: always allow, never recorded (ACS §13).
func pingResponse(env *envelope, at time.Time) *acs.Response {
	r := newResponse(env.req.ID, env.req.Params.RequestID, acs.Allow, "")
	payload := map[string]any{"status": "ok", "server_timestamp": at.UTC().Format(time.RFC3339Nano)}
	if p, ok := env.payload.(map[string]any); ok {
		if echo, ok := p["echo"].(string); ok {
			payload["echo"] = echo
		}
	}
	r.Result.Payload = payload
	return r
}

// newResponse is a result response with its Result and the Result's
// metadata, made in one allocation.
func newResponse(id json.RawMessage, requestID string, d acs.Disposition, reasoning string) *acs.Response {
	a := &struct {
		resp acs.Response
		res  acs.Result
		md   acs.ResultMetadata
	}{}
	a.md = acs.ResultMetadata{Evaluator: "deterministic"}
	a.res = acs.Result{Type: acs.ResultTypeFinal, ACSVersion: acs.Version, RequestID: requestID, Decision: d,
		Reasoning: reasoning, Metadata: &a.md}
	a.resp = acs.Response{JSONRPC: "2.0", ID: id, Result: &a.res}
	return &a.resp
}

// Refuse is the outcome of a message the caller will not decide: it is
// answered with ref and dead-lettered, and changes no state. The processor
// refuses this way the steps of a session whose stored state does not verify
// and cannot be rebuilt from the stream: deciding them from a state it cannot
// trust would be deciding blind. ref should be an error ACS answers with its
// own code (acs.CodeInternalError), on which a client fails closed whatever
// its posture.
func (g *Guardian) Refuse(route acs.Route, msg Message, ref *acs.Error) Outcome {
	out := Outcome{Route: route, Refusal: ref}
	var k known
	// Only the request's identity is read, and not from an envelope intake
	// would refuse unread for its size.
	if len(msg.Data) <= g.cfg.MaxEnvelopeBytes {
		if doc, _, err := decodeIJSON(msg.Data); err == nil {
			if obj, ok := doc.(map[string]any); ok {
				k = readKnown(obj)
			}
		}
	}
	out.Facts = k.facts()
	out.Response = refusalResponse(k, ref)
	return out
}
