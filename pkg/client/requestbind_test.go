package client_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/pkg/client"
)

// reuseRequestID returns env with its request id (and JSON-RPC id) set to
// id and its tool changed by edit.
func reuseRequestID(t *testing.T, env []byte, id string, edit func(payload map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(env, &m); err != nil {
		t.Fatal(err)
	}
	m["id"] = id
	params := m["params"].(map[string]any)
	params["request_id"] = id
	edit(params["payload"].(map[string]any))
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Issue 23, finding 8: a second envelope reusing the request id of an
// allowed one (a Read) must never be handed the first one's allow — the
// answer is bound to the envelope asked about, not to its request id.
// Both orders of arrival: one after the other (the first's decision is in
// the stream already), and at once (the first's decision arrives live
// while the second waits).
func TestAnswerBoundToTheEnvelope(t *testing.T) {
	for _, concurrent := range []bool{false, true} {
		name := "sequential"
		if concurrent {
			name = "concurrent"
		}
		t.Run(name, func(t *testing.T) {
			srv := natstest.RunServer(t)
			runProcessor(t, srv)
			c := newClient(t, natstest.Connect(t, srv), client.Options{Timeout: 10 * time.Second})
			envs := examples.Taint("")
			// The session is tainted by the web result; a Bash in the
			// next turn is denied.
			for _, e := range envs[:5] {
				if d, err := c.Decide(context.Background(), e.Data); err != nil || d.Disposition != "allow" {
					t.Fatalf("%s: %+v, %v", e.Hook, d, err)
				}
			}
			const rid = "b2d8f1a0-6c3e-4d5f-9a7b-1e2f3a4b5c99"
			read := reuseRequestID(t, envs[5].Data, rid, func(p map[string]any) {
				p["tool"] = map[string]any{"name": "Read"}
				delete(p, "capability")
				p["arguments"] = map[string]any{"file_path": map[string]any{"value": "README.md"}}
			})
			bash := reuseRequestID(t, envs[5].Data, rid, func(map[string]any) {})
			if concurrent {
				type res struct {
					d   *client.Decision
					err error
				}
				rd, bd := make(chan res, 1), make(chan res, 1)
				go func() { d, err := c.Decide(context.Background(), read); rd <- res{d, err} }()
				go func() { d, err := c.Decide(context.Background(), bash); bd <- res{d, err} }()
				r, b := <-rd, <-bd
				if r.err != nil || b.err != nil {
					t.Fatalf("%v, %v", r.err, b.err)
				}
				// Each gets an answer of its own envelope: whichever is
				// stored second is refused by the processor (a request id
				// seen before) or decided on its own; neither waits out
				// its timeout because the other took its place.
				if r.d.FromPosture || b.d.FromPosture {
					t.Fatalf("a call got no answer: the Read %+v, the Bash %+v", r.d, b.d)
				}
				if b.d.Disposition == "allow" || b.d.Seq == r.d.Seq {
					t.Fatalf("the Bash: %+v (the Read: seq %d)", b.d, r.d.Seq)
				}
				return
			}
			r, err := c.Decide(context.Background(), read)
			if err != nil || r.Disposition != "allow" {
				t.Fatalf("the Read: %+v, %v", r, err)
			}
			b, err := c.Decide(context.Background(), bash)
			if err != nil {
				t.Fatal(err)
			}
			if b.Disposition == "allow" || b.Seq == r.Seq {
				t.Fatalf("the Bash reusing the Read's request id: %+v (the Read: seq %d)", b, r.Seq)
			}
			// A retry of the very same bytes is still recognised as one.
			again, err := c.Decide(context.Background(), read)
			if err != nil || !again.Replayed || again.Seq != r.Seq || again.Disposition != "allow" {
				t.Fatalf("retrying the Read: %+v, %v", again, err)
			}
		})
	}
}

// What finding 8's fix left open: someone who may publish to the tenant's
// hooks and knows an envelope's bytes before they are sent stores other
// bytes (an allowed Read) under that envelope's Nats-Msg-Id first, so that
// the stream takes the real envelope (a Bash in a tainted turn) for a retry
// and its sender is handed the Read's allow. The processor refuses a
// message whose Nats-Msg-Id names another envelope's digest, so the
// sender gets that refusal, never an allow.
func TestPreemptedMsgIDIsRefused(t *testing.T) {
	srv := natstest.RunServer(t)
	runProcessor(t, srv)
	nc := natstest.Connect(t, srv)
	c := newClient(t, nc, client.Options{Timeout: 10 * time.Second})
	envs := examples.Taint("")
	for _, e := range envs[:5] {
		if d, err := c.Decide(context.Background(), e.Data); err != nil || d.Disposition != "allow" {
			t.Fatalf("%s: %+v, %v", e.Hook, d, err)
		}
	}
	bash := envs[5].Data
	var req struct {
		Params struct {
			RequestID string `json:"request_id"`
		} `json:"params"`
	}
	if err := json.Unmarshal(bash, &req); err != nil {
		t.Fatal(err)
	}
	read := reuseRequestID(t, bash, req.Params.RequestID, func(p map[string]any) {
		p["tool"] = map[string]any{"name": "Read"}
		delete(p, "capability")
		p["arguments"] = map[string]any{"file_path": map[string]any{"value": "README.md"}}
	})
	m := nats.NewMsg(envs[5].Subject("default", examples.TaintSessionID))
	m.Data = read
	m.Header.Set(acs.HdrMsgID, client.MsgID(examples.TaintSessionID, req.Params.RequestID, bash))
	if _, err := natstest.JetStream(t, nc).PublishMsg(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	d, err := c.Decide(context.Background(), bash)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Replayed || d.Disposition == "allow" || !slices.Contains(d.ReasonCodes, acs.ReasonMsgIDMismatch) {
		t.Fatalf("the Bash whose Nats-Msg-Id a Read took first: %+v", d)
	}
}
