// Package opsalert publishes turnguard's own operational alerts (tenant
// _system: a refused rule reload, a state value or member record that
// does not verify, forged decisions dropped): signed like the decisions'
// alerts, so that a forged "_system" alert tells itself apart from a real
// one.
package opsalert

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/alert"
	"github.com/turnguard/turnguard/internal/core/receipt"
)

// Msg is an operational alert as published: the finding, and its receipt
// (signer nil: none) bound to the subject with sequence 0, since it
// answers no envelope.
func Msg(subject string, f alert.Finding, signer *receipt.Signer) (*nats.Msg, error) {
	data, err := json.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("encode operational alert: %w", err)
	}
	m := nats.NewMsg(subject)
	m.Data = data
	if signer != nil {
		rc, err := signer.Sign(receipt.Alert(subject, 0), f)
		if err != nil {
			return nil, fmt.Errorf("sign operational alert: %w", err)
		}
		m.Header.Set(acs.HdrReceipt, rc)
		m.Header.Set(acs.HdrReceiptKey, signer.KeyID)
	}
	return m, nil
}

// Alert is one operational alert to publish.
type Alert struct {
	ID, Severity, Title, Message string
	// MsgID makes a repeat within the alert stream's duplicate window a
	// no-op.
	MsgID   string
	Details map[string]any
}

// Publish publishes a through JetStream, signed with signer (nil: none).
func Publish(ctx context.Context, js jetstream.JetStream, signer *receipt.Signer, a Alert) error {
	subject, f := alert.Operational(a.ID, a.Severity, a.Title, a.Message, time.Now(), a.Details)
	m, err := Msg(subject, f, signer)
	if err != nil {
		return fmt.Errorf("alert %s: %w", a.ID, err)
	}
	if a.MsgID != "" {
		m.Header.Set(acs.HdrMsgID, a.MsgID)
	}
	m.Header.Set(acs.HdrRuleID, a.ID)
	if _, err := js.PublishMsg(ctx, m); err != nil {
		return fmt.Errorf("publish alert %s: %w", a.ID, err)
	}
	return nil
}
