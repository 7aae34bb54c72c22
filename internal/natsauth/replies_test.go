package natsauth_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/natsauth"
)

// target is a turnguard subject a reply or a deliver subject must never
// reach, and how to tell: the stream that stores it, and a sentinel the
// processor writes there afterwards (once its ack is back, whatever was
// queued before it is stored too).
type target struct {
	subject  string
	stream   string
	sentinel func(ctx context.Context, proc *conn) error
}

func replyTargets() []target {
	kvPut := func(bucket string) func(ctx context.Context, proc *conn) error {
		return func(ctx context.Context, proc *conn) error {
			kv, err := proc.js.KeyValue(ctx, bucket)
			if err != nil {
				return err
			}
			_, err = kv.Put(ctx, "sentinel", []byte(`{}`))
			return err
		}
	}
	pub := func(subject string) func(ctx context.Context, proc *conn) error {
		return func(ctx context.Context, proc *conn) error {
			_, err := proc.js.Publish(ctx, subject, []byte(`{}`))
			return err
		}
	}
	return []target{
		{acs.KVSubject(acs.StateBucket, "beta.s1"), acs.KVStream(acs.StateBucket), kvPut(acs.StateBucket)},
		{acs.DecisionsPrefix + ".beta.s1", acs.DecisionsStream, pub(acs.DecisionsPrefix + ".sentinel.s")},
		{acs.AlertsPrefix + "._system.critical.member_forged", acs.AlertsStream, pub(acs.AlertsPrefix + ".sentinel.x")},
		{acs.KVSubject(acs.MembersBucket, "fake-1"), acs.KVStream(acs.MembersBucket), kvPut(acs.MembersBucket)},
		{acs.KVSubject(acs.HandshakeBucket, "beta.s1"), acs.KVStream(acs.HandshakeBucket), kvPut(acs.HandshakeBucket)},
		{acs.InboundPrefix + ".beta.s9.turnStart", acs.HooksStream, pub(acs.InboundPrefix + ".sentinel.s.turnStart")},
	}
}

// settle writes every target's sentinel and then checks that each target
// stream holds what it held before plus the sentinel: nothing that a
// reply or delivery could have put there.
func settle(t *testing.T, ctx context.Context, proc *conn, targets []target, before map[string]uint64, what string) {
	t.Helper()
	for _, tg := range targets {
		if err := tg.sentinel(ctx, proc); err != nil {
			t.Fatalf("sentinel on %s: %v", tg.stream, err)
		}
	}
	for _, tg := range targets {
		s, err := proc.js.Stream(ctx, tg.stream)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := s.CachedInfo().State.Msgs, before[tg.stream]+1; got != want {
			t.Errorf("%s: %s holds %d messages, want %d (before %d, and the sentinel): something was written through a reply or deliver subject", what, tg.stream, got, want, before[tg.stream])
		}
		before[tg.stream]++
	}
}

func counts(t *testing.T, ctx context.Context, proc *conn, targets []target) map[string]uint64 {
	t.Helper()
	// The HTTP endpoint creates the handshake bucket; there is none here.
	if _, err := proc.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: acs.HandshakeBucket}); err != nil {
		t.Fatal(err)
	}
	m := map[string]uint64{}
	for _, tg := range targets {
		s, err := proc.js.Stream(ctx, tg.stream)
		if err != nil {
			t.Fatal(err)
		}
		m[tg.stream] = s.CachedInfo().State.Msgs
	}
	return m
}

// TestAgentRepliesStayInItsAccount is issue 23's finding 1: an agent
// publishes its envelopes naming as reply subject a state key of another
// tenant, a decision, a critical alert, a membership record and a
// handshake record. JetStream's publish ack is the reply; before, it was
// stored wherever that named. Now the agent's account imports the hooks as
// a service, so the ack returns through the response mapping into the
// agent's own account, where none of those exist.
func TestAgentRepliesStayInItsAccount(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := newWorld(t)
	proc := connect(natsauth.User{Role: natsauth.RoleProcessor})
	acme := connect(natsauth.User{Role: natsauth.RoleAgent, Tenant: "acme"})
	targets := replyTargets()
	before := counts(t, ctx, proc, targets)
	hooks, err := proc.js.Stream(ctx, acs.HooksStream)
	if err != nil {
		t.Fatal(err)
	}
	hooksBefore := hooks.CachedInfo().State.Msgs

	for _, tg := range targets {
		if err := acme.nc.PublishRequest("acs.hooks.acme.s1.turnStart", tg.subject, []byte(`{}`)); err != nil {
			t.Fatalf("publish with reply %s: %v", tg.subject, err)
		}
	}
	// The agent's own acknowledgement still comes back to its inbox, and
	// comes after the ones above were sent.
	ack, err := acme.js.Publish(ctx, "acs.hooks.acme.s1.turnEnd", []byte(`{}`))
	if err != nil {
		t.Fatalf("the agent's own publish: %v", err)
	}
	if want := hooksBefore + uint64(len(targets)) + 1; ack.Sequence != want {
		t.Fatalf("ack sequence %d, want %d: the envelopes themselves are recorded", ack.Sequence, want)
	}
	before[acs.HooksStream] = ack.Sequence
	settle(t, ctx, proc, targets, before, "agent replies")
	select {
	case err := <-acme.errs:
		t.Fatalf("the agent's publishes were refused: %v", err)
	default:
	}
}

// TestSecurityCannotWriteThroughJetStream is issue 23's finding 2: the
// read-only security role created push consumers whose deliver subject was
// a turnguard subject (copying a stream into ACS_HOOKS, ACS_ALERTS or
// ACS_DECISIONS), and sent reads — a direct get of a member record above
// all — replied to turnguard subjects, keeping a dead member's record
// alive. Now its reads reply into its own account, and its consumer
// creates go through the processor's gateway, which refuses a deliver
// subject outside the security inbox.
func TestSecurityCannotWriteThroughJetStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := newWorld(t)
	proc := connect(natsauth.User{Role: natsauth.RoleProcessor})
	sec := connect(natsauth.User{Role: natsauth.RoleSecurity})
	targets := replyTargets()

	// Something to copy: a decision, an alert, a member record.
	for _, s := range []string{acs.DecisionsPrefix + ".acme.s1", acs.AlertsPrefix + ".acme.taint"} {
		if _, err := proc.js.Publish(ctx, s, []byte(`{"x":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	members, err := proc.js.KeyValue(ctx, acs.MembersBucket)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := members.Put(ctx, "p1", []byte(`{"id":"p1"}`))
	if err != nil {
		t.Fatal(err)
	}
	before := counts(t, ctx, proc, targets)

	// Push consumers delivering onto turnguard's subjects: refused.
	for _, tg := range targets {
		for _, stream := range []string{acs.DecisionsStream, acs.AlertsStream, acs.KVStream(acs.MembersBucket)} {
			for _, key := range []string{"deliver_subject", "DELIVER_SUBJECT", "Deliver_Subject"} {
				req, _ := json.Marshal(map[string]any{"stream_name": stream, "config": map[string]any{key: tg.subject, "ack_policy": "none"}})
				m, err := sec.nc.Request("$JS.API.CONSUMER.CREATE."+stream, req, 10*time.Second)
				if err != nil {
					t.Fatalf("consumer create on %s delivering to %s: %v", stream, tg.subject, err)
				}
				var resp struct {
					Error *struct{ Description string } `json:"error"`
				}
				if err := json.Unmarshal(m.Data, &resp); err != nil || resp.Error == nil {
					t.Errorf("security created a push consumer on %s delivering to %s (%s)", stream, tg.subject, key)
				}
			}
		}
	}

	// Reads replied to turnguard's subjects: the replies stay in the
	// security account.
	pull, err := sec.js.CreateConsumer(ctx, acs.DecisionsStream, jetstream.ConsumerConfig{AckPolicy: jetstream.AckNonePolicy, InactiveThreshold: time.Minute})
	if err != nil {
		t.Fatalf("security creates a pull consumer: %v", err)
	}
	pullName := pull.CachedInfo().Name
	for _, tg := range targets {
		for _, req := range []struct{ subject, body string }{
			{"$JS.API.DIRECT.GET." + acs.KVStream(acs.MembersBucket) + "." + acs.KVSubject(acs.MembersBucket, "p1"), ""},
			{"$JS.API.DIRECT.GET." + acs.DecisionsStream, `{"seq":1}`},
			{"$JS.API.STREAM.MSG.GET." + acs.AlertsStream, `{"seq":1}`},
			{"$JS.API.STREAM.INFO." + acs.DecisionsStream, ""},
			{"$JS.API.CONSUMER.INFO." + acs.DecisionsStream + "." + pullName, ""},
			{"$JS.API.CONSUMER.MSG.NEXT." + acs.DecisionsStream + "." + pullName, `{"batch":1,"no_wait":true}`},
			{"$JS.API.CONSUMER.CREATE." + acs.DecisionsStream, `{"stream_name":"` + acs.DecisionsStream + `","config":{"ack_policy":"none","inactive_threshold":1000000000}}`},
		} {
			if err := sec.nc.PublishRequest(req.subject, tg.subject, []byte(req.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A read of its own, replied to its inbox, comes back after those.
	if _, err := sec.js.Stream(ctx, acs.DecisionsStream); err != nil {
		t.Fatalf("security reads stream info: %v", err)
	}
	if _, err := pull.Next(jetstream.FetchMaxWait(10 * time.Second)); err != nil {
		t.Fatalf("security pulls a decision: %v", err)
	}
	if err := sec.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-sec.errs:
		t.Fatalf("the security role's reads were refused: %v", err)
	default:
	}
	settle(t, ctx, proc, targets, before, "security replies and deliveries")
	if e, err := members.Get(ctx, "p1"); err != nil || e.Revision() != rev {
		t.Fatalf("member record p1: %v, %v: written again by a reply", e, err)
	}
}
