package acs

// Headers turnguard sets on the messages it publishes (README "External
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
)
