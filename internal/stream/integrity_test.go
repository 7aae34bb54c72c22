package stream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/alert"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/internal/ruletest"
	"github.com/turnguard/turnguard/internal/scenario"
	"github.com/turnguard/turnguard/internal/statestore"
	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/internal/testkit/guardiantest"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	rulepack "github.com/turnguard/turnguard/rules"
)

// integrityRig is an embedded server and a processor with a known state
// key, so that a test can write values as a processor, as an attacker with
// write access to the bucket, or as a processor holding another key.
type integrityRig struct {
	js     jetstream.JetStream
	kv     jetstream.KeyValue
	hooks  jetstream.Stream
	nc     *nats.Conn
	w      *watcher
	proc   *running
	key    []byte
	sealer *turnstate.Sealer
	// ops collects turnguard's operational alerts by id.
	ops *opsWatcher
}

func newIntegrityRig(t *testing.T, rs *policy.Set) *integrityRig {
	t.Helper()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv)
	js := natstest.JetStream(t, nc)
	r := &integrityRig{js: js, nc: nc, key: bytes.Repeat([]byte{7}, turnstate.StateKeySize)}
	var err error
	if r.sealer, err = turnstate.NewSealer(r.key); err != nil {
		t.Fatal(err)
	}
	r.w = watch(t, nc)
	r.ops = watchOps(t, nc)
	cfg := testConfig()
	cfg.StateKey = r.key
	if rs == nil {
		rs = guardiantest.DefaultRules(t)
	}
	r.proc = startProcessorWith(t, srv, cfg, rs)
	r.proc.tampering = true
	waitForConsumers(t, js, cfg.Topology.Partitions+1)
	ctx := context.Background()
	if r.kv, err = js.KeyValue(ctx, acs.StateBucket); err != nil {
		t.Fatal(err)
	}
	if r.hooks, err = js.Stream(ctx, acs.HooksStream); err != nil {
		t.Fatal(err)
	}
	return r
}

// send publishes envelopes of sid and waits for each one's decision.
func (r *integrityRig) send(t *testing.T, sid string, envs []examples.Envelope) []*nats.Msg {
	t.Helper()
	var out []*nats.Msg
	for _, e := range envs {
		seq := natstest.Publish(t, r.js, e.Subject("default", sid), e.Data)
		d, _ := r.w.await(t, seq, true, false)
		out = append(out, d)
	}
	return out
}

// awaitOp waits for an operational alert whose evidence has every field
// of want.
func (r *integrityRig) awaitOp(t *testing.T, id string, want map[string]any) map[string]any {
	t.Helper()
	return r.ops.await(t, id, want)
}

// value is the stored value of a session.
func (r *integrityRig) value(t *testing.T, sid string) jetstream.KeyValueEntry {
	t.Helper()
	e, err := r.kv.Get(context.Background(), acs.SessionKey("default", sid))
	if err != nil {
		t.Fatalf("state of %s: %v", sid, err)
	}
	return e
}

// recordJSON is the JSON of a stored value's record, read without the key.
func recordJSON(t *testing.T, value []byte) []byte {
	t.Helper()
	rec, err := statestore.RecordJSON(value)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// withoutTaints is the record of a stored value with its taints removed:
// attack (a) of issue 11.
func withoutTaints(t *testing.T, value []byte) []byte {
	t.Helper()
	var rec map[string]any
	if err := json.Unmarshal(recordJSON(t, value), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["taints"] == nil {
		t.Fatal("the stored state has no taints; the test proves nothing")
	}
	delete(rec, "taints")
	out, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTamperedStateIsRebuilt removes the taint the web page set from the
// taint example's stored state, in every way someone without the state key
// can, before the shell call: the call must still be denied, from a state
// rebuilt from ACS_HOOKS, and the failure alerted and counted.
func TestTamperedStateIsRebuilt(t *testing.T) {
	sid := examples.TaintSessionID
	other := bytes.Repeat([]byte{9}, turnstate.StateKeySize)
	for _, tc := range []struct {
		name   string
		reason string
		forge  func(t *testing.T, r *integrityRig, stored []byte) []byte
	}{
		{"taints removed, plain JSON (as earlier versions stored it)", turnstate.ReasonNotSealed, func(t *testing.T, _ *integrityRig, stored []byte) []byte {
			return withoutTaints(t, stored)
		}},
		{"taints removed, MAC kept", turnstate.ReasonBadMAC, func(t *testing.T, _ *integrityRig, stored []byte) []byte {
			mac, _, ok := turnstate.Unseal(stored)
			if !ok {
				t.Fatalf("the stored value is not sealed: %s", stored)
			}
			return []byte(`{"mac":"` + string(mac) + `","record":` + string(withoutTaints(t, stored)) + `}`)
		}},
		{"taints removed, sealed with another key", turnstate.ReasonBadMAC, func(t *testing.T, _ *integrityRig, stored []byte) []byte {
			s, err := turnstate.NewSealer(other)
			if err != nil {
				t.Fatal(err)
			}
			return s.Seal(turnstate.KindSession, acs.SessionKey("default", sid), withoutTaints(t, stored))
		}},
		{"another session's valid value moved here", turnstate.ReasonBadMAC, func(t *testing.T, r *integrityRig, _ []byte) []byte {
			clean := "00000000-0000-4000-8000-00000000c1ea"
			r.send(t, clean, examples.Session(clean)[:5])
			return r.value(t, clean).Value()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newIntegrityRig(t, nil)
			envs := examples.Taint(sid)
			r.send(t, sid, envs[:len(envs)-1])
			stored := r.value(t, sid)
			rev, err := r.kv.Put(context.Background(), acs.SessionKey("default", sid), tc.forge(t, r, stored.Value()))
			if err != nil {
				t.Fatal(err)
			}
			bash := r.send(t, sid, envs[len(envs)-1:])[0]
			checkTaintDeny(t, bash)
			r.awaitOp(t, stream.AlertStateIntegrity, map[string]any{"session_id": sid, "tenant": "default",
				"revision": float64(rev), "reason": tc.reason, "action": "rebuilt_from_stream", "kind": "session"})
			st := r.proc.p.Stats()
			if st.IntegrityFailures.Load() != 1 || st.Rebuilt.Load() != 1 {
				t.Errorf("integrity failures %d, rebuilt %d; want 1, 1", st.IntegrityFailures.Load(), st.Rebuilt.Load())
			}
			// The rebuilt state replaced the forged value, sealed again,
			// with everything the session saw.
			after := r.value(t, sid)
			if after.Revision() <= rev {
				t.Fatalf("the forged value at revision %d is still stored", rev)
			}
			s, _, _, err := statestore.NewStore(r.kv, r.sealer).Load(context.Background(), acs.SessionKey("default", sid))
			if err != nil {
				t.Fatal(err)
			}
			if s.Envelopes != uint64(len(envs)) || s.Taints["untrusted_content"] == nil || s.Decisions[acs.Deny] != 1 {
				t.Errorf("rebuilt state: %d envelopes, taints %v, decisions %v", s.Envelopes, s.Taints, s.Decisions)
			}
		})
	}
}

// forgedOutbox is a record of a session nothing was applied to, with an
// outbox that publishes a decision for another session, a critical alert
// (of alertTenant) and a message to a subject that is not turnguard's at
// all: attack (b).
func forgedOutbox(t *testing.T, sid, victim, alertTenant string) []byte {
	t.Helper()
	rec := map[string]any{
		"tenant": "default", "session_id": sid, "status": "open", "open_turns": []any{},
		"outbox": map[string]any{"written": time.Now().UTC(), "msgs": []map[string]any{
			{"subject": acs.DecisionSubject("default", victim), "data": []byte(`{"jsonrpc":"2.0","id":"x","result":{"decision":"allow"}}`),
				"header": map[string][]string{acs.HdrStreamSeq: {"1"}, acs.HdrMsgID: {"forged-decision"}}},
			{"subject": alert.Subject(alertTenant, "critical", "FAKE-001"), "data": []byte(`{"message":"fake"}`),
				"header": map[string][]string{acs.HdrMsgID: {"forged-alert"}}},
			{"subject": "elsewhere.entirely", "data": []byte("relay me")},
		}},
	}
	out, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// forgedSubjects subscribes to every subject forgedOutbox publishes to and
// to sid's decisions, all into one channel: the connection puts messages
// in it in the order the server sent them, which for one publisher (the
// processor) is the order they were published in.
func forgedSubjects(t *testing.T, nc *nats.Conn, sid, victim, alertTenant string) *forgedWatch {
	t.Helper()
	w := &forgedWatch{msgs: make(chan *nats.Msg, 64), decision: acs.DecisionSubject("default", sid), alertTenant: alertTenant}
	for _, subj := range []string{acs.DecisionSubject("default", victim), alert.Subject(alertTenant, "critical", "FAKE-001"), "elsewhere.>", w.decision} {
		s, err := nc.ChanSubscribe(subj, w.msgs)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Unsubscribe() })
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return w
}

type forgedWatch struct {
	msgs chan *nats.Msg
	// decision is the subject of the session's decisions.
	decision    string
	alertTenant string
}

// TestForgedOutboxIsNotPublished stores a forged outbox under a session's
// key without a valid MAC: when the session's next envelope loads it,
// nothing of it goes out, and the session is decided from its history.
func TestForgedOutboxIsNotPublished(t *testing.T) {
	victim := "00000000-0000-4000-8000-0000000000ff"
	for _, tc := range []struct {
		name   string
		reason string
		seal   func(r *integrityRig, key string, rec []byte) []byte
	}{
		{"no MAC", turnstate.ReasonNotSealed, func(_ *integrityRig, _ string, rec []byte) []byte { return rec }},
		{"invalid MAC", turnstate.ReasonBadMAC, func(_ *integrityRig, _ string, rec []byte) []byte {
			return []byte(`{"mac":"` + string(bytes.Repeat([]byte("ab"), 32)) + `","record":` + string(rec) + `}`)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newIntegrityRig(t, nil)
			sid := "00000000-0000-4000-8000-0000000000aa"
			forged := forgedSubjects(t, r.nc, sid, victim, "default")
			key := acs.SessionKey("default", sid)
			if _, err := r.kv.Put(context.Background(), key, tc.seal(r, key, forgedOutbox(t, sid, victim, "default"))); err != nil {
				t.Fatal(err)
			}
			d := r.send(t, sid, examples.Session(sid)[:1])[0]
			if got := d.Header.Get(acs.HdrDecision); got != "allow" {
				t.Errorf("sessionStart after the forgery: %s\n%s", got, d.Data)
			}
			r.awaitOp(t, stream.AlertStateIntegrity, map[string]any{"session_id": sid, "reason": tc.reason})
			checkNothingForged(t, r, forged, victim)
		})
	}
}

// checkNothingForged requires that nothing reached the forged subjects,
// live or in the streams. A forged publication would go out before the
// decision of the session's envelope, from the same connection, so live it
// would come through before that decision does: no wait for an absence.
func checkNothingForged(t *testing.T, r *integrityRig, forged *forgedWatch, victim string) {
	t.Helper()
	timeout := time.After(waitFor)
live:
	for {
		select {
		case m := <-forged.msgs:
			if m.Subject == forged.decision {
				break live
			}
			t.Errorf("a forged publication went out on %s", m.Subject)
		case <-timeout:
			t.Fatalf("the session's decision never came through on %s", forged.decision)
		}
	}
	ctx := context.Background()
	for name, subj := range map[string]string{acs.DecisionsStream: acs.DecisionSubject("default", victim), acs.AlertsStream: alert.Subject(forged.alertTenant, "critical", "FAKE-001")} {
		s, err := r.js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetLastMsgForSubject(ctx, subj); err == nil {
			t.Errorf("%s holds a forged message on %s", name, subj)
		}
	}
}

// TestOutboxAllowList: even a verified outbox — written with the state
// key, as only a processor (or a leaked key) can — publishes only to the
// session's own output subjects: its own decision subject, alerts and dead
// letters of its own tenant.
func TestOutboxAllowList(t *testing.T) {
	r := newIntegrityRig(t, nil)
	victim := "00000000-0000-4000-8000-0000000000ff"
	sid := "00000000-0000-4000-8000-0000000000bb"
	forged := forgedSubjects(t, r.nc, sid, victim, "othertenant")
	key := acs.SessionKey("default", sid)
	if _, err := r.kv.Put(context.Background(), key, r.sealer.Seal(turnstate.KindSession, key, forgedOutbox(t, sid, victim, "othertenant"))); err != nil {
		t.Fatal(err)
	}
	r.send(t, sid, examples.Session(sid)[:1])
	r.awaitOp(t, stream.AlertOutboxRefused, map[string]any{"session_id": sid})
	checkNothingForged(t, r, forged, victim)
	st := r.proc.p.Stats()
	if st.OutboxRefused.Load() != 3 || st.IntegrityFailures.Load() != 0 {
		t.Errorf("outbox refused %d, integrity failures %d; want 3, 0", st.OutboxRefused.Load(), st.IntegrityFailures.Load())
	}
}

// TestTamperedStateWithoutHistoryIsRefused: when ACS_HOOKS no longer holds
// the session's beginning, a state that does not verify cannot be rebuilt,
// and the session's steps are refused (-32603, dead-lettered) rather than
// decided from a state nobody can vouch for.
func TestTamperedStateWithoutHistoryIsRefused(t *testing.T) {
	r := newIntegrityRig(t, nil)
	sid := examples.TaintSessionID
	envs := examples.Taint(sid)
	r.send(t, sid, envs[:len(envs)-1])
	ctx := context.Background()
	// The session's sessionStart is gone, as stream limits would drop it.
	first, err := r.hooks.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.hooks.DeleteMsg(ctx, first.Sequence); err != nil {
		t.Fatal(err)
	}
	stored := r.value(t, sid)
	rev, err := r.kv.Put(ctx, acs.SessionKey("default", sid), withoutTaints(t, stored.Value()))
	if err != nil {
		t.Fatal(err)
	}
	seq := natstest.Publish(t, r.js, envs[len(envs)-1].Subject("default", sid), envs[len(envs)-1].Data)
	d, dead := r.w.await(t, seq, true, true)
	if code := d.Header.Get(acs.HdrErrorCode); code != strconv.Itoa(int(acs.CodeInternalError)) || d.Header.Get(acs.HdrErrorReason) != stream.ReasonStateUnverifiable {
		t.Errorf("decision %s %s %s, want error -32603 %s\n%s", d.Header.Get(acs.HdrDecision), code, d.Header.Get(acs.HdrErrorReason), stream.ReasonStateUnverifiable, d.Data)
	}
	if dead.Header.Get(acs.HdrErrorReason) != stream.ReasonStateUnverifiable {
		t.Errorf("dead letter reason %q", dead.Header.Get(acs.HdrErrorReason))
	}
	r.awaitOp(t, stream.AlertStateIntegrity, map[string]any{"session_id": sid, "revision": float64(rev), "action": "steps_refused"})
	if n := r.proc.p.Stats().Unverifiable.Load(); n != 1 {
		t.Errorf("unverifiable %d, want 1", n)
	}
	if after := r.value(t, sid); after.Revision() != rev {
		t.Errorf("the unverifiable value was replaced (revision %d → %d)", rev, after.Revision())
	}
}

// TestTamperedAgentStateIsReset: an agent-keyed count whose stored value
// does not verify is reset, written over the forged revision, and alerted.
func TestTamperedAgentStateIsReset(t *testing.T) {
	rs, err := rulepack.Load("../ruletest/testdata/agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := newIntegrityRig(t, rs)
	ctx := context.Background()
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	call := func(i int) *nats.Msg {
		sid := "00000000-0000-4000-8000-0000000000" + strconv.Itoa(10+i)
		env := `{"jsonrpc":"2.0","method":"steps/toolCallRequest","id":1,"params":{"acs_version":"0.1.0","request_id":"00000000-0000-4000-8000-00000000aa` + strconv.Itoa(10+i) +
			`","timestamp":"` + t0.Add(time.Duration(i)*time.Second).Format(time.RFC3339) + `","metadata":{"agent_id":"shared-agent","session_id":"` + sid + `"},"payload":{"tool":{"name":"t"},"arguments":{}}}}`
		seq := natstest.Publish(t, r.js, acs.InboundSubject("default", sid, "toolCallRequest"), []byte(env))
		d, _ := r.w.await(t, seq, true, false)
		return d
	}
	call(0)
	akey := turnstate.AgentKey("default", "shared-agent")
	rev, err := r.kv.Put(ctx, akey, []byte(`{"tenant":"default","agent_id":"shared-agent"}`))
	if err != nil {
		t.Fatal(err)
	}
	call(1)
	r.awaitOp(t, stream.AlertStateIntegrity, map[string]any{"kind": "agent", "key": akey, "revision": float64(rev), "action": "reset"})
	a, arev, err := statestore.NewStore(r.kv, r.sealer).LoadAgent(ctx, akey)
	if err != nil || arev <= rev || a == nil {
		t.Fatalf("agent state after the reset: %v at %d (%v)", a, arev, err)
	}
}

// TestRolledBackStateIsRebuilt puts back a valid earlier value of the
// session — sealed by the processor itself, from before the web page
// tainted it: the MAC verifies, but the value is older than the decisions
// already published, so it is rebuilt all the same.
func TestRolledBackStateIsRebuilt(t *testing.T) {
	r := newIntegrityRig(t, nil)
	sid := examples.TaintSessionID
	envs := examples.Taint(sid)
	r.send(t, sid, envs[:2])
	old := r.value(t, sid).Value()
	r.send(t, sid, envs[2:len(envs)-1])
	rev, err := r.kv.Put(context.Background(), acs.SessionKey("default", sid), old)
	if err != nil {
		t.Fatal(err)
	}
	bash := r.send(t, sid, envs[len(envs)-1:])[0]
	checkTaintDeny(t, bash)
	r.awaitOp(t, stream.AlertStateIntegrity, map[string]any{"session_id": sid, "revision": float64(rev),
		"reason": turnstate.ReasonRolledBack, "action": "rebuilt_from_stream"})
}

// checkTaintDeny requires the Bash call's decision to be the taint rule's
// deny, from a state with its turns in order: a deny for a protocol
// violation (a state that lost its turns) would prove nothing.
func checkTaintDeny(t *testing.T, d *nats.Msg) {
	t.Helper()
	var resp struct {
		Result struct {
			Decision    string   `json:"decision"`
			ReasonCodes []string `json:"reason_codes"`
		} `json:"result"`
	}
	if err := json.Unmarshal(d.Data, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Result.Decision != "deny" || !slices.Contains(resp.Result.ReasonCodes, "untrusted_into_consequential") ||
		slices.Contains(resp.Result.ReasonCodes, turnstate.TurnIDMismatch) {
		t.Fatalf("the tainted Bash call: %s %v, want the taint rule's deny\n%s", resp.Result.Decision, resp.Result.ReasonCodes, d.Data)
	}
}

// TestTamperedSubagentIsRebuiltWithItsParent tampers a subagent's state
// before its first turn, which names the parent's spawning turn: the
// rebuild must replay the parent's subagentStart too, or the turn would be
// refused as naming an unknown parent. Every decision stays byte for byte
// the pure core's.
func TestTamperedSubagentIsRebuiltWithItsParent(t *testing.T) {
	sc, built := loadScenario(t, "subagent")
	pure := ruletest.Run(guardiantest.Pure(t), guardiantest.DefaultRules(t), sc)
	r := newIntegrityRig(t, nil)
	child := sc.SessionID("child")
	tampered := false
	decideAsCore(t, r, built, pure, func(i int, m scenario.Message) {
		if !tampered && m.SessionID == child && i > 0 && built.Messages[i-1].SessionID == child {
			// The child's sessionStart is applied; its link to the parent
			// is what the forgery drops.
			forgeWithout(t, r, acs.SessionKey(m.Tenant, child), "parent")
			tampered = true
		}
	})
	if !tampered {
		t.Fatal("the scenario has no second step of the child; the test proves nothing")
	}
	r.awaitOp(t, stream.AlertStateIntegrity, map[string]any{"session_id": child, "action": "rebuilt_from_stream"})
	if n := r.proc.p.Stats().Rebuilt.Load(); n != 1 {
		t.Errorf("rebuilt %d, want 1", n)
	}
}

// TestTamperedResumedSubagentIsRebuiltWithEverySpawner tampers a subagent
// that a second session spawned again inside its window: the rebuild must
// replay both spawners, or the subagent would lose the second spawn's
// taint and its deploy would pass. Every decision stays the pure core's.
func TestTamperedResumedSubagentIsRebuiltWithEverySpawner(t *testing.T) {
	sc, built := loadScenario(t, "subagent-resumed")
	pure := ruletest.Run(guardiantest.Pure(t), guardiantest.DefaultRules(t), sc)
	r := newIntegrityRig(t, nil)
	child := sc.SessionID("child")
	last := len(built.Messages) - 1
	if built.Messages[last].SessionID != child {
		t.Fatal("the scenario's last step is not the subagent's; the test proves nothing")
	}
	decideAsCore(t, r, built, pure, func(i int, m scenario.Message) {
		if i == last {
			// Its taint is what the forgery drops.
			forgeWithout(t, r, acs.SessionKey(m.Tenant, child), "taints")
		}
	})
	r.awaitOp(t, stream.AlertStateIntegrity, map[string]any{"session_id": child, "action": "rebuilt_from_stream"})
}

// TestTamperedParentOfResumedSubagentIsRebuiltWithItsSpawnGraph tampers
// the session that spawned a subagent another session later resumed
// inside its window: the rebuild must replay that other session too (the
// whole spawn graph, as replay does), or the subagent's stop would find
// it clean and the parent's deploy would pass.
func TestTamperedParentOfResumedSubagentIsRebuiltWithItsSpawnGraph(t *testing.T) {
	sc, built := loadScenario(t, "subagent-stop-resumed")
	pure := ruletest.Run(guardiantest.Pure(t), guardiantest.DefaultRules(t), sc)
	r := newIntegrityRig(t, nil)
	main := sc.SessionID("main")
	last := len(built.Messages) - 1
	if built.Messages[last].SessionID != main || pure.Outcomes[last].Response == nil {
		t.Fatal("the scenario's last step is not the main session's decided call; the test proves nothing")
	}
	decideAsCore(t, r, built, pure, func(i int, m scenario.Message) {
		if i == last {
			// Its taint, from the subagent's stop, is what the forgery drops.
			forgeWithout(t, r, acs.SessionKey(m.Tenant, main), "taints")
		}
	})
	r.awaitOp(t, stream.AlertStateIntegrity, map[string]any{"session_id": main, "action": "rebuilt_from_stream"})
}

// decideAsCore publishes the scenario's messages one at a time, calling
// before with each first, and checks every decision is byte for byte the
// pure core's.
func decideAsCore(t *testing.T, r *integrityRig, built scenario.Built, pure ruletest.Result, before func(i int, m scenario.Message)) {
	t.Helper()
	for i, m := range built.Messages {
		before(i, m)
		seq := natstest.Publish(t, r.js, m.Subject, m.Data)
		if m.Expect.Decision == "none" {
			continue
		}
		d, _ := r.w.await(t, seq, true, m.Expect.DeadLetter)
		if raw, _ := acs.Canonical(pure.Outcomes[i].Response); string(raw) != string(d.Data) {
			t.Errorf("step %d: the processor decided\n%s\nthe pure core\n%s", i+1, d.Data, raw)
		}
	}
}

// forgeWithout rewrites the session state at key without field, as an
// unsigned value: a forgery that drops it.
func forgeWithout(t *testing.T, r *integrityRig, key, field string) {
	t.Helper()
	e, err := r.kv.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(recordJSON(t, e.Value()), &rec); err != nil || rec[field] == nil {
		t.Fatalf("state %s without %s (%v): %s", key, field, err, e.Value())
	}
	delete(rec, field)
	forged, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.kv.Put(context.Background(), key, forged); err != nil {
		t.Fatal(err)
	}
}

// TestDeletedStateIsRebuilt: `nats kv del` or `kv purge` of one session's
// key used to wedge its whole partition (every write expected the key
// absent and failed against the marker) and, once that was fixed, would
// have let the session start blank — its taint gone. Now the marker's
// revision fences the rebuilt state: the tainted call is still denied, the
// deletion alerted, and the partition's other sessions decided. A purge of
// the whole bucket leaves no marker; sessions whose decisions are stored
// are rebuilt silently (as after expiry).
func TestDeletedStateIsRebuilt(t *testing.T) {
	sid := examples.TaintSessionID
	for _, tc := range []struct {
		name   string
		remove func(t *testing.T, r *integrityRig, key string)
		alert  bool
	}{
		{"kv del", func(t *testing.T, r *integrityRig, key string) {
			if err := r.kv.Delete(context.Background(), key); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"kv purge of the key", func(t *testing.T, r *integrityRig, key string) {
			if err := r.kv.Purge(context.Background(), key); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"purge of the whole bucket", func(t *testing.T, r *integrityRig, _ string) {
			st, err := r.js.Stream(context.Background(), "KV_"+acs.StateBucket)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Purge(context.Background()); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newIntegrityRig(t, nil)
			envs := examples.Taint(sid)
			r.send(t, sid, envs[:len(envs)-1])
			key := acs.SessionKey("default", sid)
			tc.remove(t, r, key)
			bash := r.send(t, sid, envs[len(envs)-1:])[0]
			checkTaintDeny(t, bash)
			if tc.alert {
				r.awaitOp(t, stream.AlertStateIntegrity, map[string]any{"session_id": sid, "reason": turnstate.ReasonDeleted, "action": "rebuilt_from_stream"})
			}
			if st := r.proc.p.Stats(); st.Rebuilt.Load() != 1 {
				t.Errorf("rebuilt %d, want 1", st.Rebuilt.Load())
			}
			s, _, _, err := statestore.NewStore(r.kv, r.sealer).Load(context.Background(), key)
			if err != nil || s == nil || s.Envelopes != uint64(len(envs)) || s.Taints["untrusted_content"] == nil {
				t.Fatalf("stored state after the rebuild: %+v, %v", s, err)
			}
			// Another session of every partition is still decided.
			for i := range 8 {
				other := fmt.Sprintf("00000000-0000-4000-8000-0000000de1%02d", i)
				if d := r.send(t, other, examples.Session(other)[:1])[0]; d.Header.Get(acs.HdrDecision) != "allow" {
					t.Fatalf("session %s after the deletion: %q", other, d.Header.Get(acs.HdrDecision))
				}
			}
		})
	}
}

// A deleted session whose history is gone starts afresh: deleting the key
// is how an operator clears a session that cannot be rebuilt.
func TestDeletedStateWithoutHistoryStartsAfresh(t *testing.T) {
	r := newIntegrityRig(t, nil)
	sid := examples.TaintSessionID
	envs := examples.Taint(sid)
	r.send(t, sid, envs[:2])
	ctx := context.Background()
	// The session's beginning leaves the stream.
	if err := r.hooks.DeleteMsg(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := r.kv.Delete(ctx, acs.SessionKey("default", sid)); err != nil {
		t.Fatal(err)
	}
	d := r.send(t, sid, envs[2:3])[0]
	if d.Header.Get(acs.HdrDecision) == "error" && d.Header.Get(acs.HdrErrorReason) == stream.ReasonStateUnverifiable {
		t.Fatalf("the deleted session's step was refused: %v", d.Header)
	}
	r.awaitOp(t, stream.AlertStateIntegrity, map[string]any{"session_id": sid, "reason": turnstate.ReasonDeleted, "action": "started_afresh"})
}
