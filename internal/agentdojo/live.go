package agentdojo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/turnguard/turnguard/internal/core/acs"
)

// Live decides runs with a running processor over its HTTP endpoint
// (POST /acs), as an ACS adapter in AgentDojo's agent loop would: per
// session the handshake, then every envelope in order, each waiting for
// its decision.
type Live struct {
	// URL is the endpoint, e.g. http://127.0.0.1:8787/acs.
	URL string
	// Token is the caller's bearer token ("" for an endpoint run with
	// --auth none).
	Token  string
	Client *http.Client
	// Salt makes this benchmark's session ids its own (see BuildOptions).
	Salt string
	// Now stamps each session's envelopes from the time it is sent.
	Now func() time.Time
}

// maxResponseBytes bounds a response read from the endpoint.
const maxResponseBytes = 4 << 20

// DecideRun builds the run's session stamped from now and sends it.
func (l *Live) DecideRun(ctx context.Context, r *Run) (*Session, Decided, error) {
	now := time.Now
	if l.Now != nil {
		now = l.Now
	}
	s, err := BuildWith(r, BuildOptions{Start: now(), Salt: l.Salt})
	if err != nil {
		return nil, Decided{}, badRun{err}
	}
	hello, err := l.send(ctx, helloEnvelope(s))
	if err != nil {
		return nil, Decided{}, fmt.Errorf("handshake: %w", err)
	}
	if hello.Error != nil {
		return nil, Decided{}, fmt.Errorf("handshake refused: %d %s", hello.Error.Code, hello.Error.Message)
	}
	var d decisions
	d.init(s)
	for i, env := range s.Envelopes {
		resp, err := l.send(ctx, env.Data)
		if err != nil {
			return nil, Decided{}, fmt.Errorf("%s (envelope %d): %w", env.Hook, i+1, err)
		}
		d.record(i, env, decisionOf(resp))
	}
	return s, d.Decided, nil
}

// send posts one JSON-RPC request and reads its response.
func (l *Live) send(ctx context.Context, body []byte) (*acs.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if l.Token != "" {
		req.Header.Set("Authorization", "Bearer "+l.Token)
	}
	c := l.Client
	if c == nil {
		c = http.DefaultClient
	}
	res, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, maxResponseBytes))
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %s: %s", res.Status, bytes.TrimSpace(raw))
	}
	var resp acs.Response
	if err := json.Unmarshal(raw, &resp); err != nil {
		return nil, fmt.Errorf("response is not a JSON-RPC response: %w", err)
	}
	return &resp, nil
}

// helloEnvelope is the session's ACS handshake: the hooks the mapping
// sends, over HTTP.
func helloEnvelope(s *Session) []byte {
	at := time.Now().UTC()
	if len(s.Envelopes) > 0 {
		at = s.Envelopes[0].Time
	}
	data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "handshake/hello", "id": "hello-" + s.ID, "params": map[string]any{
		"acs_version": acs.Version, "request_id": uuidOf(s.ID, "hello"), "timestamp": at.Format(time.RFC3339Nano),
		"metadata": map[string]any{"agent_id": AgentID, "session_id": s.ID},
		"payload": map[string]any{
			"acs_versions_supported": []string{acs.Version},
			"methods_implemented": []string{"steps/sessionStart", "steps/turnStart", "steps/userMessage", "steps/toolCallRequest",
				"steps/toolCallResult", "steps/agentResponse", "steps/turnEnd", "steps/sessionEnd"},
			"transports_supported": []string{"http"},
			"provenance_producer":  "deterministic",
			"profiles_supported":   []string{"acs-core"},
		}}})
	return data
}
