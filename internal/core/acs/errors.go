package acs

import (
	"fmt"
	"strings"
)

// Code is a JSON-RPC 2.0 / ACS error code (ACS §17).
type Code int

// The error codes turnguard produces. -32000..-32099 are reserved for ACS.
const (
	CodeParseError              Code = -32700
	CodeInvalidRequest          Code = -32600
	CodeMethodNotFound          Code = -32601
	CodeInvalidParams           Code = -32602
	CodeInternalError           Code = -32603
	CodeSessionRefused          Code = -32000
	CodeUnsupportedVersion      Code = -32001
	CodeProvenanceRequired      Code = -32002
	CodeCapabilityNotNegotiated Code = -32003
	CodeSignatureInvalid        Code = -32004
	CodeReplayDetected          Code = -32005
	CodeTimestampOutOfWindow    Code = -32006
	CodeChainMismatch           Code = -32007
)

// String names the code as ACS §17 does.
func (c Code) String() string {
	switch c {
	case CodeParseError:
		return "PARSE_ERROR"
	case CodeInvalidRequest:
		return "INVALID_REQUEST"
	case CodeMethodNotFound:
		return "METHOD_NOT_FOUND"
	case CodeInvalidParams:
		return "INVALID_PARAMS"
	case CodeInternalError:
		return "INTERNAL_ERROR"
	case CodeSessionRefused:
		return "SESSION_REFUSED"
	case CodeUnsupportedVersion:
		return "UNSUPPORTED_VERSION"
	case CodeProvenanceRequired:
		return "PROVENANCE_REQUIRED"
	case CodeCapabilityNotNegotiated:
		return "CAPABILITY_NOT_NEGOTIATED"
	case CodeSignatureInvalid:
		return "SIGNATURE_INVALID"
	case CodeReplayDetected:
		return "REPLAY_DETECTED"
	case CodeTimestampOutOfWindow:
		return "TIMESTAMP_OUT_OF_WINDOW"
	case CodeChainMismatch:
		return "CHAIN_MISMATCH"
	}
	return fmt.Sprintf("CODE_%d", int(c))
}

// Machine-readable reasons for refused input. They appear as reason codes in
// decisions, as error data, and in dead-letter headers.
const (
	ReasonParseError      = "parse_error"
	ReasonTooLarge        = "envelope_too_large"
	ReasonEnvelopeInvalid = "envelope_invalid"
	ReasonPayloadInvalid  = "payload_invalid"
	// ReasonFieldTooLong refuses an envelope with an identifier (or list) kept
	// in state that exceeds its bound (bounds.go).
	ReasonFieldTooLong   = "field_too_long"
	ReasonUnknownMethod  = "method_not_supported"
	ReasonMethodNotFound = "method_not_found"
	ReasonReplayed       = "request_replayed"
	ReasonNonceReplayed  = "nonce_replayed"
	// Reasons of the HTTP endpoint's handshake contract (ACS §4).
	ReasonHandshakeRequired = "handshake_required"
	ReasonNotNegotiated     = "method_not_negotiated"
	ReasonTransport         = "transport_unsupported"
	ReasonAlreadyNegotiated = "already_negotiated"
	ReasonKeyNotBound       = "key_not_bound"
	ReasonAgentNotBound     = "agent_id_not_bound"
	ReasonVersion           = "unsupported_version"
	ReasonSignature         = "signature_invalid"
	ReasonSkew              = "timestamp_out_of_window"
	ReasonSubjectMismatch   = "subject_mismatch"
	ReasonBadSubject        = "subject_invalid"
	// ReasonMsgIDMismatch refuses an envelope whose Nats-Msg-Id names the
	// SHA-256 of other bytes (msgid.go).
	ReasonMsgIDMismatch = "msg_id_mismatch"

	// Reasons of the HTTP endpoint's caller authentication.
	ReasonUnauthenticated = "unauthenticated"
	ReasonCallerNotBound  = "caller_not_bound"
	ReasonContentType     = "content_type_unsupported"

	// Reasons of the HTTP endpoint's resource bounds.
	ReasonBatchTooLarge   = "batch_too_large"
	ReasonDeadLetterLimit = "dead_letter_limit"
)

// Violation is one schema or protocol failure, located by a JSON pointer into
// the request envelope.
type Violation struct {
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

// Error is a refusal of one inbound message: why it could not be evaluated,
// with the ACS/JSON-RPC code a client sees.
type Error struct {
	Code       Code
	Reason     string
	Message    string
	Violations []Violation
	// SupportedVersions (-32001) and SkewWindowMS (-32006) are the per-code
	// data ACS §17.1 asks for.
	SupportedVersions []string
	SkewWindowMS      int64
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%d) %s: %s", e.Code, int(e.Code), e.Reason, e.Message)
	for _, v := range e.Violations {
		fmt.Fprintf(&b, "; %s: %s", v.Pointer, v.Message)
	}
	return b.String()
}

// Is makes errors.Is match two refusals with the same code and reason, so
// callers can test against a template such as &acs.Error{Code: CodeParseError}.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok {
		return false
	}
	return t.Code == e.Code && (t.Reason == "" || t.Reason == e.Reason)
}

// RPC renders the refusal as a JSON-RPC error object.
func (e *Error) RPC(method string) *RPCError {
	return &RPCError{
		Code:    int(e.Code),
		Message: e.Message,
		Data: &RPCErrData{Reason: e.Reason, Method: method, Violations: e.Violations,
			SupportedVersions: e.SupportedVersions, SkewWindowMS: e.SkewWindowMS},
	}
}
