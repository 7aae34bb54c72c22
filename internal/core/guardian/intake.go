package guardian

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/schema"
)

// envelope is an inbound message that passed intake: valid JSON, a valid
// request envelope, a known method with a valid payload, and a body that
// agrees with its subject.
type envelope struct {
	req  acs.Request
	spec *acs.MethodSpec
	step turnstate.Step
	// payload is the decoded payload, numbers kept exact.
	payload any
	// requestSum is the SHA-256 of the canonical params, whose hex is the
	// ContextEntry's request_hash.
	requestSum [sha256.Size]byte
	// signedWith is the key_id of a verified request signature.
	signedWith string
	// provenance is acs.ProvenanceOf(payload), walked by checkBounds
	// (nil for system/ping, whose payload is never applied).
	provenance []acs.Provenance
}

// known is what could be read from a message that failed intake, so the
// refusal can still be answered to the right request.
type known struct {
	id        json.RawMessage
	method    string
	requestID string
	turnID    string
	// keyID is the key_id the request's signature names, verified or not:
	// the refusal is signed with it when the keyring has it.
	keyID string
}

// intake parses and validates one inbound message. On failure it returns the
// refusal and whatever it could learn about the request.
func (g *Guardian) intake(route acs.Route, msg Message) (*envelope, known, *acs.Error) {
	data := msg.Data
	var k known
	if len(data) > g.cfg.MaxEnvelopeBytes {
		return nil, k, &acs.Error{Code: acs.CodeInvalidRequest, Reason: acs.ReasonTooLarge,
			Message: fmt.Sprintf("envelope is %d bytes; the limit is %d", len(data), g.cfg.MaxEnvelopeBytes)}
	}
	// Before decoding: a document nested thousands deep costs a decoder
	// per level (recursion, a container each), however few bytes it has.
	if ref := acs.CheckDepth(data, acs.MaxDepth); ref != nil {
		return nil, k, ref
	}
	doc, rawParams, err := decodeIJSON(data, route.SessionID, route.Tenant)
	if err != nil {
		return nil, k, &acs.Error{Code: acs.CodeParseError, Reason: acs.ReasonParseError, Message: err.Error()}
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, k, &acs.Error{Code: acs.CodeInvalidRequest, Reason: acs.ReasonEnvelopeInvalid,
			Message: fmt.Sprintf("a request envelope is a JSON object, not %s", jsonKind(doc))}
	}
	k = readKnown(obj)
	if k.method != "" && !acs.Defined(k.method) {
		// Before the envelope schema, whose method pattern would call this
		// an invalid request: ACS §17 answers an undefined method -32601.
		return nil, k, acs.MethodError(k.method)
	}
	if err := g.validator.ValidateRequest(doc); err != nil {
		return nil, k, asRefusal(err)
	}
	// The envelope validated: every field read below has its type.
	e := envelope{req: requestFrom(obj, k.id)}
	if ref := checkSubject(route, &e.req); ref != nil {
		return nil, k, ref
	}
	if major, _, _ := strings.Cut(e.req.Params.ACSVersion, "."); major != "0" {
		return nil, k, &acs.Error{Code: acs.CodeUnsupportedVersion, Reason: acs.ReasonVersion, SupportedVersions: []string{acs.Version},
			Message: fmt.Sprintf("acs_version %s does not share a major version with %s", e.req.Params.ACSVersion, acs.Version)}
	}
	if ref := g.checkSignature(obj, &e); ref != nil {
		return nil, k, ref
	}
	if ref := acs.MethodError(e.req.Method); ref != nil {
		return nil, k, ref
	}
	e.spec = acs.LookupMethod(e.req.Method)
	if ref := g.checkSkew(&e, msg); ref != nil {
		return nil, k, ref
	}
	e.payload = obj["params"].(map[string]any)["payload"]
	if e.requestSum, err = acs.RequestSumOf(obj["params"], json.RawMessage(rawParams)); err != nil {
		return nil, k, &acs.Error{Code: acs.CodeInvalidRequest, Reason: acs.ReasonEnvelopeInvalid, Message: err.Error()}
	}
	if err := g.validator.ValidatePayload(e.req.Method, e.payload); err != nil {
		return nil, k, asRefusal(err)
	}
	ts, err := time.Parse(time.RFC3339Nano, e.req.Params.Timestamp)
	if err != nil {
		return nil, k, &acs.Error{Code: acs.CodeInvalidRequest, Reason: acs.ReasonEnvelopeInvalid,
			Message: "timestamp is not an RFC 3339 date-time", Violations: []acs.Violation{{Pointer: "/params/timestamp", Message: err.Error()}}}
	}
	md := e.req.Params.Metadata
	e.step = turnstate.Step{Time: ts, Method: e.spec, RequestID: e.req.Params.RequestID, AgentID: md.AgentID, TurnID: md.TurnID, ParentTurnID: md.ParentTurnID}
	if err := decodePayload(&e); err != nil {
		return nil, k, &acs.Error{Code: acs.CodeInvalidParams, Reason: acs.ReasonPayloadInvalid, Message: err.Error()}
	}
	if ref := checkBounds(&e); ref != nil {
		return nil, k, ref
	}
	if acs.MsgIDDigestMismatch(msg.MsgID, data) {
		return nil, k, &acs.Error{Code: acs.CodeInvalidRequest, Reason: acs.ReasonMsgIDMismatch,
			Message: "the Nats-Msg-Id names the SHA-256 of other bytes than this envelope's"}
	}
	return &e, k, nil
}

// checkSignature verifies a request's signature when keys are configured
// and refuses an unsigned request when signatures are required (ACS §10).
// system/ping needs no signature.
func (g *Guardian) checkSignature(doc map[string]any, e *envelope) *acs.Error {
	if e.req.Method == "system/ping" {
		return nil
	}
	sig := e.req.Params.Signature
	if ref := acs.VerifyRequest(g.cfg.Keys, g.cfg.RequireSignatures, doc, sig, e.req.Params.Metadata.SessionID); ref != nil {
		return ref
	}
	if sig != nil && g.cfg.Keys != nil {
		e.signedWith = sig.KeyID
	}
	return nil
}

// checkSkew refuses a request whose timestamp is further than the skew
// window from the time the stream received it (ACS §10.3: a Guardian MUST,
// signed or not). The stream's time, not the clock, so that a replay
// decides the same; a message without one (a unit test) is not checked.
// system/ping carries no state and is exempt, as in the Go reference.
func (g *Guardian) checkSkew(e *envelope, msg Message) *acs.Error {
	if msg.Time.IsZero() || e.spec.Scope == acs.Liveness {
		return nil
	}
	return acs.CheckSkew(e.req.Params.Timestamp, msg.Time, g.cfg.SkewWindow)
}

// requestFrom reads the typed envelope out of its validated decoded form,
// so the body is parsed once. id is the id as readKnown encoded it (nil
// when it did not: an id that is neither a string nor a number).
func requestFrom(obj map[string]any, id json.RawMessage) acs.Request {
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	var r acs.Request
	r.JSONRPC, r.Method = str(obj, "jsonrpc"), str(obj, "method")
	if r.ID = id; id == nil {
		r.ID = marshalID(obj["id"])
	}
	params, _ := obj["params"].(map[string]any)
	p := &r.Params
	p.ACSVersion, p.RequestID, p.Timestamp = str(params, "acs_version"), str(params, "request_id"), str(params, "timestamp")
	p.Nonce, p.TenantID = str(params, "nonce"), str(params, "tenant_id")
	md, _ := params["metadata"].(map[string]any)
	p.Metadata = acs.Metadata{AgentID: str(md, "agent_id"), AgentName: str(md, "agent_name"), SessionID: str(md, "session_id"),
		TurnID: str(md, "turn_id"), ParentTurnID: str(md, "parent_turn_id"), Cwd: str(md, "cwd"), Platform: str(md, "platform")}
	if sig, ok := params["signature"].(map[string]any); ok {
		p.Signature = &acs.Signature{Algorithm: str(sig, "algorithm"), Value: str(sig, "value"), KeyID: str(sig, "key_id")}
	}
	return r
}

// decodeIJSON decodes a body in one pass that enforces I-JSON (RFC 7493):
// one value, valid UTF-8, no duplicate member names. encoding/json would
// silently keep the last of two duplicate names, which lets a body say one
// thing to a validator and another to a policy. Numbers stay exact
// (json.Number), as the schema validator expects. It also returns the raw
// params member, whose canonical form the chain hashes.
func decodeIJSON(data []byte, known ...string) (any, []byte, error) {
	if v, params, ok := fastDecodeIJSON(data, known...); ok {
		return v, params, nil
	}
	return slowDecodeIJSON(data)
}

// slowDecodeIJSON is decodeIJSON on the jsontext decoder: the reference the
// fast path is checked against, and the source of every parse error message.
func slowDecodeIJSON(data []byte) (any, []byte, error) {
	d := jsontext.NewDecoder(bytes.NewReader(data))
	var params []byte
	v, err := decodeValue(d, data, &params)
	if err != nil {
		return nil, nil, fmt.Errorf("not valid I-JSON: %w", err)
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return nil, nil, fmt.Errorf("not valid I-JSON: data after the top-level value")
	}
	return v, params, nil
}

// decodeValue reads one value; at the top level (params != nil) it records
// where the params member's value lies in data.
func decodeValue(d *jsontext.Decoder, data []byte, params *[]byte) (any, error) {
	tok, err := d.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case '{':
		obj := map[string]any{}
		for d.PeekKind() != '}' {
			name, err := d.ReadToken()
			if err != nil {
				return nil, err
			}
			key := name.String()
			start := d.InputOffset()
			v, err := decodeValue(d, data, nil)
			if err != nil {
				return nil, err
			}
			if params != nil && key == "params" {
				*params = bytes.TrimLeft(data[start:d.InputOffset()], " \t\r\n:")
			}
			obj[key] = v
		}
		_, err := d.ReadToken()
		return obj, err
	case '[':
		arr := []any{}
		for d.PeekKind() != ']' {
			v, err := decodeValue(d, data, nil)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err := d.ReadToken()
		return arr, err
	case '"':
		return tok.String(), nil
	case '0':
		return json.Number(tok.String()), nil
	case 't', 'f':
		return tok.Bool(), nil
	}
	return nil, nil
}

// checkSubject refuses a body whose tenant, session or method disagrees with
// the subject it was published to. The subject is what NATS permissions bind
// to a credential; the body alone is never trusted for routing.
func checkSubject(r acs.Route, req *acs.Request) *acs.Error {
	var vs []acs.Violation
	if tok := acs.HookToken(req.Method); tok != r.Hook {
		vs = append(vs, acs.Violation{Pointer: "/method", Message: fmt.Sprintf("method %s belongs on subject token %q, not %q", req.Method, tok, r.Hook)})
	}
	if sid := req.Params.Metadata.SessionID; sid != r.SessionID {
		vs = append(vs, acs.Violation{Pointer: "/params/metadata/session_id", Message: fmt.Sprintf("session_id %s, but the subject names session %s", sid, r.SessionID)})
	}
	if t := req.Params.TenantID; t != "" && t != r.Tenant {
		vs = append(vs, acs.Violation{Pointer: "/params/tenant_id", Message: fmt.Sprintf("tenant_id %q, but the subject names tenant %q", t, r.Tenant)})
	}
	if len(vs) == 0 {
		return nil
	}
	return &acs.Error{Code: acs.CodeInvalidRequest, Reason: acs.ReasonSubjectMismatch, Message: "envelope body disagrees with its subject", Violations: vs}
}

// decodePayload reads the payload fields that drive turn transitions,
// from the validated decoded payload.
func decodePayload(e *envelope) error {
	p, _ := e.payload.(map[string]any)
	str := func(k string) string { s, _ := p[k].(string); return s }
	num := func(k string) *int {
		n, ok := p[k].(json.Number)
		if !ok {
			return nil
		}
		i, err := n.Int64()
		if err != nil {
			return nil
		}
		v := int(i)
		return &v
	}
	switch e.spec.Method {
	case "steps/turnStart":
		ts := &acs.TurnStartPayload{TurnID: str("turn_id"), TriggeredBy: str("triggered_by"), ParentTurnID: str("parent_turn_id")}
		if in, ok := p["expected_inputs"].([]any); ok {
			for _, x := range in {
				if s, ok := x.(string); ok {
					ts.ExpectedInputs = append(ts.ExpectedInputs, s)
				}
			}
		}
		e.step.TurnStart = ts
	case "steps/turnEnd":
		e.step.TurnEnd = &acs.TurnEndPayload{TurnID: str("turn_id"), Outcome: str("outcome"), StepCount: num("step_count"), ToolCallCount: num("tool_call_count")}
	case "steps/subagentStart":
		e.step.SubagentStart = &acs.SubagentStartPayload{SubagentSessionID: str("subagent_session_id"), ParentSessionID: str("parent_session_id"),
			ParentStepID: str("parent_step_id"), IntentDerivation: str("intent_derivation")}
	case "steps/sessionEnd":
		e.step.SessionEnd = &acs.SessionEndPayload{Reason: str("reason"), SessionReason: str("session_reason")}
	}
	return nil
}

// readKnown picks the request's identity out of a decoded object that may
// not be a valid envelope. Only values of the right shape are taken.
func readKnown(obj map[string]any) known {
	var k known
	switch id := obj["id"].(type) {
	case string, json.Number:
		k.id = marshalID(id)
	}
	k.method, _ = obj["method"].(string)
	params, _ := obj["params"].(map[string]any)
	if rid, _ := params["request_id"].(string); schema.IsUUID(rid) {
		k.requestID = rid
	}
	if md, ok := params["metadata"].(map[string]any); ok {
		// Not one too long to keep: the refusal of such an envelope names
		// it by request id only (its turn id goes into headers and logs).
		if tid, _ := md["turn_id"].(string); acs.StoredLen(tid) <= acs.MaxIDBytes {
			k.turnID = tid
		}
	}
	if sig, ok := params["signature"].(map[string]any); ok {
		k.keyID, _ = sig["key_id"].(string)
	}
	return k
}

// marshalID is json.Marshal of a JSON-RPC id. The usual id, a string of
// printable ASCII that encoding/json leaves unescaped, is quoted directly
// instead of through reflection.
func marshalID(id any) json.RawMessage {
	if s, ok := id.(string); ok && plainASCII(s) {
		b := make([]byte, 0, len(s)+2)
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	b, _ := json.Marshal(id)
	return b
}

// plainASCII reports a string encoding/json writes verbatim: printable
// ASCII without '"', '\\' and the HTML characters it escapes.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

func asRefusal(err error) *acs.Error {
	if e, ok := err.(*acs.Error); ok {
		return e
	}
	return &acs.Error{Code: acs.CodeInternalError, Reason: "validation_failed", Message: err.Error()}
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}
