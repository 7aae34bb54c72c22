package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
)

// loadReport is the part of `loadgen run --json` these tests read.
type loadReport struct {
	Published int64 `json:"envelopes_published"`
	Expected  struct {
		Decisions int64 `json:"decisions"`
		Denies    int64 `json:"denies"`
		Alerts    int64 `json:"alerts"`
	} `json:"expected"`
	Reconcile struct {
		OK                bool     `json:"ok"`
		Mismatches        int      `json:"mismatches"`
		DecisionsExpected int      `json:"decisions_expected"`
		DecisionsRead     int      `json:"decisions_read"`
		AlertsExpected    int      `json:"alerts_expected"`
		AlertsRead        int      `json:"alerts_read"`
		StatesChecked     int      `json:"states_checked"`
		FirstMismatches   []string `json:"first_mismatches"`
	} `json:"reconcile"`
}

// load runs loadgen against url; finish waits for its report.
type load struct {
	p *proc
}

// loadSessions is how many sessions loadgen has in flight, each with at
// most one envelope published and not yet stored.
const loadSessions = 150

func startLoad(t *testing.T, url string, rate int, d time.Duration) *load {
	t.Helper()
	return &load{p: start(t, "loadgen", "run", "--nats-url", url, "--rate", strconv.Itoa(rate),
		"--duration", d.String(), "--sessions", strconv.Itoa(loadSessions), "--baseline=false", "--settle", "120s", "--json")}
}

// awaitPublishing waits until ACS_HOOKS holds more than stored envelopes,
// read after a kill, plus one in flight per session: loadgen published
// after the read, so the kill came while it was still publishing. It fails
// the test if loadgen has stopped: a kill after the load proves nothing.
func (l *load) awaitPublishing(t *testing.T, js jetstream.JetStream, stored int) {
	t.Helper()
	testwait.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if n := count(t, js, "ACS_HOOKS"); n <= stored+loadSessions {
			return fmt.Errorf("ACS_HOOKS holds %d envelopes, %d at the kill: loadgen had stopped publishing, so the kill proves nothing", n, stored)
		}
		return nil
	})
}

// finish waits for loadgen to exit and checks its reconciliation, read
// from the streams and the bucket: every envelope has exactly its one
// expected decision, every expected alert is there once, and every
// session's counters are exact.
func (l *load) finish(t *testing.T) loadReport {
	t.Helper()
	code := l.p.wait(t, 4*time.Minute)
	var rep loadReport
	if err := json.Unmarshal([]byte(l.p.stdout.String()), &rep); err != nil {
		t.Fatalf("loadgen exit %d, report unreadable: %v\n%s", code, err, l.p.out)
	}
	r := rep.Reconcile
	t.Logf("loadgen: %d envelopes, %d decisions read (%d expected), %d denies and %d alerts expected, %d alerts read, %d session states checked",
		rep.Published, r.DecisionsRead, r.DecisionsExpected, rep.Expected.Denies, rep.Expected.Alerts, r.AlertsRead, r.StatesChecked)
	if code != 0 || !r.OK || r.Mismatches != 0 {
		t.Fatalf("loadgen exit %d, %d mismatches: %s", code, r.Mismatches, strings.Join(r.FirstMismatches, "; "))
	}
	if rep.Published == 0 || int64(r.DecisionsRead) != rep.Published || rep.Expected.Denies == 0 || r.AlertsRead == 0 || r.StatesChecked == 0 {
		t.Fatalf("the run proves nothing: %+v", rep)
	}
	return rep
}

// killer is the source of every random choice of a kill test (when to kill,
// whom), seeded by testSeed so a failure can be rerun with the same choices.
func killer(t *testing.T) *rand.Rand {
	t.Helper()
	seed := testSeed(t)
	return rand.New(rand.NewPCG(seed, seed))
}

// testSeed is TURNGUARD_TEST_SEED (decimal) if set, else one from the
// clock; it is logged either way.
func testSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("TURNGUARD_TEST_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("TURNGUARD_TEST_SEED: %v", err)
		}
	}
	t.Logf("seed %d (TURNGUARD_TEST_SEED to repeat)", seed)
	return seed
}

func pause(r *rand.Rand, from, to time.Duration) {
	time.Sleep(from + time.Duration(r.Int64N(int64(to-from))))
}

// TestKill9UnderLoad kills the processor with SIGKILL at random points of a
// loadgen run, three times, restarting it each time.
func TestKill9UnderLoad(t *testing.T) {
	url, _ := natsServer(t, t.TempDir())
	js := natstest.JetStream(t, connect(t, url))
	args := []string{"--nats-url", url, "--batch-size", "64"}
	p := startProcessor(t, args...)
	// 18000 envelopes over 20 s: the three kills, each after a pause of at
	// most 3 s and a restart, come well within it on a loaded machine too.
	l := startLoad(t, url, 900, 20*time.Second)
	r := killer(t)
	for i := range 3 {
		pause(r, time.Second, 3*time.Second)
		p.kill()
		stored := count(t, js, "ACS_HOOKS")
		t.Logf("SIGKILL %d with %d envelopes and %d decisions stored", i+1, stored, count(t, js, "ACS_DECISIONS"))
		l.awaitPublishing(t, js, stored)
		p = startProcessor(t, args...)
	}
	l.finish(t)
	checkExactlyOnce(t, js, count(t, js, "ACS_HOOKS"))
	p.stop(t)
}

// TestClusterNodeKill runs on a three-node cluster with R3 streams,
// consumers and bucket, and kills the node leading ACS_HOOKS mid-run,
// bringing it back a few seconds later.
func TestClusterNodeKill(t *testing.T) {
	c := natsCluster(t, 3)
	js := natstest.JetStream(t, connect(t, c.url()))
	p := startProcessor(t, "--nats-url", c.url(), "--replicas", "3")
	l := startLoad(t, c.url(), 600, 15*time.Second)
	r := killer(t)
	pause(r, 3*time.Second, 6*time.Second)
	leader := c.leaderOf(js, "ACS_HOOKS")
	c.kill(leader)
	t.Logf("killed %s, the ACS_HOOKS leader", c.names[leader])
	pause(r, 2*time.Second, 4*time.Second)
	c.restart(leader)
	l.finish(t)
	// Read back through a node that stayed up: the one that came back may
	// still be catching up and leave requests unanswered.
	survivor := natstest.JetStream(t, connect(t, c.urls[(leader+1)%len(c.urls)]))
	checkExactlyOnce(t, survivor, count(t, survivor, "ACS_HOOKS"))
	p.stop(t)
}

// TestInstancesShareAndOneDies runs two and three processor instances on
// one server: the partitions spread over them, and when one is killed the
// others take its partitions and what it left unacknowledged.
func TestInstancesShareAndOneDies(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d instances", n), func(t *testing.T) {
			url, _ := natsServer(t, t.TempDir())
			js := natstest.JetStream(t, connect(t, url))
			var ps []*proc
			var ids []string
			for i := range n {
				id := fmt.Sprintf("i%d", i+1)
				ids = append(ids, id)
				ps = append(ps, startProcessor(t, "--nats-url", url, "--partitions", "6", "--instance", id, "--member-ttl", "2s"))
			}
			awaitMembers(t, js, 6, ids...)
			l := startLoad(t, url, 1500, 10*time.Second)
			r := killer(t)
			pause(r, 2*time.Second, 5*time.Second)
			victim := r.IntN(n)
			ps[victim].kill()
			t.Logf("SIGKILL %s with %d decisions stored", ids[victim], count(t, js, "ACS_DECISIONS"))
			awaitMembers(t, js, 6, slices.Delete(slices.Clone(ids), victim, victim+1)...)
			l.finish(t)
			checkExactlyOnce(t, js, count(t, js, "ACS_HOOKS"))
		})
	}
}

// awaitMembers waits until ACS_PROCESSORS lists exactly ids and their
// partitions are all of them, each once, with none idle.
func awaitMembers(t *testing.T, js jetstream.JetStream, partitions int, ids ...string) {
	t.Helper()
	var last map[string][]int
	testwait.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		last = members(t, js)
		var got []string
		var owned []int
		for id, ps := range last {
			got = append(got, id)
			owned = append(owned, ps...)
			if len(ps) == 0 {
				owned = nil // an idle member: not settled yet
				break
			}
		}
		slices.Sort(got)
		slices.Sort(owned)
		if slices.Equal(got, ids) && len(owned) == partitions && len(slices.Compact(owned)) == partitions {
			t.Logf("partitions: %v", last)
			return nil
		}
		return fmt.Errorf("ACS_PROCESSORS never showed %v holding all %d partitions: %v", ids, partitions, last)
	})
}

func members(t *testing.T, js jetstream.JetStream) map[string][]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, "ACS_PROCESSORS")
	if err != nil {
		return nil
	}
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		return nil
	}
	out := map[string][]int{}
	for k := range keys.Keys() {
		e, err := kv.Get(ctx, k)
		if err != nil {
			continue
		}
		var m struct {
			ID   string `json:"id"`
			Owns []int  `json:"owns"`
		}
		// Records are sealed with the state key; a reader without it
		// takes the record as it stands.
		if json.Unmarshal(turnstate.RecordOf(e.Value()), &m) == nil {
			out[m.ID] = m.Owns
		}
	}
	return out
}
