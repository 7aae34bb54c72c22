package acs

import (
	"crypto/sha256"
	"encoding/hex"
)

// Headers turnguard sets on the messages it publishes (docs/CONFORMANCE.md "External
// contract").
const (
	HdrMsgID          = "Nats-Msg-Id"
	HdrRequestID      = "Acs-Request-Id"
	HdrMethod         = "Acs-Method"
	HdrHook           = "Acs-Hook"
	HdrTurnID         = "Acs-Turn-Id"
	HdrStreamSeq      = "Acs-Stream-Seq"
	HdrDecision       = "Acs-Decision"
	HdrErrorCode      = "Acs-Error-Code"
	HdrErrorName      = "Acs-Error-Name"
	HdrErrorReason    = "Acs-Error-Reason"
	HdrErrorMessage   = "Acs-Error-Message"
	HdrOriginalSubj   = "Acs-Original-Subject"
	HdrOriginalSeq    = "Acs-Original-Seq"
	HdrOriginalStream = "Acs-Original-Stream"
	HdrOriginalMsgID  = "Acs-Original-Msg-Id"
	HdrBodyOmitted    = "Acs-Body-Omitted"
	HdrRuleID         = "Acs-Rule-Id"
	HdrReceipt        = "Acs-Receipt"
	HdrReceiptKey     = "Acs-Receipt-Key"
	// HdrStateAccounted, on a refusal published without a state write (an
	// isolated envelope), is the stream sequence the session's state
	// accounted for when it was refused: what a later load of the state
	// must still account for.
	HdrStateAccounted = "Acs-State-Accounted"
	// Dead letters of the HTTP endpoint: the authenticated caller, the
	// client's address, and, when the body did not fit a NATS message,
	// how much of it was kept.
	HdrCaller        = "Acs-Caller"
	HdrRemoteAddr    = "Acs-Remote-Addr"
	HdrBodyTruncated = "Acs-Body-Truncated"
	// HdrDeadLettersOmitted, on the one summary record of a request whose
	// refusals exceeded the endpoint's dead-letter limit, says how many
	// were not kept one by one.
	HdrDeadLettersOmitted = "Acs-Dead-Letters-Omitted"
	// HdrOnBehalfOf and HdrOnBehalfOfMAC, on an envelope the HTTP endpoint
	// publishes, name the caller it publishes for and attest it with a MAC
	// under the state key (turnstate.Sealer.AttestCaller), which the
	// processor verifies before deciding: an agent can set any header, but
	// not that MAC.
	HdrOnBehalfOf    = "Acs-On-Behalf-Of"
	HdrOnBehalfOfMAC = "Acs-On-Behalf-Of-Mac"
	// HdrCallerKey and HdrCallerSig, on an envelope published straight on
	// NATS, name the NATS user (its public nkey, U…) that sent it and sign
	// CallerSigningInput with that user's seed: the credential's own key,
	// which no other credential holds. A session started by a signed
	// envelope belongs to that user (turnstate.NATSCaller). pkg/client
	// signs with the connection's credential.
	HdrCallerKey = "Acs-Caller-Key"
	HdrCallerSig = "Acs-Caller-Sig"
)

// callerSigningDomain starts every caller signature's input, so that no
// other thing a NATS user signs (the server's connect nonce) can pass for
// one.
const callerSigningDomain = "acs-caller-signature/1\n"

// CallerSigningInput is what a NATS publisher signs to claim an envelope
// (HdrCallerSig): the inbound subject (tenant, session, hook) and the
// SHA-256 of the body, so a signature moves to no other envelope, session
// or tenant.
func CallerSigningInput(inboundSubject string, body []byte) []byte {
	sum := sha256.Sum256(body)
	b := make([]byte, 0, len(callerSigningDomain)+len(inboundSubject)+1+2*sha256.Size)
	b = append(b, callerSigningDomain...)
	b = append(b, inboundSubject...)
	b = append(b, '\n')
	return hex.AppendEncode(b, sum[:])
}
