package guardian

import (
	"errors"
	"fmt"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/receipt"
)

// ErrSeal marks a response or alert that could not be signed. Nothing
// unsigned may be published in its place, and signing it again fails the
// same way (an unknown key, a body that does not encode): the processor
// treats it as permanent and isolates the envelope.
var ErrSeal = errors.New("sealing the decision failed")

// Sealed is an Outcome made ready for publication: every body encoded
// once, with the signatures that travel with it.
type Sealed struct {
	// Response is the encoded response, its HMAC signature in it when keys
	// are configured; nil when the outcome has none.
	Response []byte
	// Receipt is the Ed25519 receipt of Response ("" with receipts off,
	// and from Encode), bound to the session's decision subject and the
	// envelope's stream sequence: ResponseBinding.
	Receipt         string
	ResponseBinding receipt.Binding
	// Alerts are the outcome's alerts, in order.
	Alerts []SealedAlert
}

// SealedAlert is one encoded alert and its receipt, bound by Binding
// (receipt.Alert).
type SealedAlert struct {
	Body    []byte
	Receipt string
	Binding receipt.Binding
}

// Seal signs out for publication, every body encoded once in its RFC 8785
// form (what is signed, what the receipt covers and what is published are
// the same bytes): the response with the session key of
// out.KeyID — the key the request named when the keyring has it, so that a
// multi-key deployment can verify its refusals too; else the keyring's
// default — then the receipts of the response and each alert, computed
// over the exact bytes that are published and bound to where each goes and
// to the envelope at seq it answers. Any failure is an error wrapping
// ErrSeal; the response is then not to be published at all.
//
// Seal writes the signature into out.Response: a second Seal of the same
// outcome signs the signed response again, so the caller seals once.
func (g *Guardian) Seal(out *Outcome, seq uint64) (Sealed, error) {
	s, err := g.Encode(out, seq)
	if err != nil || g.cfg.Receipts == nil {
		return s, err
	}
	if s.Response != nil {
		if s.Receipt, err = g.cfg.Receipts.SignCanonical(s.ResponseBinding, s.Response); err != nil {
			return Sealed{}, fmt.Errorf("%w: receipt of the response on seq %d: %w", ErrSeal, seq, err)
		}
	}
	for i := range s.Alerts {
		a := &s.Alerts[i]
		if a.Receipt, err = g.cfg.Receipts.SignCanonical(a.Binding, a.Body); err != nil {
			return Sealed{}, fmt.Errorf("%w: receipt of alert %s on seq %d: %w", ErrSeal, out.Alerts[i].RuleID, seq, err)
		}
	}
	return s, nil
}

// Encode is Seal without the receipts: the response signed with the
// session key and every body encoded once, each with the binding its
// receipt needs, for a publisher that signs the receipts of many outcomes
// together (receipt.Batch).
func (g *Guardian) Encode(out *Outcome, seq uint64) (Sealed, error) {
	var s Sealed
	route := out.Route
	if r := out.Response; r != nil {
		kr := g.cfg.Keys
		keyID := ""
		if kr != nil {
			keyID = kr.ResponseKey(out.KeyID, route.SessionID)
		}
		data, err := kr.EncodeResponse(r, keyID, route.SessionID)
		if err != nil {
			return Sealed{}, fmt.Errorf("%w: sign and encode the response on seq %d with key %q: %w", ErrSeal, seq, keyID, err)
		}
		s.Response, s.ResponseBinding = data, receipt.Decision(route.Tenant, route.SessionID, seq)
	}
	for i := range out.Alerts {
		a := &out.Alerts[i]
		data, err := acs.Canonical(a.Finding)
		if err != nil {
			return Sealed{}, fmt.Errorf("%w: encode alert %s on seq %d: %w", ErrSeal, a.RuleID, seq, err)
		}
		s.Alerts = append(s.Alerts, SealedAlert{Body: data, Binding: receipt.Alert(a.Subject, seq)})
	}
	return s, nil
}
