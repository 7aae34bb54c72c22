package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/testkit/natstest"
)

// longTurnEnvelope is a schema-valid turnStart or turnEnd of session sid
// whose turn id (in the metadata and the payload) is turnID.
func longTurnEnvelope(t *testing.T, sid, method, requestID, turnID string) []byte {
	t.Helper()
	payload := map[string]any{"turn_id": turnID, "triggered_by": "user_message"}
	if method == "steps/turnEnd" {
		payload = map[string]any{"turn_id": turnID, "outcome": "completed"}
	}
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "id": requestID, "params": map[string]any{
		"acs_version": "0.1.0", "request_id": requestID, "timestamp": "2026-12-02T09:00:02Z",
		"metadata": map[string]any{"agent_id": "acme-coder", "session_id": sid, "turn_id": turnID},
		"payload":  payload}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLongTurnIDsDoNotWedgeAPartition reproduces issue 12 on a server with
// the default 1 MiB max_payload: eleven turnStart/turnEnd pairs whose turn
// ids have 120,000 characters are schema-valid, and kept in the session's
// state they would push it past max_payload, after which every write of
// the partition fails and the sessions sharing it get no decision. Each is
// refused field_too_long instead — answered, and dead-lettered with its
// original bytes — and all 64 other sessions are decided.
func TestLongTurnIDsDoNotWedgeAPartition(t *testing.T) {
	url, _ := natsServer(t, t.TempDir())
	startProcessor(t, "--nats-url", url)
	nc := connect(t, url)
	js := natstest.JetStream(t, nc)

	attacker := sessionID(1000)
	start := exampleEnvelopes(attacker)[0] // sessionStart
	type sent struct {
		subject string
		data    []byte
	}
	var long []sent
	for i := range 11 {
		turnID := fmt.Sprintf("%02d", i) + strings.Repeat("x", 120_000-2)
		for j, m := range []string{"steps/turnStart", "steps/turnEnd"} {
			rid := fmt.Sprintf("b2d8f0a1-4c3e-4d6f-9a72-%012d", 2*i+j)
			hook := strings.TrimPrefix(m, "steps/")
			long = append(long, sent{"acs.hooks.default." + attacker + "." + hook, longTurnEnvelope(t, attacker, m, rid, turnID)})
		}
	}
	if err := nc.Publish(start.subject, start.data); err != nil {
		t.Fatal(err)
	}
	for _, m := range long {
		if err := nc.Publish(m.subject, m.data); err != nil {
			t.Fatal(err)
		}
	}
	const others = 64
	for i := range others {
		for _, e := range exampleEnvelopes(sessionID(i)) {
			if err := nc.Publish(e.subject, e.data); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	total := 1 + len(long) + others*8
	awaitCount(t, js, "ACS_HOOKS", total, 30*time.Second)
	// On a wedged partition the decisions of its sessions never come.
	awaitCount(t, js, "ACS_DECISIONS", total, 60*time.Second)
	checkExactlyOnce(t, js, total)
	for i := range others {
		checkCompleteSession(t, js, sessionID(i))
	}

	// Sequences 2..23 are the long envelopes: each answered with the
	// refusal's reason, -32600 (metadata.turn_id is an envelope field).
	by := decisionsBySeq(t, js)
	for i := range long {
		seq := uint64(2 + i)
		d := by[seq][0]
		if d.Headers().Get("Acs-Error-Reason") != "field_too_long" || d.Headers().Get("Acs-Error-Code") != "-32600" {
			t.Errorf("decision of seq %d: headers %v", seq, d.Headers())
		}
		if body := string(d.Data()); !strings.Contains(body, "field_too_long") || len(body) > 8<<10 {
			t.Errorf("decision of seq %d (%d bytes): %.400s", seq, len(body), body)
		}
	}
	awaitCount(t, js, "ACS_DLQ", len(long), 20*time.Second)
	dlq, err := js.Stream(withTimeout(t, 5*time.Second), "ACS_DLQ")
	if err != nil {
		t.Fatal(err)
	}
	for i := range long {
		m, err := dlq.GetMsg(withTimeout(t, 5*time.Second), uint64(1+i))
		if err != nil {
			t.Fatal(err)
		}
		if m.Header.Get("Acs-Error-Reason") != "field_too_long" || string(m.Data) != string(long[i].data) {
			t.Errorf("dead letter %d: reason %q, %d bytes (original %d, equal %v)", i+1, m.Header.Get("Acs-Error-Reason"),
				len(m.Data), len(long[i].data), string(m.Data) == string(long[i].data))
		}
	}
	// The attacker's session holds its sessionStart and nothing of the rest.
	if s := state(t, js, attacker); s.Envelopes != 1 || s.TurnsStarted != 0 {
		t.Errorf("attacker's session: %+v", s)
	}
}
