package gateway_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/gateway"
)

// TestHTTPAnswerBoundToTheEnvelope (issue 23, finding 8, over HTTP): a
// Bash reusing the request id of an allowed Read in a tainted session is
// answered for itself — never with the Read's allow or its stream
// sequence.
func TestHTTPAnswerBoundToTheEnvelope(t *testing.T) {
	e := startAuth(t, gateway.Config{Handshake: gateway.HandshakeOptional}, nil)
	sid := uuid(950)
	envs := examples.Taint(sid)
	doc := func(raw []byte, edit func(params map[string]any)) map[string]any {
		var d map[string]any
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		params := d["params"].(map[string]any)
		params["timestamp"] = time.Now().UTC().Format(time.RFC3339Nano)
		if edit != nil {
			edit(params)
		}
		return d
	}
	for _, ex := range envs[:5] {
		e.post(t, tokenAlice, doc(ex.Data, nil)).wantDecision(t, "allow")
	}
	const rid = "b2d8f1a0-6c3e-4d5f-9a7b-1e2f3a4b5c98"
	sameID := func(params map[string]any) { params["request_id"] = rid }
	read := doc(envs[5].Data, func(params map[string]any) {
		sameID(params)
		params["payload"] = map[string]any{"tool": map[string]any{"name": "Read"},
			"arguments": map[string]any{"file_path": map[string]any{"value": "README.md"}}}
	})
	read["id"] = rid
	r := e.post(t, tokenAlice, read)
	r.wantDecision(t, "allow")
	bash := doc(envs[5].Data, sameID)
	bash["id"] = rid
	b := e.post(t, tokenAlice, bash)
	if b.status != http.StatusOK || b.Result["decision"] == "allow" {
		t.Fatalf("the Bash reusing the Read's request id: HTTP %d %s", b.status, b.raw)
	}
	if seq := b.header.Get(acs.HdrStreamSeq); seq != "" && seq == r.header.Get(acs.HdrStreamSeq) {
		t.Fatalf("the Bash got the Read's answer (sequence %s): %s", seq, b.raw)
	}
}
