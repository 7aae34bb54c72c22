package schema

import "github.com/turnguard/turnguard/internal/core/acs"

// The Validate methods fail with an *Error. Its type lives in the internal
// wire model, which callers outside this module cannot import; these
// aliases name it (and the types of its fields) so that they can use
// errors.As and compare codes. They are aliases, not copies: an *Error is
// the very *acs.Error the processor refuses input with.
type (
	// Error is a refusal: the ACS/JSON-RPC code, a stable reason, a
	// message and, for schema violations, one entry per failing location.
	Error = acs.Error
	// Violation is one failing location: a JSON pointer into the
	// envelope and what is wrong there.
	Violation = acs.Violation
	// Code is an ACS/JSON-RPC error code.
	Code = acs.Code
)

// The codes the Validate methods return.
const (
	CodeInvalidRequest          = acs.CodeInvalidRequest          // ValidateRequest
	CodeInvalidParams           = acs.CodeInvalidParams           // ValidatePayload
	CodeCapabilityNotNegotiated = acs.CodeCapabilityNotNegotiated // ValidatePayload, a method turnguard does not evaluate
	CodeInternalError           = acs.CodeInternalError           // ValidateResponse
)
