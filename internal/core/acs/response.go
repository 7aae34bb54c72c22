package acs

import "encoding/json"

// Disposition is one of the five ACS decisions, lowercase as on the wire.
type Disposition string

// The five dispositions of ACS §6.
const (
	Allow  Disposition = "allow"
	Deny   Disposition = "deny"
	Modify Disposition = "modify"
	Ask    Disposition = "ask"
	Defer  Disposition = "defer"
)

// NullID is the JSON-RPC id of a response whose request id could not be read.
var NullID = json.RawMessage("null")

// Response is an ACS response envelope (response-envelope.json): exactly one
// of Result or Error is set.
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  *Result         `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// Result is AcsResult: a final decision on one request.
type Result struct {
	Type               string            `json:"type"`
	ACSVersion         string            `json:"acs_version"`
	RequestID          string            `json:"request_id"`
	Decision           Disposition       `json:"decision"`
	Reasoning          string            `json:"reasoning,omitempty"`
	ReasonCodes        []string          `json:"reason_codes,omitempty"`
	PolicyReferences   []PolicyReference `json:"policy_references,omitempty"`
	PolicyData         map[string]any    `json:"policy_data,omitempty"`
	CitedProvenanceIDs []string          `json:"cited_provenance_ids,omitempty"`
	AskDetails         *AskDetails       `json:"ask_details,omitempty"`
	Payload            map[string]any    `json:"payload,omitempty"`
	ChainHash          string            `json:"chain_hash,omitempty"`
	Signature          *Signature        `json:"signature,omitempty"`
	Metadata           *ResultMetadata   `json:"metadata,omitempty"`
}

// AskDetails routes an ask decision to an approver (ask-details.json).
type AskDetails struct {
	Approver       Approver `json:"approver"`
	Question       string   `json:"question"`
	Context        string   `json:"context,omitempty"`
	Options        []string `json:"options,omitempty"`
	TimeoutSeconds int      `json:"timeout_seconds"`
	// TimeoutDisposition is allow or deny; absent means deny.
	TimeoutDisposition string `json:"timeout_disposition,omitempty"`
}

// Approver identifies who resolves an ask decision.
type Approver struct {
	Type     string `json:"type"`
	ID       string `json:"id"`
	Endpoint string `json:"endpoint,omitempty"`
}

// ResultTypeFinal is the only result type ACS v0.1 emits.
const ResultTypeFinal = "final"

// PolicyReference names a policy or rule that contributed to a decision.
type PolicyReference struct {
	PolicyID      string `json:"policy_id,omitempty"`
	PolicyVersion string `json:"policy_version,omitempty"`
	PolicyName    string `json:"policy_name,omitempty"`
	RuleID        string `json:"rule_id,omitempty"`
}

// ResultMetadata says how a decision was reached.
type ResultMetadata struct {
	Evaluator string `json:"evaluator,omitempty"`
}

// RPCError is a JSON-RPC error object. Data carries the machine-readable
// reason and, for validation failures, every violation.
type RPCError struct {
	Code    int         `json:"code"`
	Message string      `json:"message"`
	Data    *RPCErrData `json:"data,omitempty"`
	// Signature signs an error as the Go reference does (ACS leaves it
	// undefined).
	Signature *Signature `json:"signature,omitempty"`
}

// RPCErrData is the data member of the errors turnguard emits (ACS §17.1:
// a machine-readable reason plus per-code fields).
type RPCErrData struct {
	Reason            string      `json:"reason"`
	Method            string      `json:"method,omitempty"`
	SupportedVersions []string    `json:"supported_versions,omitempty"`
	SkewWindowMS      int64       `json:"skew_window_ms,omitempty"`
	Violations        []Violation `json:"violations,omitempty"`
}

// Sig returns the response's signature: the result's or the error's.
func (r *Response) Sig() *Signature {
	switch {
	case r.Result != nil:
		return r.Result.Signature
	case r.Error != nil:
		return r.Error.Signature
	}
	return nil
}
