package acs

import "encoding/json"

// Version is the ACS wire version turnguard implements and answers with.
const Version = "0.1.0"

// Request is an ACS request envelope (request-envelope.json): a JSON-RPC 2.0
// request whose ACS fields sit in params. Only the fields turnguard reads are
// typed; the payload stays raw until the method is known.
type Request struct {
	JSONRPC string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	ID      json.RawMessage `json:"id"`
	Params  Params          `json:"params"`
}

// Params is the ACS part of a request (AcsParams).
type Params struct {
	ACSVersion string          `json:"acs_version"`
	RequestID  string          `json:"request_id"`
	Timestamp  string          `json:"timestamp"`
	Nonce      string          `json:"nonce,omitempty"`
	TenantID   string          `json:"tenant_id,omitempty"`
	Metadata   Metadata        `json:"metadata"`
	Payload    json.RawMessage `json:"payload"`
	Signature  *Signature      `json:"signature,omitempty"`
}

// Metadata is params.metadata.
type Metadata struct {
	AgentID      string `json:"agent_id"`
	AgentName    string `json:"agent_name,omitempty"`
	SessionID    string `json:"session_id"`
	TurnID       string `json:"turn_id,omitempty"`
	ParentTurnID string `json:"parent_turn_id,omitempty"`
	// Platform is the agent host's name (claude-code, codex, cursor),
	// as its adapter or the native hook endpoint says it.
	Platform string `json:"platform,omitempty"`
	// Cwd is the agent's working directory at the step, as its host
	// reports it: a turnguard extension the native hook endpoints send
	// (ACS has no field for it). Rules use it only to find more of what a
	// call reads, never less.
	Cwd string `json:"cwd,omitempty"`
}

// Signature is the crypto-agile signature object of requests and responses.
type Signature struct {
	Algorithm string `json:"algorithm"`
	Value     string `json:"value"`
	KeyID     string `json:"key_id"`
}

// Provenance labels a data-bearing field (provenance.json).
type Provenance struct {
	ProvenanceID string   `json:"provenance_id"`
	Origin       string   `json:"origin"`
	SourceID     string   `json:"source_id,omitempty"`
	DerivedFrom  []string `json:"derived_from,omitempty"`
}

// TurnStartPayload is the payload of steps/turnStart (the seed schema
// hooks/turn-start.json).
type TurnStartPayload struct {
	TurnID         string   `json:"turn_id"`
	TriggeredBy    string   `json:"triggered_by"`
	ParentTurnID   string   `json:"parent_turn_id,omitempty"`
	ExpectedInputs []string `json:"expected_inputs,omitempty"`
}

// TurnEndPayload is the payload of steps/turnEnd.
type TurnEndPayload struct {
	TurnID        string `json:"turn_id"`
	Outcome       string `json:"outcome"`
	StepCount     *int   `json:"step_count,omitempty"`
	ToolCallCount *int   `json:"tool_call_count,omitempty"`
}

// SubagentStartPayload is the payload of steps/subagentStart.
type SubagentStartPayload struct {
	SubagentSessionID string `json:"subagent_session_id"`
	ParentSessionID   string `json:"parent_session_id,omitempty"`
	ParentStepID      string `json:"parent_step_id,omitempty"`
	IntentDerivation  string `json:"intent_derivation,omitempty"`
}

// SessionEndPayload is the payload of steps/sessionEnd. Real clients send
// the reason as "reason" (Go reference, adapters) or "session_reason" (spec
// prose); both are accepted.
type SessionEndPayload struct {
	Reason        string `json:"reason,omitempty"`
	SessionReason string `json:"session_reason,omitempty"`
}

// EffectiveReason returns whichever of the two reason spellings was sent.
func (p SessionEndPayload) EffectiveReason() string {
	if p.Reason != "" {
		return p.Reason
	}
	return p.SessionReason
}

// ToolCallRequestPayload is the part of a steps/toolCallRequest payload the
// core reads.
type ToolCallRequestPayload struct {
	Tool       Tool   `json:"tool"`
	Capability string `json:"capability,omitempty"`
}

// Tool names the tool of a tool hook.
type Tool struct {
	Name     string `json:"name"`
	Version  string `json:"version,omitempty"`
	Provider string `json:"provider,omitempty"`
}

// PingPayload is the payload of system/ping.
type PingPayload struct {
	Echo *string `json:"echo,omitempty"`
}
