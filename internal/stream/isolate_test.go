package stream_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
)

// turnEnvelope is a turnStart or turnEnd of session sid with a turn id of
// n bytes; i makes its request id unique.
func turnEnvelope(sid string, i int, start bool, n int) (string, []byte) {
	turnID := fmt.Sprintf("turn-%06d-", i/2) + strings.Repeat("x", n-12)
	method, payload := "steps/turnEnd", fmt.Sprintf(`{"turn_id":%q,"outcome":"completed"}`, turnID)
	if start {
		method, payload = "steps/turnStart", fmt.Sprintf(`{"turn_id":%q,"triggered_by":"user_message"}`, turnID)
	}
	rid := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
	body := fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"id":%q,"params":{"acs_version":"0.1.0","request_id":%q,"timestamp":"2026-12-02T10:00:00Z",`+
		`"metadata":{"agent_id":"a","session_id":%q,"turn_id":%q},"payload":%s}}`, method, rid, rid, sid, turnID, payload)
	return acs.InboundSubject("default", sid, acs.HookToken(method)), []byte(body)
}

// TestStateTooLargeIsIsolated fills one session's state past its bound
// with valid turns: each envelope that would push it over is refused
// (-32603 state_too_large), dead-lettered and alerted, the session keeps
// its last state that fitted, and the other session of the partition —
// the only partition — is decided all along.
func TestStateTooLargeIsIsolated(t *testing.T) {
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv)
	js := natstest.JetStream(t, nc)
	w := watch(t, nc)
	cfg := testConfig()
	cfg.Topology.Partitions = 1
	cfg.MaxValueBytes = 12 << 10
	rec := &recorder{decided: map[string]int{}, alerted: map[string]string{}}
	cfg.Observer = rec
	r := startProcessor(t, srv, cfg)
	waitForConsumers(t, js, 2)

	const big, small = "00000000-0000-4000-8000-00000000b001", "00000000-0000-4000-8000-00000000b002"
	var bigSeqs, smallSeqs []uint64
	for i := range 120 {
		subject, data := turnEnvelope(big, i, i%2 == 0, 200)
		bigSeqs = append(bigSeqs, natstest.Publish(t, js, subject, data))
		// The other session interleaves a third as many, all small.
		if j := len(smallSeqs); i%3 == 0 {
			subject, data = turnEnvelope(small, 1000+j, j%2 == 0, 16)
			smallSeqs = append(smallSeqs, natstest.Publish(t, js, subject, data))
		}
	}
	for _, seq := range smallSeqs {
		d, _ := w.await(t, seq, true, false)
		// Decided by the rules (its turn rate is denied after 30), never
		// refused for the other session's size.
		if got := d.Header.Get(acs.HdrDecision); got == "error" {
			t.Fatalf("the small session's seq %d was refused: %s", seq, d.Data)
		}
	}
	isolated := 0
	for _, seq := range bigSeqs {
		d, _ := w.await(t, seq, true, false)
		if d.Header.Get(acs.HdrDecision) != "error" {
			continue
		}
		isolated++
		if code, reason := d.Header.Get(acs.HdrErrorCode), d.Header.Get(acs.HdrErrorReason); code != "-32603" || reason != stream.ReasonStateTooLarge {
			t.Errorf("seq %d refused with %s %s, want -32603 %s", seq, code, reason, stream.ReasonStateTooLarge)
		}
		_, dl := w.await(t, seq, false, true)
		if dl.Header.Get(acs.HdrErrorReason) != stream.ReasonStateTooLarge {
			t.Errorf("seq %d: dead letter reason %q", seq, dl.Header.Get(acs.HdrErrorReason))
		}
	}
	if isolated == 0 {
		t.Fatal("no envelope of the growing session was refused: the bound was never reached")
	}
	// An isolation's decision goes out before the processor counts it and
	// tells the observer: wait for both, then require them exact below.
	if err := testwait.Wait(waitFor, 5*time.Millisecond, func() error {
		rec.mu.Lock()
		decided, refused := 0, len(rec.refused)
		for _, n := range rec.decided {
			decided += n
		}
		rec.mu.Unlock()
		if n := r.p.Stats().Isolated.Load(); n < uint64(isolated) || refused < isolated || decided < len(bigSeqs)+len(smallSeqs) {
			return fmt.Errorf("%d isolated, %d refusals and %d decisions observed", n, refused, decided)
		}
		return nil
	}); err != nil {
		t.Log(err)
	}
	if n := r.p.Stats().Isolated.Load(); n != uint64(isolated) {
		t.Errorf("Stats.Isolated = %d, want %d", n, isolated)
	}
	if err := r.p.Ready(); err != nil {
		t.Errorf("not ready after isolating: %v", err)
	}
	// The observer heard of each isolation once, as a refusal and an
	// error decision, and of every other decision once; nothing of the
	// attempts that failed.
	rec.mu.Lock()
	refused, decided, errs := 0, 0, rec.decided["turnStart/error"]+rec.decided["turnEnd/error"]
	for _, reason := range rec.refused {
		if reason == stream.ReasonStateTooLarge {
			refused++
		}
	}
	for _, n := range rec.decided {
		decided += n
	}
	rec.mu.Unlock()
	if refused != isolated || errs != isolated || decided != len(bigSeqs)+len(smallSeqs) {
		t.Errorf("observed %d state_too_large refusals, %d error decisions, %d decisions; want %d, %d, %d", refused, errs, decided, isolated, isolated, len(bigSeqs)+len(smallSeqs))
	}
	t.Logf("%d of %d envelopes of the growing session refused state_too_large", isolated, len(bigSeqs))
}

// TestIsolationIsNoRollback: an isolated envelope's refusal is stored with
// no state write, so the session's newest stored decision answers a
// sequence past what its state accounts for. A processor that loads the
// session afresh (here, after a restart) must not take that for a
// rolled-back state: no integrity failure, no rebuild, and the session's
// next envelope is decided from the state it kept.
func TestIsolationIsNoRollback(t *testing.T) {
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv)
	js := natstest.JetStream(t, nc)
	w := watch(t, nc)
	cfg := testConfig()
	cfg.Topology.Partitions = 1
	cfg.MaxValueBytes = 12 << 10
	first := startProcessor(t, srv, cfg)
	waitForConsumers(t, js, 2)

	const sid = "00000000-0000-4000-8000-00000000b003"
	isolatedAt := -1
	for i := 0; i < 200 && isolatedAt < 0; i++ {
		subject, data := turnEnvelope(sid, i, i%2 == 0, 200)
		d, _ := w.await(t, natstest.Publish(t, js, subject, data), true, false)
		if d.Header.Get(acs.HdrErrorReason) == stream.ReasonStateTooLarge {
			isolatedAt = i
		}
	}
	if isolatedAt < 0 {
		t.Fatal("the bound was never reached")
	}
	first.stop()
	second := startProcessor(t, srv, cfg)
	// The session's next envelope (under a request id of its own) is
	// decided from the state it kept: refused for its size again, or
	// decided, but never for a rebuilt state's sake.
	subject, data := turnEnvelope(sid, isolatedAt+1, isolatedAt%2 == 1, 200)
	data = []byte(strings.ReplaceAll(string(data), fmt.Sprintf("%012d", isolatedAt+1), "00000000ffff"))
	d, _ := w.await(t, natstest.Publish(t, js, subject, data), true, false)
	if reason := d.Header.Get(acs.HdrErrorReason); reason != "" && reason != stream.ReasonStateTooLarge {
		t.Errorf("the envelope after the isolated one was refused %s: %s", reason, d.Data)
	}
	st := second.p.Stats()
	if n := st.IntegrityFailures.Load(); n != 0 {
		t.Errorf("%d integrity failures after an isolation", n)
	}
	if n := st.Rebuilt.Load(); n != 0 {
		t.Errorf("%d sessions rebuilt after an isolation", n)
	}
}
