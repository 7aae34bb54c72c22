package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/alert"
	"github.com/turnguard/turnguard/internal/core/receipt"
	"github.com/turnguard/turnguard/internal/gateway"
	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
)

// TestDeletedHandshakeBucketIsRecreated (issue 23, finding 5: "a deleted
// ACS_PROCESSORS, or any bucket, is recreated like the others"):
// ACS_HANDSHAKES deleted while the endpoint runs comes back, with a signed
// critical asset_recreated alert naming it and its consequence, and the
// endpoint's handle works on the new bucket: a caller that says hello
// again has its session decided, its negotiation stored anew. Before, the
// endpoint created the bucket at its start only, so every HTTP session
// needing its handshake failed until a restart, silently.
func TestDeletedHandshakeBucketIsRecreated(t *testing.T) {
	e := startEnv(t, gateway.Config{Timeout: 10 * time.Second, Handshake: gateway.HandshakeRequired}, zerolog.Nop(),
		// Ownership ticks of 200 ms: the assets are checked every 2 s
		// even when nothing fails (a missing ACS_HANDSHAKES fails no
		// partition).
		func(c *stream.Config) { c.Topology.MemberTTL = time.Second })
	js, err := jetstream.New(natstest.Connect(t, e.srv))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	n := 4000
	hello := func(sid string) {
		t.Helper()
		n++
		doc := envelope("handshake/hello", sid, uuid(n), `{"acs_versions_supported":["0.1.0"],"methods_implemented":["steps/userMessage"],"transports_supported":["http"],"provenance_producer":"none"}`, time.Now())
		if _, raw, _ := e.post(t, mustJSON(e.signed(t, doc))); !bytes.Contains(raw, []byte(`"negotiated_version"`)) {
			t.Fatalf("hello of %s: %s", sid, raw)
		}
	}
	step := func(sid string) reply {
		t.Helper()
		n++
		doc := envelope("steps/userMessage", sid, uuid(n), `{"content":[{"type":"text","value":"hi"}]}`, time.Now())
		_, raw, _ := e.post(t, mustJSON(e.signed(t, doc)))
		var r reply
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatalf("step of %s: %v: %s", sid, err, raw)
		}
		return r
	}
	decided := func(sid string) {
		t.Helper()
		if r := step(sid); r.Error != nil || r.Result["decision"] != "allow" {
			t.Fatalf("step of %s: %+v, want decided (allow)", sid, r)
		}
	}
	sid := uuid(41)
	hello(sid)
	decided(sid)

	if err := js.DeleteKeyValue(ctx, acs.HandshakeBucket); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	testwait.CheckFor(t, time.Minute, 20*time.Millisecond, func() error {
		_, err := js.KeyValue(ctx, acs.HandshakeBucket)
		return err
	})
	t.Logf("%s recreated within %s", acs.HandshakeBucket, time.Since(deleted).Round(time.Millisecond))
	alerts, err := js.Stream(ctx, acs.AlertsStream)
	if err != nil {
		t.Fatal(err)
	}
	subject := alert.Subject(alert.SystemTenant, "critical", stream.AlertAssetRecreated)
	testwait.CheckFor(t, time.Minute, 20*time.Millisecond, func() error {
		m, err := alerts.GetLastMsgForSubject(ctx, subject)
		if err != nil {
			return fmt.Errorf("no %s alert: %w", stream.AlertAssetRecreated, err)
		}
		var f struct {
			Evidences []struct {
				Data map[string]any `json:"data"`
			} `json:"evidences"`
		}
		if err := json.Unmarshal(m.Data, &f); err != nil || len(f.Evidences) == 0 {
			return fmt.Errorf("alert without evidence (%v): %s", err, m.Data)
		}
		d := f.Evidences[0].Data
		if d["asset"] != acs.HandshakeBucket {
			return fmt.Errorf("the last %s alert names %v", stream.AlertAssetRecreated, d["asset"])
		}
		if c, _ := d["consequence"].(string); !strings.Contains(c, "-32003") || !strings.Contains(c, "hello") {
			return errors.New("the alert's consequence does not say the sessions negotiate again: " + c)
		}
		if err := receipt.Verify(e.receipts.Public(), receipt.Alert(subject, 0), m.Data, m.Header.Get(acs.HdrReceipt)); err != nil {
			return fmt.Errorf("the alert's receipt: %w", err)
		}
		return nil
	})

	// The caller says hello again, and its session is decided; the
	// negotiation is in the new bucket, written through the endpoint's
	// handle opened on the old one.
	hello(sid)
	decided(sid)
	kv, err := js.KeyValue(ctx, acs.HandshakeBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctx, acs.SessionKey("default", sid)); err != nil {
		t.Fatalf("the repeated hello is not stored in the recreated bucket: %v", err)
	}
	// A session negotiated after the deletion works as well.
	other := uuid(42)
	hello(other)
	decided(other)
}
