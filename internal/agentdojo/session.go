package agentdojo

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/turnguard/turnguard/internal/core/acs"
)

// Tenant and AgentID are what the sessions are sent as: one tenant and one
// agent for every run, so that nothing about a run but its conversation
// reaches the Guardian.
const (
	Tenant  = "agentdojo"
	AgentID = "agentdojo-agent"
)

// start is the timestamp of every session's first envelope; each next
// envelope is one second later. Runs record no per-message times.
var start = time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC)

// Session is a run as the ACS envelopes an adapter in AgentDojo's agent
// loop sends.
type Session struct {
	ID        string
	Envelopes []Envelope
	// Calls are the run's tool calls in the order they were requested.
	Calls []Call
}

// Envelope is one envelope of a session.
type Envelope struct {
	Hook    string
	Subject string
	Data    []byte
	Time    time.Time
	// Call is the index in Session.Calls of a toolCallRequest's call, -1
	// for other hooks.
	Call int
}

// Call is one tool call of a session.
type Call struct {
	Tool      string `json:"tool"`
	Args      []Arg  `json:"-"`
	RequestID string `json:"request_id"`
}

// Build turns a run into its session:
//
//   - sessionStart;
//   - each user message opens a turn: turnStart (triggered_by
//     user_message), then userMessage (origin user_input);
//   - each tool call is a toolCallRequest, each argument {value,
//     provenance: {origin: agent_generated}} with no derived_from (an
//     adapter cannot know the model's lineage), sent just before the call
//     runs: the calls of one assistant message run one after another,
//     each followed by its result, as AgentDojo's tool executor runs them;
//   - each tool message is a toolCallResult: exit_status failure when the
//     tool raised an error, else success; request_id_ref its call's
//     request; one output, origin tool_output, source_id the tool's name,
//     the error text for a failure;
//   - an assistant message without tool calls is an agentResponse;
//   - turnEnd before the next user message and at the end; sessionEnd.
//
// The system prompt is not sent, nor any of AgentDojo's labels.
//
// The session's ids derive from the run's source, and its first envelope
// is stamped with a fixed time, so that a run builds the same bytes every
// time; BuildWith chooses otherwise.
func Build(r *Run) (*Session, error) { return BuildWith(r, BuildOptions{}) }

// BuildOptions vary what Build derives.
type BuildOptions struct {
	// Start is the first envelope's timestamp (zero: a fixed time); each
	// next envelope is one second later.
	Start time.Time
	// Salt, when set, enters the session and request ids: a processor
	// that keeps its sessions refuses a request id it has seen, so each
	// run against it needs ids of its own.
	Salt string
}

// BuildWith is Build with options.
func BuildWith(r *Run, o BuildOptions) (*Session, error) {
	key := r.Source
	if o.Salt != "" {
		key = o.Salt + "/" + key
	}
	if o.Start.IsZero() {
		o.Start = start
	}
	b := &builder{s: &Session{ID: uuidOf("session", key)}, start: o.Start.UTC()}
	b.seed = b.s.ID
	b.add("steps/sessionStart", "", map[string]any{"platform_context": map[string]any{"framework": "agentdojo"}}, -1)
	for _, m := range r.Messages {
		switch m.Role {
		case roleUser:
			b.flush()
			b.endTurn()
			b.turn = b.nextID()
			b.add("steps/turnStart", b.turn, map[string]any{"turn_id": b.turn, "triggered_by": "user_message"}, -1)
			b.add("steps/userMessage", b.turn, map[string]any{"content": []any{map[string]any{"type": "text", "value": m.Text,
				"provenance": map[string]any{"provenance_id": b.provenanceID(), "origin": "user_input"}}}}, -1)
		case roleAssistant:
			b.flush()
			if len(m.ToolCalls) == 0 {
				b.add("steps/agentResponse", b.turn, map[string]any{"content": []any{map[string]any{"type": "text", "value": m.Text}}}, -1)
				continue
			}
			for _, c := range m.ToolCalls {
				b.pending = append(b.pending, pendingCall{call: c})
			}
		case roleTool:
			if err := b.result(m); err != nil {
				return nil, err
			}
		}
	}
	b.flush()
	b.endTurn()
	b.add("steps/sessionEnd", "", map[string]any{"reason": "completed"}, -1)
	if b.err != nil {
		return nil, fmt.Errorf("%s: %w", r.Source, b.err)
	}
	return b.s, nil
}

type builder struct {
	s     *Session
	start time.Time
	// seed makes the session's request and provenance ids; n counts them.
	seed string
	n    int
	turn string
	// pending are the calls of the last assistant message not yet
	// answered, in order.
	pending []pendingCall
	err     error
}

type pendingCall struct {
	call ToolCall
	// sent is the index in Session.Calls once its request was sent.
	sent bool
	idx  int
}

func (b *builder) nextID() string {
	b.n++
	return uuidOf(b.seed, strconv.Itoa(b.n))
}

func (b *builder) provenanceID() string {
	b.n++
	return "p-" + strconv.Itoa(b.n)
}

// request sends the toolCallRequest of pending call i, once.
func (b *builder) request(i int) {
	p := &b.pending[i]
	if p.sent {
		return
	}
	args := make(map[string]any, len(p.call.Args))
	for _, a := range p.call.Args {
		args[a.Name] = map[string]any{"value": a.Value, "provenance": map[string]any{"provenance_id": b.provenanceID(), "origin": "agent_generated"}}
	}
	p.sent, p.idx = true, len(b.s.Calls)
	id := b.add("steps/toolCallRequest", b.turn, map[string]any{"tool": map[string]any{"name": p.call.Function}, "arguments": args}, p.idx)
	b.s.Calls = append(b.s.Calls, Call{Tool: p.call.Function, Args: p.call.Args, RequestID: id})
}

// result sends a tool message's toolCallResult after the request of the
// call it answers: the pending call with its id, else the first with its
// function, else the first. A result that answers no pending call (the
// run recorded more results than calls) still goes out, without
// request_id_ref.
func (b *builder) result(m Message) error {
	match := -1
	for i, p := range b.pending {
		if m.ToolCallID != "" && p.call.ID == m.ToolCallID {
			match = i
			break
		}
	}
	if match < 0 && m.Call != nil {
		for i, p := range b.pending {
			if p.call.Function == m.Call.Function {
				match = i
				break
			}
		}
	}
	if match < 0 && len(b.pending) > 0 {
		match = 0
	}
	tool, ref := "", ""
	switch {
	case match >= 0:
		// Calls before the one answered ran first, without a result
		// recorded.
		for i := 0; i <= match; i++ {
			b.request(i)
		}
		tool, ref = b.pending[match].call.Function, b.s.Calls[b.pending[match].idx].RequestID
		b.pending = append(b.pending[:match:match], b.pending[match+1:]...)
	case m.Call != nil:
		tool = m.Call.Function
	default:
		return fmt.Errorf("a tool message that answers no call")
	}
	status, value := "success", m.Text
	if m.Error != nil {
		status, value = "failure", *m.Error
	}
	payload := map[string]any{"tool": map[string]any{"name": tool}, "exit_status": status,
		"outputs": []any{map[string]any{"value": value, "provenance": map[string]any{"provenance_id": b.provenanceID(), "origin": "tool_output", "source_id": tool}}}}
	if ref != "" {
		payload["request_id_ref"] = ref
	}
	b.add("steps/toolCallResult", b.turn, payload, -1)
	return nil
}

// flush sends the requests of calls that got no result, and forgets them.
func (b *builder) flush() {
	for i := range b.pending {
		b.request(i)
	}
	b.pending = b.pending[:0]
}

func (b *builder) endTurn() {
	if b.turn == "" {
		return
	}
	b.add("steps/turnEnd", b.turn, map[string]any{"turn_id": b.turn, "outcome": "completed"}, -1)
	b.turn = ""
}

// add appends one envelope and returns its request id. A turnStart's
// request id is its turn id.
func (b *builder) add(method, turn string, payload map[string]any, call int) string {
	id := turn
	if method != "steps/turnStart" {
		id = b.nextID()
	}
	at := b.start.Add(time.Duration(len(b.s.Envelopes)) * time.Second)
	md := map[string]any{"agent_id": AgentID, "session_id": b.s.ID}
	if turn != "" {
		md["turn_id"] = turn
	}
	data, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "id": id, "params": map[string]any{
		"acs_version": acs.Version, "request_id": id, "timestamp": at.Format(time.RFC3339Nano), "metadata": md, "payload": payload}})
	if err != nil && b.err == nil {
		// Only an argument value that is not JSON can fail here.
		b.err = fmt.Errorf("encode %s: %w", method, err)
	}
	hook := acs.HookToken(method)
	b.s.Envelopes = append(b.s.Envelopes, Envelope{Hook: hook, Subject: acs.InboundSubject(Tenant, b.s.ID, hook), Data: data, Time: at, Call: call})
	return id
}

// uuidOf derives a version-4-shaped UUID from a key, so that a run builds
// the same session every time.
func uuidOf(kind, key string) string {
	sum := sha256.Sum256([]byte(kind + "/" + key))
	sum[6] = sum[6]&0x0f | 0x40
	sum[8] = sum[8]&0x3f | 0x80
	h := hex.EncodeToString(sum[:16])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
