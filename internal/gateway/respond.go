package gateway

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/receipt"
)

// refuse answers a request with a JSON-RPC error, signed.
func (g *Gateway) refuse(in incoming, ref *acs.Error) reply {
	return g.seal(in, "error", ref.RPC(in.head.Method))
}

// reject refuses a request and keeps it in the dead-letter stream, as the
// processor keeps what it refuses on NATS. truncated says the body read
// is only the first MaxBodyBytes of a larger one.
func (g *Gateway) reject(ctx context.Context, from origin, in incoming, ref *acs.Error, truncated bool) reply {
	g.deadLetter(ctx, from, in, ref, truncated)
	return g.refuse(in, ref)
}

// seal builds a response to in with body as its result or error member,
// signs it as ACS-Core asks of every response — with the key the request
// named when the keyring has it, else the default — and adds its receipt.
// Without a readable session id the signing key is derived with an empty
// HKDF info: there is nothing else to derive it from.
func (g *Gateway) seal(in incoming, member string, body any) reply {
	id := in.id
	if id == nil {
		id = acs.NullID
	}
	doc := &envelope{JSONRPC: "2.0", ID: id}
	if member == "result" {
		doc.Result = body
	} else {
		doc.Error = body
	}
	if kr := g.cfg.Keys; kr != nil {
		if keyID := kr.ResponseKey(in.keyID, in.sessionID); keyID != "" {
			if sig, err := g.sign(doc, keyID, in.sessionID); err != nil {
				g.log.Error().Err(err).Msg("sign a response")
			} else {
				switch b := body.(type) {
				case map[string]any:
					b["signature"] = sig
				case *acs.RPCError:
					b.Signature = sig
				}
			}
		}
	}
	rep := reply{doc: doc}
	if g.cfg.Receipts != nil {
		// Bound as the endpoint's own answer in the session: it can never
		// pass for a processor decision.
		rcpt, err := g.cfg.Receipts.Sign(receipt.Endpoint(g.cfg.Tenant, in.sessionID), doc)
		if err != nil {
			g.log.Error().Err(err).Msg("sign a receipt")
		}
		rep.receipt, rep.receiptKey = rcpt, g.cfg.Receipts.KeyID
	}
	return rep
}

// envelope is a response the endpoint makes itself, members in the order
// of ACS's examples.
type envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   any             `json:"error,omitempty"`
}

func (g *Gateway) sign(doc *envelope, keyID, sessionID string) (*acs.Signature, error) {
	input, err := acs.Canonical(doc)
	if err != nil {
		return nil, err
	}
	return g.cfg.Keys.Sign(keyID, sessionID, input)
}

func asError(err error) *acs.Error {
	var ae *acs.Error
	if errors.As(err, &ae) {
		return ae
	}
	return &acs.Error{Code: acs.CodeInvalidParams, Reason: acs.ReasonPayloadInvalid, Message: err.Error()}
}
