package stream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/alert"
	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
)

// awaitNotReady waits until Ready fails with an error mentioning want.
func awaitNotReady(t *testing.T, p *stream.Processor, want string) error {
	t.Helper()
	var err error
	testwait.CheckFor(t, waitFor, 50*time.Millisecond, func() error {
		if err = p.Ready(); err != nil && strings.Contains(err.Error(), want) {
			return nil
		}
		return fmt.Errorf("Ready() = %v, want an error naming %q", err, want)
	})
	return err
}

// TestReadinessReportsStuckPartitions: an asset turnguard cannot put back
// safely — here ACS_DECISIONS replaced by a stream of another shape, which
// takes no decision — leaves the partitions failing, and Ready says so,
// naming the partition and why, once it has failed for StuckAfter. (A
// deleted asset is recreated instead: TestDeletedAssetsAreRecreated.)
func TestReadinessReportsStuckPartitions(t *testing.T) {
	srv := natstest.RunServer(t)
	js := natstest.JetStream(t, natstest.Connect(t, srv))
	cfg := testConfig()
	cfg.StuckAfter = time.Second
	r := startProcessor(t, srv, cfg)
	waitForConsumers(t, js, cfg.Topology.Partitions+1)
	awaitReady(t, r.p)
	ctx := context.Background()
	if err := js.DeleteStream(ctx, acs.DecisionsStream); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: acs.DecisionsStream, Subjects: []string{"elsewhere.>"}}); err != nil {
		t.Fatal(err)
	}
	sid := examples.TaintSessionID
	e := examples.Session(sid)[0]
	if _, err := js.Publish(ctx, e.Subject("default", sid), e.Data); err != nil {
		t.Fatal(err)
	}
	err := awaitNotReady(t, r.p, "stuck")
	t.Logf("Ready: %v", err)
}

// TestDeletedAssetsAreRecreated: deleting a partition consumer, or the
// state bucket, under a running processor used to stop its deciding until
// a restart. The processor now recreates what is missing, alerts, and
// decides again.
func TestDeletedAssetsAreRecreated(t *testing.T) {
	for _, tc := range []struct {
		name  string
		asset string
		del   func(ctx context.Context, js jetstream.JetStream) error
	}{
		{"partition consumer", acs.HooksStream + "/" + acs.PartitionConsumer(1), func(ctx context.Context, js jetstream.JetStream) error {
			return js.DeleteConsumer(ctx, acs.HooksStream, acs.PartitionConsumer(1))
		}},
		{"state bucket", acs.StateBucket, func(ctx context.Context, js jetstream.JetStream) error {
			return js.DeleteKeyValue(ctx, acs.StateBucket)
		}},
		{"decisions stream", acs.DecisionsStream, func(ctx context.Context, js jetstream.JetStream) error {
			return js.DeleteStream(ctx, acs.DecisionsStream)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := natstest.RunServer(t)
			nc := natstest.Connect(t, srv)
			js := natstest.JetStream(t, nc)
			w := watch(t, nc)
			ops := watchOps(t, nc)
			cfg := testConfig()
			cfg.StuckAfter = time.Second
			r := startProcessor(t, srv, cfg)
			waitForConsumers(t, js, cfg.Topology.Partitions+1)
			awaitReady(t, r.p)
			ctx := context.Background()
			// Sessions in every partition, before and after.
			sessions := make([]string, 8)
			for i := range sessions {
				sessions[i] = fmt.Sprintf("00000000-0000-4000-8000-0000000%05d", i)
				e := examples.Session(sessions[i])[0]
				w.await(t, natstest.Publish(t, js, e.Subject("default", sessions[i]), e.Data), true, false)
			}
			if err := tc.del(ctx, js); err != nil {
				t.Fatal(err)
			}
			for _, sid := range sessions {
				e := examples.Session(sid)[1]
				w.await(t, natstest.Publish(t, js, e.Subject("default", sid), e.Data), true, false)
			}
			ops.await(t, stream.AlertAssetRecreated, map[string]any{"asset": tc.asset})
			awaitReady(t, r.p)
		})
	}
}

// awaitReady waits until Ready reports no error.
func awaitReady(t *testing.T, p *stream.Processor) {
	t.Helper()
	testwait.CheckFor(t, waitFor, 20*time.Millisecond, func() error {
		if err := p.Ready(); err != nil {
			return fmt.Errorf("not ready: %w", err)
		}
		return nil
	})
}

// opsWatcher collects the evidence of turnguard's operational alerts, by
// alert id.
type opsWatcher struct {
	mu  sync.Mutex
	got map[string][]map[string]any
}

func watchOps(t *testing.T, nc *nats.Conn) *opsWatcher {
	t.Helper()
	o := &opsWatcher{got: map[string][]map[string]any{}}
	sub, err := nc.Subscribe(acs.AlertsPrefix+"."+alert.SystemTenant+".>", func(m *nats.Msg) {
		var f struct {
			Evidences []struct {
				Data map[string]any `json:"data"`
			} `json:"evidences"`
		}
		_ = json.Unmarshal(m.Data, &f)
		o.mu.Lock()
		defer o.mu.Unlock()
		for _, e := range f.Evidences {
			o.got[m.Header.Get(acs.HdrRuleID)] = append(o.got[m.Header.Get(acs.HdrRuleID)], e.Data)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return o
}

// await waits for an operational alert id whose evidence has every field
// of want, and returns that evidence.
func (o *opsWatcher) await(t *testing.T, id string, want map[string]any) map[string]any {
	t.Helper()
	var d map[string]any
	testwait.CheckFor(t, waitFor, 5*time.Millisecond, func() error {
		if d = o.find(id, want); d != nil {
			return nil
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		return fmt.Errorf("no %s alert with %v; have %v", id, want, o.got[id])
	})
	return d
}

func (o *opsWatcher) find(id string, want map[string]any) map[string]any {
	o.mu.Lock()
	defer o.mu.Unlock()
next:
	for _, d := range o.got[id] {
		for k, v := range want {
			if d[k] != v {
				continue next
			}
		}
		return d
	}
	return nil
}

// TestStartWaitsForJetStream: a processor started before JetStream
// answers (a cluster still forming, here a server whose JetStream is off)
// waits, not ready and saying why, instead of exiting; once JetStream is
// there it creates its assets and decides.
func TestStartWaitsForJetStream(t *testing.T) {
	// JetStream off from the start: turning it off at run time races the
	// server's own API handlers.
	srv, err := server.NewServer(&server.Options{DontListen: true, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server did not start")
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	r := startProcessor(t, srv, testConfig())
	testwait.CheckFor(t, waitFor, 20*time.Millisecond, func() error {
		if err := r.p.Ready(); err == nil || !strings.Contains(err.Error(), "waiting for JetStream") {
			return fmt.Errorf("readiness %v, want it to say the processor waits for JetStream", err)
		}
		return nil
	})
	if err := srv.EnableJetStream(&server.JetStreamConfig{StoreDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	nc := natstest.Connect(t, srv)
	js := natstest.JetStream(t, nc)
	w := watch(t, nc)
	waitForConsumers(t, js, testConfig().Topology.Partitions+1)
	awaitReady(t, r.p)
	sid := "00000000-0000-4000-8000-000000000001"
	e := examples.Session(sid)[0]
	w.await(t, natstest.Publish(t, js, e.Subject("default", sid), e.Data), true, false)
}
