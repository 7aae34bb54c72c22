package guardian

import (
	"encoding/json"
	"errors"

	"github.com/turnguard/turnguard/internal/core/acs"
)

// Facts is what a caller reads of an envelope without deciding it: the
// identity of the request and the few fields the processor, replay and the
// tools need before (agent, subagent session) or beside (time, payload for
// summaries) a decision, read by ReadFacts through acs.ReadHead, the one
// partial envelope decoder of the tree.
type Facts struct {
	Method    string
	RequestID string
	TurnID    string
	AgentID   string
	// Timestamp is params.timestamp as written by the client.
	Timestamp string
	// SubagentSessionID is params.payload.subagent_session_id (a
	// subagentStart or subagentStop).
	SubagentSessionID string
	// Tool is params.payload.tool.name (the tool hooks).
	Tool string
	// KeyID is the key_id the request's signature names. On an Outcome it
	// is the key the response is to be signed with: the verified key of a
	// decided envelope, the named one (verified or not) of a refusal.
	KeyID string
	// Payload is params.payload undecoded (see PayloadValue); an
	// Outcome leaves it nil, the core keeps no envelope bytes.
	Payload json.RawMessage
}

// ReadFacts reads the facts of an envelope (acs.ReadHead, and the two
// fields of the payload the processor looks up before deciding). A field of
// the wrong type is left empty and the others still read; an envelope that
// is not JSON has no facts, and the error says why.
func ReadFacts(data []byte) (Facts, error) {
	h, err := acs.ReadHead(data)
	if err != nil {
		if te := (*json.UnmarshalTypeError)(nil); !errors.As(err, &te) {
			return Facts{}, err
		}
	}
	f := Facts{Method: h.Method, RequestID: h.RequestID, TurnID: h.TurnID, AgentID: h.AgentID,
		Timestamp: h.Timestamp, KeyID: h.KeyID(), Payload: h.Payload}
	if len(h.Payload) > 0 && h.Payload[0] == '{' {
		var sub struct {
			SubagentSessionID string `json:"subagent_session_id"`
			Tool              struct {
				Name string `json:"name"`
			} `json:"tool"`
		}
		// Same rule: a wrong type leaves the field empty.
		_ = json.Unmarshal(h.Payload, &sub)
		f.SubagentSessionID, f.Tool = sub.SubagentSessionID, sub.Tool.Name
	}
	return f, nil
}

// PayloadValue is the payload decoded as encoding/json decodes into any
// (nil when absent or null).
func (f Facts) PayloadValue() any {
	var v any
	if len(f.Payload) > 0 {
		_ = json.Unmarshal(f.Payload, &v)
	}
	return v
}

// facts are the facts of a decided envelope.
func (e *envelope) facts() Facts {
	p := &e.req.Params
	f := Facts{Method: e.req.Method, RequestID: p.RequestID, TurnID: p.Metadata.TurnID, AgentID: p.Metadata.AgentID,
		Timestamp: p.Timestamp, KeyID: e.signedWith}
	if m, ok := e.payload.(map[string]any); ok {
		if t, ok := m["tool"].(map[string]any); ok {
			f.Tool, _ = t["name"].(string)
		}
	}
	return f
}

// facts are what a refusal knows of its request.
func (k known) facts() Facts {
	return Facts{Method: k.method, RequestID: k.requestID, TurnID: k.turnID, KeyID: k.keyID}
}
