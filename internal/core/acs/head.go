package acs

import (
	"encoding/json"
	"errors"
)

// Head is what is read of a request envelope without deciding it: its
// identity and routing, for the HTTP gateway, the clients, the processor's
// look-ups before a decision (an agent's or a subagent's state) and replay.
// ReadHead is the one partial decoder of request envelopes, so that every
// reader agrees on what an envelope says; deciding one decodes it whole
// (the guardian's intake).
type Head struct {
	Method string
	// ID is the JSON-RPC id as written.
	ID json.RawMessage
	// HasParams: params is an object.
	HasParams bool
	RequestID string
	// Timestamp is params.timestamp as written by the client.
	Timestamp string
	SessionID string
	AgentID   string
	TurnID    string
	// Signature is params.signature, nil when absent.
	Signature *Signature
	// Payload is params.payload undecoded.
	Payload json.RawMessage
}

// KeyID is the key_id the request's signature names ("" unsigned).
func (h *Head) KeyID() string {
	if h.Signature == nil {
		return ""
	}
	return h.Signature.KeyID
}

type headDoc struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Params *struct {
		RequestID string `json:"request_id"`
		Timestamp string `json:"timestamp"`
		Metadata  struct {
			SessionID string `json:"session_id"`
			AgentID   string `json:"agent_id"`
			TurnID    string `json:"turn_id"`
		} `json:"metadata"`
		Signature *Signature      `json:"signature"`
		Payload   json.RawMessage `json:"payload"`
	} `json:"params"`
}

// ReadHead reads the head of an envelope. A field of the wrong type is left
// empty and the others still read, so that one odd field does not hide the
// rest; the error is then the *json.UnmarshalTypeError, for a reader that
// refuses such an envelope (the gateway does, a whole document that is not
// an object among them). Text that is not JSON has no head.
func ReadHead(data []byte) (Head, error) {
	var d headDoc
	err := json.Unmarshal(data, &d)
	if err != nil {
		if te := (*json.UnmarshalTypeError)(nil); !errors.As(err, &te) {
			return Head{}, err
		}
	}
	h := Head{Method: d.Method, ID: d.ID}
	if p := d.Params; p != nil {
		h.HasParams = true
		h.RequestID, h.Timestamp = p.RequestID, p.Timestamp
		h.SessionID, h.AgentID, h.TurnID = p.Metadata.SessionID, p.Metadata.AgentID, p.Metadata.TurnID
		h.Signature, h.Payload = p.Signature, p.Payload
	}
	return h, err
}
