package topology_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
	"github.com/turnguard/turnguard/internal/topology"
)

func TestValidateRetention(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*topology.Topology)
		wantErr string
	}{
		{"defaults", func(*topology.Topology) {}, ""},
		{"everything unlimited", func(tp *topology.Topology) {
			tp.HooksRetention, tp.DecisionsRetention, tp.AlertsRetention, tp.DLQRetention = topology.Retention{}, topology.Retention{}, topology.Retention{}, topology.Retention{}
		}, ""},
		{"byte limits", func(tp *topology.Topology) {
			tp.HooksRetention.MaxBytes, tp.DLQRetention.MaxBytes = 10<<30, topology.MinRetentionBytes
		}, ""},
		{"hooks age equal to the session TTL", func(tp *topology.Topology) { tp.HooksRetention.MaxAge = tp.SessionTTL }, ""},
		{"hooks age below the session TTL", func(tp *topology.Topology) { tp.HooksRetention.MaxAge = time.Hour },
			"ACS_HOOKS max age 1h0m0s is shorter than the session TTL 24h0m0s"},
		{"hooks age below its duplicate window", func(tp *topology.Topology) {
			tp.SessionTTL, tp.HooksRetention.MaxAge = time.Minute, time.Minute
		}, "ACS_HOOKS max age 1m0s is shorter than its duplicate window 2m0s"},
		{"decisions age below the session TTL", func(tp *topology.Topology) { tp.DecisionsRetention.MaxAge = 23 * time.Hour },
			"ACS_DECISIONS max age 23h0m0s is shorter than the session TTL"},
		{"decisions age below its duplicate window", func(tp *topology.Topology) {
			tp.SessionTTL, tp.DecisionDedupWindow, tp.DecisionsRetention.MaxAge = time.Minute, time.Hour, 30*time.Minute
		}, "ACS_DECISIONS max age 30m0s is shorter than its duplicate window 1h0m0s"},
		{"alerts age below its duplicate window", func(tp *topology.Topology) { tp.AlertsRetention.MaxAge = 5 * time.Minute },
			"ACS_ALERTS max age 5m0s is shorter than its duplicate window 10m0s"},
		{"alerts age short but within its window", func(tp *topology.Topology) {
			tp.DecisionDedupWindow, tp.AlertsRetention.MaxAge = time.Second, 2*time.Second
		}, ""},
		{"dlq age below its duplicate window", func(tp *topology.Topology) { tp.DLQRetention.MaxAge = 12 * time.Hour },
			"ACS_DLQ max age 12h0m0s is shorter than its duplicate window 24h0m0s"},
		{"negative age", func(tp *topology.Topology) { tp.AlertsRetention.MaxAge = -time.Second }, "ACS_ALERTS max age must not be negative"},
		{"negative bytes", func(tp *topology.Topology) { tp.DecisionsRetention.MaxBytes = -1 }, "ACS_DECISIONS max bytes must not be negative"},
		{"bytes below one message", func(tp *topology.Topology) { tp.HooksRetention.MaxBytes = 4096 }, "ACS_HOOKS max bytes 4096 is less than one largest message"},
		{"no duplicate window", func(tp *topology.Topology) { tp.DecisionDedupWindow = 0 }, "decision duplicate window must be at least 100ms"},
		{"handshake TTL", func(tp *topology.Topology) { tp.HandshakeTTL = tp.SessionTTL }, ""},
		{"handshake TTL below a second", func(tp *topology.Topology) { tp.HandshakeTTL = time.Millisecond }, "handshake TTL must be 0 (no HTTP endpoint) or at least 1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp := topology.Default()
			tt.edit(&tp)
			err := tp.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate: %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

// streamConfig is the stored configuration of a topology.
func streamConfig(t *testing.T, js jetstream.JetStream, name string) jetstream.StreamConfig {
	t.Helper()
	s, err := js.Stream(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return s.CachedInfo().Config
}

// checkRetention checks the stored retention of the four streams against
// tp's: MaxBytes 0 is stored as -1; ACS_HOOKS discards new, the rest old.
func checkRetention(t *testing.T, js jetstream.JetStream, tp topology.Topology) {
	t.Helper()
	for _, want := range []struct {
		name    string
		r       topology.Retention
		discard jetstream.DiscardPolicy
	}{
		{acs.HooksStream, tp.HooksRetention, jetstream.DiscardNew},
		{acs.DecisionsStream, tp.DecisionsRetention, jetstream.DiscardOld},
		{acs.AlertsStream, tp.AlertsRetention, jetstream.DiscardOld},
		{acs.DLQStream, tp.DLQRetention, jetstream.DiscardOld},
	} {
		cfg := streamConfig(t, js, want.name)
		wantBytes := want.r.MaxBytes
		if wantBytes == 0 {
			wantBytes = -1
		}
		if cfg.MaxAge != want.r.MaxAge || cfg.MaxBytes != wantBytes || cfg.Discard != want.discard {
			t.Errorf("%s: max age %s, max bytes %d, discard %v; want %s, %d, %v", want.name, cfg.MaxAge, cfg.MaxBytes, cfg.Discard,
				want.r.MaxAge, wantBytes, want.discard)
		}
	}
}

func TestEnsureSetsRetention(t *testing.T) {
	srv := natstest.RunServer(t)
	js := natstest.JetStream(t, natstest.Connect(t, srv))
	ctx := context.Background()
	tp := topology.Default()
	tp.Partitions = 1
	checked := tp
	if err := topology.Ensure(ctx, js, tp); err != nil {
		t.Fatal(err)
	}
	checkRetention(t, js, checked)

	tp.HooksRetention = topology.Retention{MaxAge: 30 * 24 * time.Hour, MaxBytes: 64 << 20}
	tp.DecisionsRetention = topology.Retention{MaxAge: 0, MaxBytes: 32 << 20}
	tp.AlertsRetention = topology.Retention{MaxAge: time.Hour, MaxBytes: 0}
	tp.DLQRetention = topology.Retention{MaxAge: 48 * time.Hour, MaxBytes: 8 << 20}
	srv2 := natstest.RunServer(t)
	js2 := natstest.JetStream(t, natstest.Connect(t, srv2))
	if err := topology.Ensure(ctx, js2, tp); err != nil {
		t.Fatal(err)
	}
	checkRetention(t, js2, tp)
}

// An existing stream's retention is changed to the configured one on the
// next Ensure, logged, keeping what the stream holds within the limits;
// and a stream from before retention (discarding old, no limits) gets it.
func TestEnsureUpdatesRetention(t *testing.T) {
	srv := natstest.RunServer(t)
	js := natstest.JetStream(t, natstest.Connect(t, srv))
	ctx := context.Background()
	tp := topology.Default()
	tp.Partitions = 1
	if err := topology.Ensure(ctx, js, tp); err != nil {
		t.Fatal(err)
	}
	natstest.Publish(t, js, acs.InboundPrefix+".default.s1.turnStart", []byte("{}"))
	natstest.Publish(t, js, acs.DecisionSubject("default", "s1"), []byte("{}"))

	tp.HooksRetention = topology.Retention{MaxAge: 90 * 24 * time.Hour, MaxBytes: 1 << 30}
	tp.DecisionsRetention = topology.Retention{MaxAge: 0, MaxBytes: 512 << 20}
	tp.AlertsRetention = topology.Retention{MaxAge: 48 * time.Hour}
	tp.DLQRetention = topology.Retention{}
	var logged bytes.Buffer
	if err := topology.EnsureLogged(ctx, js, tp, zerolog.New(&logged)); err != nil {
		t.Fatalf("changing the retention: %v", err)
	}
	checkRetention(t, js, tp)
	for _, name := range []string{acs.HooksStream, acs.DecisionsStream, acs.AlertsStream, acs.DLQStream} {
		if !strings.Contains(logged.String(), `"stream":"`+name+`"`) {
			t.Errorf("the change of %s was not logged: %s", name, logged.String())
		}
	}
	if !strings.Contains(logged.String(), "max age 168h0m0s → 2160h0m0s") {
		t.Errorf("the log does not say what changed: %s", logged.String())
	}
	requireCount(t, js, acs.HooksStream, 1)
	requireCount(t, js, acs.DecisionsStream, 1)

	// Unchanged: nothing to update, nothing logged.
	logged.Reset()
	if err := topology.EnsureLogged(ctx, js, tp, zerolog.New(&logged)); err != nil {
		t.Fatal(err)
	}
	if logged.Len() != 0 {
		t.Errorf("an unchanged topology logged %s", logged.String())
	}

	// A stream created before there was retention.
	hooks := streamConfig(t, js, acs.HooksStream)
	hooks.MaxAge, hooks.MaxBytes, hooks.Discard = 0, -1, jetstream.DiscardOld
	if _, err := js.UpdateStream(ctx, hooks); err != nil {
		t.Fatal(err)
	}
	if err := topology.Ensure(ctx, js, tp); err != nil {
		t.Fatal(err)
	}
	checkRetention(t, js, tp)

	// Retention is updated only on a compatible topology.
	other := tp
	other.Partitions = 2
	other.HooksRetention.MaxAge = 0
	var ie *topology.IncompatibleError
	if err := topology.Ensure(ctx, js, other); !errors.As(err, &ie) {
		t.Fatalf("want an IncompatibleError, got %v", err)
	}
	if got := streamConfig(t, js, acs.HooksStream).MaxAge; got != tp.HooksRetention.MaxAge {
		t.Fatalf("an incompatible stream's max age was changed to %s", got)
	}
}

// Byte limits are reserved against the server's store when a stream is
// created, which is why there are none by default: on a store smaller than
// their sum, creating the streams fails, whatever they hold.
func TestByteLimitsAreReservedAgainstTheStore(t *testing.T) {
	s := natstest.RunServerWith(t, &server.Options{JetStreamMaxStore: 64 << 20})
	js := natstest.JetStream(t, natstest.Connect(t, s))
	ctx := context.Background()
	tp := topology.Default()
	tp.Partitions = 1
	large := tp
	large.HooksRetention.MaxBytes = 1 << 30
	err := topology.Ensure(ctx, js, large)
	if err == nil || !strings.Contains(err.Error(), "insufficient storage resources") {
		t.Fatalf("a 1 GiB ACS_HOOKS on a 64 MiB store: %v, want insufficient storage resources", err)
	}
	if err := topology.Ensure(ctx, js, tp); err != nil {
		t.Fatalf("the defaults on a 64 MiB store: %v", err)
	}
}

// ACS_HOOKS at its size limit refuses a publish, and keeps every envelope
// it holds: none undecided is dropped to make room.
func TestFullHooksRefusesNewEnvelopes(t *testing.T) {
	srv := natstest.RunServer(t)
	js := natstest.JetStream(t, natstest.Connect(t, srv))
	ctx := context.Background()
	tp := topology.Default()
	tp.Partitions = 1
	tp.HooksRetention.MaxBytes = topology.MinRetentionBytes
	if err := topology.Ensure(ctx, js, tp); err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("x"), 100<<10)
	stored := 0
	var refused error
	for i := range 20 {
		if _, err := js.Publish(ctx, acs.InboundPrefix+".default.s1.turnStart", body); err != nil {
			refused = err
			break
		}
		stored = i + 1
	}
	if refused == nil {
		t.Fatalf("20 envelopes of 100 KiB fit in a 1 MiB ACS_HOOKS")
	}
	if !strings.Contains(refused.Error(), "maximum bytes exceeded") {
		t.Fatalf("the refusal says %v, want maximum bytes exceeded", refused)
	}
	s, err := js.Stream(ctx, acs.HooksStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.FirstSeq != 1 || int(info.State.Msgs) != stored || stored == 0 {
		t.Fatalf("ACS_HOOKS holds %d messages from sequence %d, want the %d published from 1", info.State.Msgs, info.State.FirstSeq, stored)
	}
	// Raising the limit lets publishers in again.
	tp.HooksRetention.MaxBytes = 2 * topology.MinRetentionBytes
	if err := topology.Ensure(ctx, js, tp); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, acs.InboundPrefix+".default.s1.turnStart", body); err != nil {
		t.Fatalf("after raising the limit: %v", err)
	}
}

// requireCount requires a stream to hold n messages now (what was
// published with an ack is stored).
func requireCount(t *testing.T, js jetstream.JetStream, name string, n int) {
	t.Helper()
	if got := natstest.CountMsgs(t, js, name); got != n {
		t.Errorf("%s holds %d messages, want %d", name, got, n)
	}
}

// Messages older than a stream's max age are removed.
func TestMessagesOlderThanMaxAgeAreRemoved(t *testing.T) {
	srv := natstest.RunServer(t)
	js := natstest.JetStream(t, natstest.Connect(t, srv))
	ctx := context.Background()
	tp := topology.Default()
	tp.Partitions = 1
	tp.DecisionDedupWindow = time.Second
	tp.AlertsRetention.MaxAge = 2 * time.Second
	if err := topology.Ensure(ctx, js, tp); err != nil {
		t.Fatal(err)
	}
	// Taken before the publish: the server stamps the alert later, so
	// time.Since(published) is never less than the alert's age, however
	// slow the publishes are.
	published := time.Now()
	natstest.Publish(t, js, acs.AlertsPrefix+".default.high.r1", []byte("{}"))
	natstest.Publish(t, js, acs.DecisionSubject("default", "s1"), []byte("{}"))
	testwait.CheckFor(t, waitFor, 50*time.Millisecond, func() error {
		if natstest.CountMsgs(t, js, acs.AlertsStream) != 0 {
			return fmt.Errorf("an alert older than %s is still in %s", tp.AlertsRetention.MaxAge, acs.AlertsStream)
		}
		return nil
	})
	if age := time.Since(published); age < tp.AlertsRetention.MaxAge-100*time.Millisecond {
		t.Fatalf("the alert was removed after %s, before its max age %s", age, tp.AlertsRetention.MaxAge)
	}
	// The other streams keep theirs.
	requireCount(t, js, acs.DecisionsStream, 1)
}

// The state bucket is read from its stream leader only: a bucket created
// by Ensure, and one created by someone else with direct gets on (as every
// KV bucket is created), answers no direct get afterwards.
func TestStateBucketIsReadFromTheLeader(t *testing.T) {
	for _, existing := range []bool{false, true} {
		t.Run(fmt.Sprintf("existing=%v", existing), func(t *testing.T) {
			srv := natstest.RunServer(t)
			js := natstest.JetStream(t, natstest.Connect(t, srv))
			ctx := context.Background()
			tp := topology.Default()
			tp.Partitions = 1
			if existing {
				if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: acs.StateBucket, History: 1, TTL: tp.SessionTTL}); err != nil {
					t.Fatal(err)
				}
			}
			if err := topology.Ensure(ctx, js, tp); err != nil {
				t.Fatal(err)
			}
			for bucket, direct := range map[string]bool{acs.StateBucket: false, acs.MembersBucket: true} {
				if got := streamConfig(t, js, "KV_"+bucket).AllowDirect; got != direct {
					t.Errorf("%s allows direct gets: %v, want %v", bucket, got, direct)
				}
			}
		})
	}
}

// waitFor bounds every wait of these tests.
const waitFor = 15 * time.Second

// Instances starting together each ensure the topology: the one that loses
// the race to create a bucket finds it created (its direct gets perhaps
// already turned off, so its own create's config differs) and checks it
// instead of failing to start.
func TestEnsureConcurrently(t *testing.T) {
	const rounds, instances = 8, 4
	for round := range rounds {
		srv := natstest.RunServer(t)
		tp := topology.Default()
		tp.Partitions = 1
		errs := make(chan error, instances)
		for range instances {
			js := natstest.JetStream(t, natstest.Connect(t, srv))
			go func() { errs <- topology.Ensure(context.Background(), js, tp) }()
		}
		for range instances {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		srv.Shutdown()
	}
}

// TestHandshakeBucket: ACS_HANDSHAKES is part of the topology only with
// the HTTP endpoint (HandshakeTTL set); it is created with that TTL, and
// one that exists with another configuration is an IncompatibleError,
// left as it is.
func TestHandshakeBucket(t *testing.T) {
	srv := natstest.RunServer(t)
	js := natstest.JetStream(t, natstest.Connect(t, srv))
	ctx := context.Background()
	tp := topology.Default()
	tp.Partitions = 2
	if err := topology.Ensure(ctx, js, tp); err != nil {
		t.Fatal(err)
	}
	if _, err := js.KeyValue(ctx, acs.HandshakeBucket); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("without the HTTP endpoint: %s looked up: %v, want it absent", acs.HandshakeBucket, err)
	}

	tp.HandshakeTTL = time.Hour
	created, err := topology.Restore(ctx, js, tp, 0, zerolog.Nop())
	if err != nil || len(created) != 1 || created[0] != acs.HandshakeBucket {
		t.Fatalf("with the HTTP endpoint: created %v (%v), want only %s", created, err, acs.HandshakeBucket)
	}
	kv, err := js.KeyValue(ctx, acs.HandshakeBucket)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.TTL() != time.Hour || st.History() != 1 {
		t.Fatalf("%s has TTL %s, history %d; want 1h, 1", acs.HandshakeBucket, st.TTL(), st.History())
	}

	other := tp
	other.HandshakeTTL = 2 * time.Hour
	var ie *topology.IncompatibleError
	if err := topology.Ensure(ctx, js, other); !errors.As(err, &ie) || ie.Asset != "KV bucket "+acs.HandshakeBucket || !strings.Contains(err.Error(), "ttl 1h0m0s, need 2h0m0s") {
		t.Fatalf("another TTL: %v, want an IncompatibleError of KV bucket %s", err, acs.HandshakeBucket)
	}
	if st, err := kv.Status(ctx); err != nil || st.TTL() != time.Hour {
		t.Fatalf("an incompatible %s was changed (TTL %v, %v)", acs.HandshakeBucket, st, err)
	}
}
