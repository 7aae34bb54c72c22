package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
)

// TestReplayedMemberRecordOnLoopback is issue 23's liveness probe against
// processor binaries: one of two instances is killed and its last member
// record stored again and again (as a direct get replied to the record's
// own KV subject did; here a put on an unauthenticated connection). The
// survivor's /readyz answers 503 naming the silent member while it holds
// partitions, then the survivor takes them all, is ready, and decides in
// every partition. Before, the record kept the dead instance "alive": its
// partitions undecided, /readyz 200.
func TestReplayedMemberRecordOnLoopback(t *testing.T) {
	url, _ := natsServer(t, t.TempDir())
	js := natstest.JetStream(t, connect(t, url))
	a := startProcessor(t, "--nats-url", url, "--instance", "l-a", "--member-ttl", "2s", "--metrics", "127.0.0.1:0")
	b := startProcessor(t, "--nats-url", url, "--instance", "l-b", "--member-ttl", "2s")
	ep := endpoint{base: "http://" + addrOf(t, a, metricsListener)}
	awaitMembers(t, js, 4, "l-a", "l-b")
	ctx := withTimeout(t, 2*time.Minute)
	kv, err := js.KeyValue(ctx, "ACS_PROCESSORS")
	if err != nil {
		t.Fatal(err)
	}
	b.kill()
	last, err := kv.Get(ctx, "l-b")
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	replayed := make(chan struct{})
	go func() {
		defer close(replayed)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			_, _ = kv.Put(rctx, "l-b", last.Value())
			select {
			case <-rctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	defer func() { stop(); <-replayed }()
	killed := time.Now()
	poll(t, 30*time.Second, "/readyz naming the silent member l-b", func() bool {
		code, _, body := ep.get(t, "/readyz")
		if code == http.StatusServiceUnavailable && strings.Contains(string(body), `"l-b"`) {
			t.Logf("%s after the kill: %d %s", time.Since(killed).Round(time.Millisecond), code, strings.TrimSpace(string(body)))
			return true
		}
		return false
	})
	poll(t, 30*time.Second, "l-a ready and owning all 4 partitions with l-b's record replayed", func() bool {
		code, _, _ := ep.get(t, "/readyz")
		return code == http.StatusOK && scrapeValue(t, ep, "turnguard_partitions_owned") == 4
	})
	t.Logf("l-a owns every partition and is ready %s after the kill", time.Since(killed).Round(time.Millisecond))
	before := count(t, js, "ACS_DECISIONS")
	for i := range 16 {
		sid := sessionID(900 + i)
		e := examples.Session(sid)[0]
		if _, err := js.Publish(ctx, e.Subject("default", sid), e.Data); err != nil {
			t.Fatal(err)
		}
	}
	poll(t, 30*time.Second, fmt.Sprintf("16 more decisions than %d", before), func() bool {
		return count(t, js, "ACS_DECISIONS") >= before+16
	})
	if rctx.Err() != nil {
		t.Fatal("the replay stopped before the test did")
	}
}
