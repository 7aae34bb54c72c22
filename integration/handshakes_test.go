package integration

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/acs"
)

// TestDeletedHandshakeBucket (issue 23, finding 5's last clause): the
// processor binary with --http, ACS_HANDSHAKES deleted by the admin
// credential while it runs. The bucket comes back with a signed critical
// asset_recreated alert naming it, and the caller that says hello again
// has its session decided. Before, the endpoint created the bucket at its
// start only: it stayed missing, and no alert said so.
func TestDeletedHandshakeBucket(t *testing.T) {
	g := startGuardian(t, nil, false, "--listen", "127.0.0.1:0")
	nc := connectAs(t, "nats://"+addrOf(t, g.p, natsListener), filepath.Join(g.dataDir, "creds", "admin.creds"))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	recreated := map[string]bool{}
	if _, err := nc.Subscribe("acs.alerts._system.>", func(m *nats.Msg) {
		if m.Header.Get(acs.HdrRuleID) == "asset_recreated" && m.Header.Get(acs.HdrReceipt) != "" {
			mu.Lock()
			recreated[assetOf(m.Data)] = true
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	message := map[string]any{"content": []any{map[string]any{"type": "text", "value": "hi"}}}
	s := g.newSession()
	s.handshake(t)
	s.decide(t, s.env("steps/userMessage", message), "allow")

	ctx := withTimeout(t, 2*time.Minute)
	if err := js.DeleteKeyValue(ctx, acs.HandshakeBucket); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	// Nothing fails a partition when it goes: the periodic check of the
	// assets (every ten ownership ticks, 10 s by default) finds it.
	poll(t, time.Minute, "an asset_recreated alert for "+acs.HandshakeBucket, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return recreated[acs.HandshakeBucket]
	})
	t.Logf("%s recreated and alerted within %s", acs.HandshakeBucket, time.Since(deleted).Round(time.Millisecond))
	if _, err := js.KeyValue(ctx, acs.HandshakeBucket); err != nil {
		t.Fatalf("alerted, but %s is not there: %v", acs.HandshakeBucket, err)
	}
	s.handshake(t)
	s.decide(t, s.env("steps/userMessage", message), "allow")
	awaitReady(t, g.ep)
}
