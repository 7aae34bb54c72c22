package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/core/acs"
)

// chaosDecisions records every decision seen, by the ACS_HOOKS sequence it
// answers.
type chaosDecisions struct {
	mu  sync.Mutex
	got map[string][]string // Acs-Stream-Seq → decisions
}

func (d *chaosDecisions) add(m *nats.Msg) {
	d.mu.Lock()
	defer d.mu.Unlock()
	seq := m.Header.Get(acs.HdrStreamSeq)
	d.got[seq] = append(d.got[seq], m.Header.Get(acs.HdrDecision))
}

func (d *chaosDecisions) of(seq uint64) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.got[fmt.Sprint(seq)]
}

// chaosRig is a running processor, an admin connection to its embedded
// server, and the decisions it published.
type chaosRig struct {
	t         *testing.T
	ctx       context.Context
	js        jetstream.JetStream
	ep        endpoint
	decisions *chaosDecisions
}

// chaosSession is one taint session (examples/taint) of the chaos test.
type chaosSession struct {
	id        string
	partition string
	sent      int
}

// send publishes the session's next envelope and returns its sequence.
func (r *chaosRig) send(s *chaosSession) (uint64, error) {
	e := examples.Taint(s.id)[s.sent]
	ack, err := r.js.Publish(r.ctx, e.Subject("default", s.id), examples.Stamp(e.Data, time.Now()))
	if err != nil {
		return 0, err
	}
	s.sent++
	if s.partition == "" {
		if hooks, err := r.js.Stream(r.ctx, "ACS_HOOKS"); err == nil {
			if m, err := hooks.GetMsg(r.ctx, ack.Sequence); err == nil {
				s.partition = strings.Split(m.Subject, ".")[2]
			}
		}
	}
	return ack.Sequence, nil
}

// step sends the session's next envelope and waits for its decision.
func (r *chaosRig) step(s *chaosSession, within time.Duration) string {
	r.t.Helper()
	seq, err := r.send(s)
	if err != nil {
		r.t.Fatalf("publish %s step %d: %v", s.id, s.sent+1, err)
	}
	var got []string
	poll(r.t, within, fmt.Sprintf("the decision on session %s (partition %s) step %d, seq %d", s.id, s.partition, s.sent, seq), func() bool {
		got = r.decisions.of(seq)
		return len(got) > 0
	})
	return got[0]
}

// chaosLoad keeps taint sessions going in the background and remembers
// every envelope the stream accepted.
type chaosLoad struct {
	mu       sync.Mutex
	accepted []uint64
	failed   int
	paused   bool
	stop     chan struct{}
	done     chan struct{}
}

func (r *chaosRig) startLoad(first int) *chaosLoad {
	l := &chaosLoad{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		live := make([]*chaosSession, 16)
		next := first
		for i := range live {
			live[i] = &chaosSession{id: sessionID(next)}
			next++
		}
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-l.stop:
				return
			case <-tick.C:
			}
			l.mu.Lock()
			paused := l.paused
			l.mu.Unlock()
			if paused {
				continue
			}
			s := live[i%len(live)]
			if s.sent == len(examples.Taint(s.id)) {
				s = &chaosSession{id: sessionID(next)}
				live[i%len(live)] = s
				next++
			}
			seq, err := r.send(s)
			l.mu.Lock()
			if err != nil {
				// ACS_HOOKS deleted: the agent sees its publish fail.
				l.failed++
			} else {
				l.accepted = append(l.accepted, seq)
			}
			l.mu.Unlock()
		}
	}()
	return l
}

func (l *chaosLoad) pause(p bool) {
	l.mu.Lock()
	l.paused = p
	l.mu.Unlock()
}

func (l *chaosLoad) snapshot() []uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]uint64(nil), l.accepted...)
}

// awaitAllDecided waits until every envelope the load got accepted has a
// decision, and fails on any decided twice.
func (r *chaosRig) awaitAllDecided(l *chaosLoad, within time.Duration) int {
	r.t.Helper()
	seqs := l.snapshot()
	var missing []uint64
	poll(r.t, within, "a decision on every accepted envelope", func() bool {
		missing = missing[:0]
		for _, seq := range seqs {
			if len(r.decisions.of(seq)) == 0 {
				missing = append(missing, seq)
			}
		}
		if len(missing) > 0 {
			r.t.Logf("%d of %d accepted envelopes undecided, e.g. seq %d", len(missing), len(seqs), missing[0])
		}
		return len(missing) == 0
	})
	for _, seq := range seqs {
		if d := r.decisions.of(seq); len(d) != 1 {
			r.t.Errorf("seq %d decided %d times: %v", seq, len(d), d)
		}
	}
	return len(seqs)
}

// TestChaosDeletions breaks the running processor the way an operator (or
// an attacker with the admin credential) can, under a steady load of taint
// sessions, and shows deciding resumes by itself within seconds each time,
// every envelope the stream accepted decided exactly once:
//   - a session's state key purged: the session is rebuilt from ACS_HOOKS,
//     its taint with it (the shell call after the web page is still
//     denied); before, its whole partition wedged for ever;
//   - a partition consumer deleted: it is recreated and its partition
//     decides again; before, the partition stopped until a restart;
//   - the state bucket deleted: recreated, and every session rebuilt from
//     history as its next envelope comes (taints included);
//   - ACS_HOOKS deleted: recreated numbering above every sequence the
//     states remember, so new envelopes are not taken for old ones.
//
// Each recreation raises a signed asset_recreated alert.
func TestChaosDeletions(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	tokenArgs, _ := httpCaller(t, dir, "default")
	p := startProcessor(t, append([]string{"--data-dir", data, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"}, tokenArgs...)...)
	listen := addrOf(t, p, natsListener)
	ep := endpoint{base: "http://" + addrOf(t, p, httpListener)}
	awaitReady(t, ep)
	nc := connectAs(t, "nats://"+listen, filepath.Join(data, "creds", "admin.creds"))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	r := &chaosRig{t: t, ctx: withTimeout(t, 5*time.Minute), js: js, ep: ep, decisions: &chaosDecisions{got: map[string][]string{}}}
	if _, err := nc.Subscribe("acs.decisions.default.>", r.decisions.add); err != nil {
		t.Fatal(err)
	}
	var alertMu sync.Mutex
	recreated := map[string]bool{}
	if _, err := nc.Subscribe("acs.alerts.>", func(m *nats.Msg) {
		if m.Header.Get(acs.HdrRuleID) == "asset_recreated" && m.Header.Get(acs.HdrReceipt) != "" {
			alertMu.Lock()
			recreated[assetOf(m.Data)] = true
			alertMu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	awaitAlert := func(asset string) {
		t.Helper()
		poll(t, 30*time.Second, "an asset_recreated alert for "+asset, func() bool {
			alertMu.Lock()
			defer alertMu.Unlock()
			return recreated[asset]
		})
	}
	// finishTainted plays a taint session to its end: the shell call after
	// the web page must be denied.
	finishTainted := func(s *chaosSession, what string, broken time.Time) {
		t.Helper()
		last := len(examples.Taint(s.id)) - 1
		for s.sent < last {
			r.step(s, 30*time.Second)
		}
		if d := r.step(s, 30*time.Second); d != "deny" {
			t.Fatalf("%s: the tainted shell call got %q, want deny", what, d)
		}
		t.Logf("%s: the session's remaining steps decided within %s", what, time.Since(broken).Round(time.Millisecond))
	}
	started := func(n int) *chaosSession {
		s := &chaosSession{id: sessionID(n)}
		for range 3 { // up to the untrusted web page
			r.step(s, 20*time.Second)
		}
		return s
	}

	load := r.startLoad(2000)
	defer func() {
		close(load.stop)
		<-load.done
	}()

	// A session's state purged.
	victim := started(900)
	broken := time.Now()
	if err := purgeKey(r, "default."+victim.id); err != nil {
		t.Fatal(err)
	}
	finishTainted(victim, "after its state key was purged", broken)

	// A partition consumer deleted, with a tainted session in it.
	inGone := started(901)
	consumer := fmt.Sprintf("turnguard-p%03d", atoi(t, inGone.partition))
	broken = time.Now()
	if err := js.DeleteConsumer(r.ctx, "ACS_HOOKS", consumer); err != nil {
		t.Fatal(err)
	}
	awaitAlert("ACS_HOOKS/" + consumer)
	finishTainted(inGone, "in the partition whose consumer was deleted", broken)
	awaitReady(t, ep)

	// The state bucket deleted, under a tainted session.
	rebuilt := started(902)
	broken = time.Now()
	if err := js.DeleteKeyValue(r.ctx, "ACS_TURNSTATE"); err != nil {
		t.Fatal(err)
	}
	awaitAlert("ACS_TURNSTATE")
	finishTainted(rebuilt, "after the state bucket was deleted", broken)
	awaitReady(t, ep)

	// ACS_HOOKS deleted. What it held undecided would be lost, so the load
	// pauses and everything is decided first: the count below stays exact.
	load.pause(true)
	r.awaitAllDecided(load, 60*time.Second)
	old, err := js.Stream(r.ctx, "ACS_HOOKS")
	if err != nil {
		t.Fatal(err)
	}
	oldLast := old.CachedInfo().State.LastSeq
	broken = time.Now()
	if err := js.DeleteStream(r.ctx, "ACS_HOOKS"); err != nil {
		t.Fatal(err)
	}
	load.pause(false)
	awaitAlert("ACS_HOOKS")
	fresh := &chaosSession{id: sessionID(903)}
	r.step(fresh, 30*time.Second)
	hooks, err := js.Stream(r.ctx, "ACS_HOOKS")
	if err != nil {
		t.Fatal(err)
	}
	if first := hooks.CachedInfo().Config.FirstSeq; first <= oldLast {
		t.Errorf("the recreated ACS_HOOKS numbers from %d, not above the deleted one's last sequence %d", first, oldLast)
	}
	finishTainted(fresh, "after ACS_HOOKS was deleted", broken)
	awaitReady(t, ep)

	load.pause(true)
	n := r.awaitAllDecided(load, 60*time.Second)
	load.mu.Lock()
	failed := load.failed
	load.mu.Unlock()
	t.Logf("%d envelopes accepted under load, every one decided once; %d publishes failed while ACS_HOOKS was gone", n, failed)
}

// purgeKey purges one key of the state bucket through its stream, which
// the admin role may do (it may not write the bucket's keys).
func purgeKey(r *chaosRig, key string) error {
	kvStream, err := r.js.Stream(r.ctx, "KV_ACS_TURNSTATE")
	if err != nil {
		return err
	}
	return kvStream.Purge(r.ctx, jetstream.WithPurgeSubject("$KV.ACS_TURNSTATE."+key))
}

// assetOf reads the asset an operational alert names (its evidence).
func assetOf(finding []byte) string {
	var doc struct {
		Evidences []struct {
			Data struct {
				Asset string `json:"asset"`
			} `json:"data"`
		} `json:"evidences"`
	}
	if err := json.Unmarshal(finding, &doc); err != nil || len(doc.Evidences) == 0 {
		return ""
	}
	return doc.Evidences[0].Data.Asset
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("partition %q: %v", s, err)
	}
	return n
}
