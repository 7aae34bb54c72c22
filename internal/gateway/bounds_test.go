package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/gateway"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
)

// dlq reads every dead letter, oldest first.
func (e *env) dlq(t *testing.T) []*jetstream.RawStreamMsg {
	t.Helper()
	return natstest.StoredMsgs(t, natstest.JetStream(t, natstest.Connect(t, e.srv)), "ACS_DLQ")
}

// TestBatchBounds: a batch of more items than MaxBatch is refused as a
// whole, with one dead letter and none of its items decided; the
// refusals of one batch are dead-lettered one by one up to MaxDeadLetters,
// the rest counted in one summary record.
func TestBatchBounds(t *testing.T) {
	bad := func(n int) []byte {
		// Each item: valid JSON-RPC, but with nowhere to route it.
		items := make([]json.RawMessage, n)
		for i := range items {
			items[i] = json.RawMessage(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"steps/turnStart","params":{}}`)
		}
		return mustJSON(items)
	}
	tests := []struct {
		name        string
		body        []byte
		wantBatch   int    // items answered; 0: one error
		wantReason  string // of the single error
		wantDLQ     int
		wantOmitted string // on the last dead letter
		wantLastWhy string
	}{
		{"10,000 items: one refusal", bad(10_000), 0, acs.ReasonBatchTooLarge, 1, "", acs.ReasonBatchTooLarge},
		{"at the batch limit: every item answered", bad(100), 100, "", 11, "90", acs.ReasonDeadLetterLimit},
		{"under the dead-letter limit: no summary", bad(10), 10, "", 10, "", acs.ReasonEnvelopeInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := startConfig(t, gateway.Config{Timeout: 5 * time.Second, Handshake: gateway.HandshakeOptional})
			code, out, _ := e.post(t, tc.body)
			if code != 200 {
				t.Fatalf("HTTP %d %s", code, out)
			}
			if tc.wantBatch == 0 {
				var r struct {
					Error struct {
						Code int `json:"code"`
						Data struct {
							Reason string `json:"reason"`
						} `json:"data"`
					} `json:"error"`
				}
				if err := json.Unmarshal(out, &r); err != nil || r.Error.Code != int(acs.CodeInvalidRequest) || r.Error.Data.Reason != tc.wantReason {
					t.Fatalf("answer %.300s, want one %d %s (%v)", out, acs.CodeInvalidRequest, tc.wantReason, err)
				}
			} else {
				var rs []json.RawMessage
				if err := json.Unmarshal(out, &rs); err != nil || len(rs) != tc.wantBatch {
					t.Fatalf("%d answers, want %d (%v)", len(rs), tc.wantBatch, err)
				}
			}
			// The summary is kept after the answer went out.
			var dl []*jetstream.RawStreamMsg
			// Waits for at least wantDLQ; more is caught below.
			_ = testwait.Wait(5*time.Second, 20*time.Millisecond, func() error {
				if dl = e.dlq(t); len(dl) < tc.wantDLQ {
					return fmt.Errorf("%d dead letters", len(dl))
				}
				return nil
			})
			if len(dl) != tc.wantDLQ {
				t.Fatalf("%d dead letters, want %d", len(dl), tc.wantDLQ)
			}
			last := dl[len(dl)-1]
			if got := last.Header.Get(acs.HdrErrorReason); got != tc.wantLastWhy {
				t.Fatalf("last dead letter's reason %q, want %q", got, tc.wantLastWhy)
			}
			if got := last.Header.Get(acs.HdrDeadLettersOmitted); got != tc.wantOmitted {
				t.Fatalf("%s %q, want %q", acs.HdrDeadLettersOmitted, got, tc.wantOmitted)
			}
			if tc.wantBatch == 0 && !bytes.Equal(last.Data, tc.body) {
				t.Fatalf("the refused batch's dead letter holds %d bytes, not the body's %d", len(last.Data), len(tc.body))
			}
		})
	}
}

// TestDepthBound: the endpoint refuses a body nesting deeper than
// acs.MaxDepth before decoding it — one request or a batch as a whole —
// with -32600 envelope_too_deep and one dead letter.
func TestDepthBound(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("[", n) + "1" + strings.Repeat("]", n) }
	one := `{"jsonrpc":"2.0","id":1,"method":"steps/turnStart","params":{"payload":` + nest(10_000) + `}}`
	tests := []struct {
		name string
		body string
	}{
		{"one request, 10,000 deep", one},
		{"a batch with a deep item", `[{"jsonrpc":"2.0","id":2,"method":"system/ping"},` + one + `]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := startConfig(t, gateway.Config{Timeout: 5 * time.Second, Handshake: gateway.HandshakeOptional})
			_, out, _ := e.post(t, []byte(tc.body))
			var r struct {
				Error struct {
					Code int `json:"code"`
					Data struct {
						Reason string `json:"reason"`
					} `json:"data"`
				} `json:"error"`
			}
			if err := json.Unmarshal(out, &r); err != nil || r.Error.Code != int(acs.CodeInvalidRequest) || r.Error.Data.Reason != acs.ReasonTooDeep {
				t.Fatalf("answer %.300s, want -32600 %s", out, acs.ReasonTooDeep)
			}
			dl := e.dlq(t)
			if len(dl) != 1 || dl[0].Header.Get(acs.HdrErrorReason) != acs.ReasonTooDeep {
				t.Fatalf("%d dead letters, want one %s", len(dl), acs.ReasonTooDeep)
			}
		})
	}
}

// TestBatchOutlastsWriteTimeout: with a write timeout, a batch whose items
// together wait longer than it for their decisions still gets every
// answer: each item renews the deadline.
func TestBatchOutlastsWriteTimeout(t *testing.T) {
	const decision, write = 400 * time.Millisecond, time.Second
	e := startConfig(t, gateway.Config{Timeout: decision, Handshake: gateway.HandshakeOptional, WriteTimeout: write})
	e.stop() // no processor: every item waits its whole decision timeout
	hs := httptest.NewUnstartedServer(e.gw.Handler())
	hs.Config.WriteTimeout = write
	hs.Start()
	t.Cleanup(hs.Close)
	var items []any
	for i := range 4 { // 4 × 400ms > 1s
		items = append(items, e.signed(t, envelope("steps/sessionStart", uuid(700+i), uuid(800+i), `{}`, time.Now())))
	}
	resp, err := http.Post(hs.URL+"/acs", "application/json", bytes.NewReader(mustJSON(items)))
	if err != nil {
		t.Fatalf("the batch was cut off: %v", err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("the batch was cut off: %v", err)
	}
	var rs []reply
	if err := json.Unmarshal(out, &rs); err != nil || len(rs) != len(items) {
		t.Fatalf("%d answers, want %d: %.300s", len(rs), len(items), out)
	}
	for _, r := range rs {
		if r.Error == nil || r.Error.Data["reason"] != "decision_timeout" {
			t.Fatalf("answer %+v, want decision_timeout", r)
		}
	}
}
