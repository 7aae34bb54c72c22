package main

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/alert"
	"github.com/turnguard/turnguard/internal/core/receipt"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
)

// A refused reload is reported with an operational alert that carries a
// receipt bound to its subject and to no envelope, so that a forged
// "reload failed" tells itself apart; without receipts it carries none.
func TestReloadAlertIsSigned(t *testing.T) {
	signer := receipt.NewSigner(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, ed25519.SeedSize)))
	for _, tc := range []struct {
		name   string
		signer *receipt.Signer
	}{{"receipts", signer}, {"receipts off", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			nc := natstest.Connect(t, natstest.RunServer(t))
			sub, err := nc.SubscribeSync(acs.AlertsPrefix + "." + alert.SystemTenant + ".>")
			if err != nil {
				t.Fatal(err)
			}
			reportReloadFailure(nc, tc.signer, []string{"rules.yaml"}, errors.New("rules.yaml:3:1: bad"), zerolog.Nop())
			m, err := sub.NextMsg(5 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			rc := m.Header.Get(acs.HdrReceipt)
			if tc.signer == nil {
				if rc != "" {
					t.Fatalf("a receipt without a signer: %q", rc)
				}
				return
			}
			if m.Header.Get(acs.HdrReceiptKey) != signer.KeyID {
				t.Fatalf("Acs-Receipt-Key %q", m.Header.Get(acs.HdrReceiptKey))
			}
			if err := receipt.Verify(signer.Public(), receipt.Alert(m.Subject, 0), m.Data, rc); err != nil {
				t.Fatalf("reload alert receipt: %v", err)
			}
			if receipt.Verify(signer.Public(), receipt.Alert(alert.Subject(alert.SystemTenant, "low", "rules_reload_failed"), 0), m.Data, rc) == nil {
				t.Fatal("the receipt verifies on another subject")
			}
		})
	}
}
