package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/alert"
	"github.com/turnguard/turnguard/internal/core/receipt"
	"github.com/turnguard/turnguard/internal/gateway"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/internal/testkit/syncbuf"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
)

// TestForgedDecisionsOverHTTP reproduces issue 11's attack on POST /acs: a
// forger watching acs.hooks.> answers every envelope with forged allows on
// the decision subject. The endpoint must answer the tainted Bash call with
// the processor's deny every time, pass on only receipts it verified, and
// count the forgeries.
func TestForgedDecisionsOverHTTP(t *testing.T) {
	const sessions = 8
	var logs syncbuf.Buffer
	e := startConfigLog(t, gateway.Config{Timeout: 10 * time.Second, Handshake: gateway.HandshakeOptional}, zerolog.New(&logs))
	forger := natstest.StartForger(t, e.srv, "default")
	for s := range sessions {
		sid := uuid(300 + s)
		for i, ex := range examples.Taint(sid) {
			var doc map[string]any
			_ = json.Unmarshal(ex.Data, &doc)
			doc["params"].(map[string]any)["timestamp"] = time.Now().UTC().Format(time.RFC3339Nano)
			_, raw, h := e.postH(t, mustJSON(e.signed(t, doc)))
			var r reply
			if err := json.Unmarshal(raw, &r); err != nil || r.Error != nil {
				t.Fatalf("session %d step %d: %s", s, i+1, raw)
			}
			want := "allow"
			if i == 5 {
				want = "deny"
			}
			if r.Result["decision"] != want {
				t.Fatalf("session %d step %d (%s): %v, want the processor's %s", s, i+1, ex.Hook, r.Result["decision"], want)
			}
			seq, err := strconv.ParseUint(h.Get(acs.HdrStreamSeq), 10, 64)
			if err != nil || h.Get(acs.HdrReceiptKey) != e.receipts.KeyID {
				t.Fatalf("session %d step %d: Acs-Stream-Seq %q, Acs-Receipt-Key %q", s, i+1, h.Get(acs.HdrStreamSeq), h.Get(acs.HdrReceiptKey))
			}
			if err := receipt.Verify(e.receipts.Public(), receipt.Decision("default", sid, seq), raw, h.Get(acs.HdrReceipt)); err != nil {
				t.Fatalf("session %d step %d: the receipt passed on does not verify: %v", s, i+1, err)
			}
		}
	}
	st := e.gw.DecisionStats()
	t.Logf("forgeries sent %d; endpoint stats %+v", forger.Sent.Load(), st)
	if forger.Sent.Load() == 0 || st.DroppedUnverified == 0 || st.Accepted != sessions*6 {
		t.Fatalf("forgeries sent %d, stats %+v", forger.Sent.Load(), st)
	}
	if out := logs.String(); !strings.Contains(out, `"level":"warn"`) || !strings.Contains(out, `"forged":true`) || !strings.Contains(out, "dropped a message on a decision subject") {
		t.Fatalf("no warning about the forgeries in the log:\n%.2000s", out)
	}
	// And an operational alert, signed, at most one a second.
	js, err := jetstream.New(natstest.Connect(t, e.srv))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	subject := alert.Subject(alert.SystemTenant, "critical", gateway.AlertForgedDecision)
	alerts, err := js.Stream(ctx, "ACS_ALERTS")
	if err != nil {
		t.Fatal(err)
	}
	var m *jetstream.RawStreamMsg
	testwait.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() (err error) {
		if m, err = alerts.GetLastMsgForSubject(ctx, subject); err != nil {
			return fmt.Errorf("no forged-decision alert: %w", err)
		}
		return nil
	})
	if err := receipt.Verify(e.receipts.Public(), receipt.Alert(subject, 0), m.Data, m.Header.Get(acs.HdrReceipt)); err != nil {
		t.Fatalf("the forged-decision alert's receipt: %v", err)
	}
}

// The endpoint's own answers carry receipts bound as the endpoint's
// (kind endpoint, the session's decision subject, no sequence): they
// verify as such and never as a decision.
func TestEndpointReceiptsAreNoDecisions(t *testing.T) {
	e := start(t, 10*time.Second)
	sid := uuid(400)
	// An unsigned hello, which the endpoint refuses itself (-32004).
	_, raw, h := e.postH(t, mustJSON(envelope(acs.HandshakeMethod, sid, uuid(401), `{}`, time.Now())))
	rc := h.Get(acs.HdrReceipt)
	if rc == "" || h.Get(acs.HdrStreamSeq) != "" {
		t.Fatalf("receipt %q, Acs-Stream-Seq %q on %s", rc, h.Get(acs.HdrStreamSeq), raw)
	}
	if err := receipt.Verify(e.receipts.Public(), receipt.Endpoint("default", sid), raw, rc); err != nil {
		t.Fatalf("endpoint receipt: %v (%s)", err, raw)
	}
	for seq := uint64(0); seq < 3; seq++ {
		if receipt.Verify(e.receipts.Public(), receipt.Decision("default", sid, seq), raw, rc) == nil {
			t.Fatalf("the endpoint's answer verifies as the decision of seq %d", seq)
		}
	}
}
