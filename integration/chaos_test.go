package integration

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/acs"
)

// chaosSession is one session of the chaos test and the partition NATS
// stored it in.
type chaosSession struct {
	id        string
	partition string
	sent      int
}

// TestChaosDeletions breaks the running processor the way an operator (or
// an attacker with the admin credential) can, with sessions in flight:
//   - a session's state key purged: the session is rebuilt from ACS_HOOKS
//     and decided on; before, its whole partition wedged for ever;
//   - a partition consumer deleted: /readyz turns 503 naming it, and every
//     session of the other partitions is still decided;
//   - the state bucket deleted: /readyz turns 503.
func TestChaosDeletions(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	httpAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	tokenArgs, _ := httpCaller(t, dir, "default")
	startProcessor(t, append([]string{"--data-dir", data, "--listen", listen, "--http", httpAddr}, tokenArgs...)...)
	ep := endpoint{base: "http://" + httpAddr}
	awaitReady(t, ep)
	nc := connectAs(t, "nats://"+listen, filepath.Join(data, "creds", "admin.creds"))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := withTimeout(t, 3*time.Minute)
	hooks, err := js.Stream(ctx, "ACS_HOOKS")
	if err != nil {
		t.Fatal(err)
	}
	decided := make(chan *nats.Msg, 1024)
	if _, err := nc.ChanSubscribe("acs.decisions.default.>", decided); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// step sends a session's next envelope and waits for its decision.
	step := func(s *chaosSession) *nats.Msg {
		t.Helper()
		e := examples.Taint(s.id)[s.sent]
		ack, err := js.Publish(ctx, e.Subject("default", s.id), examples.Stamp(e.Data, time.Now()))
		if err != nil {
			t.Fatalf("publish %s step %d: %v", s.id, s.sent+1, err)
		}
		s.sent++
		if s.partition == "" {
			m, err := hooks.GetMsg(ctx, ack.Sequence)
			if err != nil {
				t.Fatal(err)
			}
			s.partition = strings.Split(m.Subject, ".")[2]
		}
		want := fmt.Sprint(ack.Sequence)
		deadline := time.After(20 * time.Second)
		for {
			select {
			case m := <-decided:
				if m.Header.Get(acs.HdrStreamSeq) == want {
					return m
				}
			case <-deadline:
				t.Fatalf("session %s (partition %s) step %d: no decision within 20 s", s.id, s.partition, s.sent)
				return nil
			}
		}
	}
	sessions := make([]*chaosSession, 12)
	for i := range sessions {
		sessions[i] = &chaosSession{id: sessionID(900 + i)}
		for range 3 {
			step(sessions[i])
		}
	}

	// A session's state purged: rebuilt, and decided on — its web page
	// still taints it, so the shell call two steps on is denied.
	victim := sessions[0]
	kvStream, err := js.Stream(ctx, "KV_ACS_TURNSTATE")
	if err != nil {
		t.Fatal(err)
	}
	if err := kvStream.Purge(ctx, jetstream.WithPurgeSubject("$KV.ACS_TURNSTATE.default."+victim.id)); err != nil {
		t.Fatal(err)
	}
	for victim.sent < len(examples.Taint(victim.id))-1 {
		step(victim)
	}
	if d := step(victim); d.Header.Get(acs.HdrDecision) != "deny" {
		t.Fatalf("the tainted call after the purge: %q, want deny", d.Header.Get(acs.HdrDecision))
	}

	// A partition consumer deleted: readiness names it; the others decide.
	gone := sessions[1].partition
	consumer := fmt.Sprintf("turnguard-p%03d", atoi(t, gone))
	if err := js.DeleteConsumer(ctx, "ACS_HOOKS", consumer); err != nil {
		t.Fatal(err)
	}
	awaitNotReady(t, ep, consumer)
	others := 0
	for _, s := range sessions[2:] {
		if s.partition != gone {
			step(s)
			others++
		}
	}
	if others == 0 {
		t.Fatal("every session landed in the deleted consumer's partition")
	}

	// The state bucket deleted: not ready either.
	if err := js.DeleteKeyValue(ctx, "ACS_TURNSTATE"); err != nil {
		t.Fatal(err)
	}
	var blocked string
	for _, s := range sessions[2:] {
		if s.partition != gone {
			e := examples.Taint(s.id)[s.sent]
			if _, err := js.Publish(ctx, e.Subject("default", s.id), examples.Stamp(e.Data, time.Now())); err != nil {
				t.Fatal(err)
			}
			blocked = s.id
			break
		}
	}
	// The partition of a session with an envelope in hand is stuck, its
	// error naming the session it cannot load.
	awaitNotReady(t, ep, blocked)
}

// awaitNotReady waits until GET /readyz answers 503 with a body naming
// want.
func awaitNotReady(t *testing.T, ep endpoint, want string) {
	t.Helper()
	var last string
	poll(t, 40*time.Second, "/readyz answering 503 naming "+want, func() bool {
		code, _, body := ep.get(t, "/readyz")
		last = fmt.Sprintf("%d %s", code, body)
		return code == http.StatusServiceUnavailable && strings.Contains(string(body), want)
	})
	t.Logf("/readyz: %s", last)
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("partition %q: %v", s, err)
	}
	return n
}
