package stream_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/statestore"
	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
)

// TestPurgedSessionIsRebuilt is issue 23's probe of purges through the
// stream API: a tainted session's state purged from the bucket's stream
// (no delete marker left) together with its decisions, or the state
// bucket's stream and ACS_DECISIONS purged whole, while ACS_HOOKS still
// holds the session's history. The session used to start afresh
// ([session_start_missing turn_implicit]) and its Bash call was allowed;
// it is rebuilt from that history now, the Bash call denied and the purge
// alerted as critical.
func TestPurgedSessionIsRebuilt(t *testing.T) {
	sid := examples.TaintSessionID
	key := acs.SessionKey("default", sid)
	purge := func(t *testing.T, js jetstream.JetStream, stream string, opts ...jetstream.StreamPurgeOpt) {
		t.Helper()
		s, err := js.Stream(context.Background(), stream)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Purge(context.Background(), opts...); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		purge  func(t *testing.T, js jetstream.JetStream)
		stream string // the whole-stream purge alerted ("" for none)
	}{
		{"the session's key and decisions", func(t *testing.T, js jetstream.JetStream) {
			purge(t, js, acs.KVStream(acs.StateBucket), jetstream.WithPurgeSubject("$KV."+acs.StateBucket+"."+key))
			purge(t, js, acs.DecisionsStream, jetstream.WithPurgeSubject(acs.DecisionSubject("default", sid)))
		}, ""},
		{"the state bucket and the decisions whole", func(t *testing.T, js jetstream.JetStream) {
			purge(t, js, acs.KVStream(acs.StateBucket))
			purge(t, js, acs.DecisionsStream)
		}, acs.DecisionsStream},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newIntegrityRig(t, nil)
			envs := examples.Taint(sid)
			r.send(t, sid, envs[:len(envs)-1])
			tc.purge(t, r.js)
			bash := r.send(t, sid, envs[len(envs)-1:])[0]
			checkTaintDeny(t, bash)
			// The call carries untrusted provenance of its own, so a blank
			// state denies it too: what tells is that the session still
			// has its start and its turns.
			if strings.Contains(string(bash.Data), "session_start_missing") {
				t.Fatalf("the Bash call was decided in a session started afresh:\n%s", bash.Data)
			}
			s, _, _, err := statestore.NewStore(r.kv, r.sealer).Load(context.Background(), key)
			if err != nil || s == nil || s.Envelopes != uint64(len(envs)) || s.Taints["untrusted_content"] == nil {
				t.Fatalf("stored state after the purge: %+v, %v", s, err)
			}
			r.awaitOp(t, stream.AlertStateIntegrity, map[string]any{"session_id": sid, "reason": stream.ReasonPurged, "action": "rebuilt_from_stream"})
			if n := r.proc.p.Stats().Rebuilt.Load(); n != 1 {
				t.Errorf("rebuilt %d, want 1", n)
			}
			if tc.stream != "" {
				r.awaitOp(t, stream.AlertStreamPurged, map[string]any{"stream": tc.stream})
			}
		})
	}
}

// TestNewSessionsCostNoRebuild: the look-up that tells a purged session
// from a new one finds nothing earlier of a new session, which starts with
// no rebuild, no alert and no integrity failure, in every partition.
func TestNewSessionsCostNoRebuild(t *testing.T) {
	r := newIntegrityRig(t, nil)
	r.proc.tampering = false
	for i := range 16 {
		sid := fmt.Sprintf("00000000-0000-4000-8000-0000000ae%03d", i)
		envs := examples.Session(sid)
		if d := r.send(t, sid, envs)[0]; d.Header.Get(acs.HdrDecision) != "allow" {
			t.Fatalf("new session %s: %q", sid, d.Header.Get(acs.HdrDecision))
		}
	}
	st := r.proc.p.Stats()
	if st.Rebuilt.Load() != 0 || st.IntegrityFailures.Load() != 0 {
		t.Fatalf("new sessions: %d rebuilt, %d integrity failures; want none", st.Rebuilt.Load(), st.IntegrityFailures.Load())
	}
	if d := r.ops.find(stream.AlertStateIntegrity, nil); d != nil {
		t.Fatalf("an integrity alert for new sessions: %v", d)
	}
}

// TestPurgedSubagentStillTaintsItsParent: the parent's allowed
// subagentStart creates the subagent's state, so a subagent the parent
// remembers with no state while ACS_HOOKS holds its envelopes was purged
// (or expired): the stop cannot tell what it read, and counts it as
// carrying every taint instead of as a subagent that read nothing.
func TestPurgedSubagentStillTaintsItsParent(t *testing.T) {
	r := newIntegrityRig(t, nil)
	built, _ := probe(t, 0, testConfig().Topology.Partitions)
	msgs := built.Messages
	if len(msgs) != 8 {
		t.Fatalf("the probe has %d steps, want 8", len(msgs))
	}
	for _, m := range msgs[:6] {
		r.w.await(t, natstest.Publish(t, r.js, m.Subject, m.Data), true, false)
	}
	child := msgs[5]
	purge := func(stream, subject string) {
		s, err := r.js.Stream(context.Background(), stream)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Purge(context.Background(), jetstream.WithPurgeSubject(subject)); err != nil {
			t.Fatal(err)
		}
	}
	purge(acs.KVStream(acs.StateBucket), "$KV."+acs.StateBucket+"."+acs.SessionKey(child.Tenant, child.SessionID))
	r.w.await(t, natstest.Publish(t, r.js, msgs[6].Subject, msgs[6].Data), true, false)
	bash := r.w.decision(t, natstest.Publish(t, r.js, msgs[7].Subject, msgs[7].Data))
	if got := bash.Header.Get(acs.HdrDecision); got != "deny" {
		t.Fatalf("the parent's Bash after its purged subagent's stop: %q, want deny\n%s", got, bash.Data)
	}
}
