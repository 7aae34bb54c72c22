package stream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/internal/ruletest"
	"github.com/turnguard/turnguard/internal/scenario"
	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/internal/testkit/guardiantest"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
	"github.com/turnguard/turnguard/internal/topology"
	rulepack "github.com/turnguard/turnguard/rules"
	"github.com/turnguard/turnguard/schema"
)

const waitFor = 15 * time.Second

func testConfig() stream.Config {
	cfg := stream.DefaultConfig()
	cfg.Topology.Partitions = 4
	cfg.BatchSize = 32
	return cfg
}

// running is a processor running in a goroutine on its own connection.
type running struct {
	p  *stream.Processor
	nc *nats.Conn
	// cancel has the processor start stopping; stop also waits until it
	// has.
	cancel context.CancelFunc
	stop   func()
	// tampering is set by tests that forge state values; in every other
	// test no value may fail to verify — instances, restarts and crashes
	// included.
	tampering bool
}

func startProcessor(t testing.TB, srv *server.Server, cfg stream.Config) *running {
	t.Helper()
	return startProcessorWith(t, srv, cfg, guardiantest.DefaultRules(t))
}

// startProcessorWith starts a processor with rules rs on its own connection
// to via: a server, or a natstest.Link to one.
func startProcessorWith(t testing.TB, via nats.InProcessConnProvider, cfg stream.Config, rs *policy.Set) *running {
	t.Helper()
	v, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	return startProcessorOf(t, via, cfg, rs, guardian.New(v, guardian.Config{}))
}

// startProcessorOf starts a processor deciding with g (keys, receipts).
func startProcessorOf(t testing.TB, via nats.InProcessConnProvider, cfg stream.Config, rs *policy.Set, g *guardian.Guardian) *running {
	t.Helper()
	nc, err := nats.Connect("", nats.InProcessServer(via))
	if err != nil {
		t.Fatal(err)
	}
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	if _, bench := t.(*testing.B); bench {
		log = zerolog.Nop()
	}
	p, err := stream.New(nc, g, policy.NewSource(rs), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var once sync.Once
	r := &running{p: p, nc: nc, cancel: cancel}
	r.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				// A test that closes the connection underneath the
				// processor expects it to stop with that error.
				if err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
					t.Errorf("processor: %v", err)
				}
			case <-time.After(waitFor):
				t.Error("processor did not stop")
			}
			if n := p.Stats().IntegrityFailures.Load(); n > 0 && !r.tampering {
				t.Errorf("%d stored values failed to verify in a test that forged none", n)
			}
			_ = nc.Drain()
		})
	}
	t.Cleanup(r.stop)
	return r
}

// watcher collects decisions and dead letters by the inbound stream
// sequence their headers name.
type watcher struct {
	mu        sync.Mutex
	decisions map[uint64][]*nats.Msg
	dlq       map[uint64][]*nats.Msg
	alerts    map[uint64][]*nats.Msg
}

func watch(t *testing.T, nc *nats.Conn) *watcher {
	return watchSome(t, nc, true)
}

// watchDecisions watches decisions only: with nobody subscribed to the
// alert and dead-letter subjects, a publication to them whose stream is
// missing fails at once (no responders) instead of at the attempt's
// timeout.
func watchDecisions(t *testing.T, nc *nats.Conn) *watcher {
	return watchSome(t, nc, false)
}

func watchSome(t *testing.T, nc *nats.Conn, all bool) *watcher {
	t.Helper()
	w := &watcher{decisions: map[uint64][]*nats.Msg{}, dlq: map[uint64][]*nats.Msg{}, alerts: map[uint64][]*nats.Msg{}}
	sub := func(subject, hdr string, into map[uint64][]*nats.Msg) {
		s, err := nc.Subscribe(subject, func(m *nats.Msg) {
			seq, _ := strconv.ParseUint(m.Header.Get(hdr), 10, 64)
			w.mu.Lock()
			into[seq] = append(into[seq], m)
			w.mu.Unlock()
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Unsubscribe() })
	}
	sub(acs.DecisionsPrefix+".>", acs.HdrStreamSeq, w.decisions)
	if all {
		sub(acs.DLQPrefix+".>", acs.HdrOriginalSeq, w.dlq)
		sub(acs.AlertsPrefix+".>", acs.HdrStreamSeq, w.alerts)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return w
}

// await waits until the message at seq got its decision and/or dead letter.
func (w *watcher) await(t *testing.T, seq uint64, decision, dlq bool) (*nats.Msg, *nats.Msg) {
	t.Helper()
	var dm, lm *nats.Msg
	testwait.CheckFor(t, waitFor, 5*time.Millisecond, func() error {
		w.mu.Lock()
		d, l := w.decisions[seq], w.dlq[seq]
		w.mu.Unlock()
		if (decision && len(d) == 0) || (dlq && len(l) == 0) {
			return fmt.Errorf("seq %d: no decision/dead letter", seq)
		}
		if len(d) > 0 {
			dm = d[0]
		}
		if len(l) > 0 {
			lm = l[0]
		}
		return nil
	})
	return dm, lm
}

// decision waits until the message at seq got its decision and returns it.
func (w *watcher) decision(t *testing.T, seq uint64) *nats.Msg {
	t.Helper()
	d, _ := w.await(t, seq, true, false)
	return d
}

// alertsFor returns the rule ids of the alerts that arrived for seq.
func (w *watcher) alertsFor(seq uint64) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	ids := []string{}
	for _, m := range w.alerts[seq] {
		ids = append(ids, m.Header.Get(acs.HdrRuleID))
	}
	return ids
}

// observe turns what arrived on NATS into the scenario's terms.
func observe(t *testing.T, decision, dead *nats.Msg, alerts []string) scenario.Observed {
	t.Helper()
	o := scenario.Observed{Decision: "none", DeadLetter: dead != nil, Alerts: alerts, Rules: []string{}, Shadow: []string{}}
	if dead != nil {
		o.Code, _ = strconv.Atoi(dead.Header.Get(acs.HdrErrorCode))
	}
	if decision == nil {
		return o
	}
	var resp struct {
		Result *struct {
			Decision         string   `json:"decision"`
			ReasonCodes      []string `json:"reason_codes"`
			Cited            []string `json:"cited_provenance_ids"`
			PolicyReferences []struct {
				PolicyID string `json:"policy_id"`
				RuleID   string `json:"rule_id"`
			} `json:"policy_references"`
			PolicyData struct {
				Turnguard struct {
					Violations []struct{ Name string } `json:"violations"`
					Shadow     []struct {
						RuleID string `json:"rule_id"`
					} `json:"shadow"`
				} `json:"turnguard"`
			} `json:"policy_data"`
		} `json:"result"`
		Error *struct{ Code int } `json:"error"`
	}
	if err := json.Unmarshal(decision.Data, &resp); err != nil {
		t.Fatalf("decision is not JSON: %v", err)
	}
	switch {
	case resp.Error != nil:
		o.Decision, o.Code = "error", resp.Error.Code
	case resp.Result != nil:
		o.Decision, o.ReasonCodes, o.Cited = resp.Result.Decision, resp.Result.ReasonCodes, resp.Result.Cited
		for _, v := range resp.Result.PolicyData.Turnguard.Violations {
			o.Violations = append(o.Violations, v.Name)
		}
		for _, r := range resp.Result.PolicyReferences {
			if r.PolicyID != guardian.ProtocolPolicyID {
				o.Rules = append(o.Rules, r.RuleID)
			}
		}
		for _, s := range resp.Result.PolicyData.Turnguard.Shadow {
			o.Shadow = append(o.Shadow, s.RuleID)
		}
	}
	return o
}

func loadScenario(t *testing.T, name string) (*scenario.Scenario, scenario.Built) {
	t.Helper()
	sc, err := scenario.Load(filepath.Join("..", "..", "testdata", "scenarios", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	built, err := sc.Build()
	if err != nil {
		t.Fatal(err)
	}
	return sc, built
}

// TestScenariosEndToEnd runs every scenario through a real processor on a
// real JetStream server, one envelope at a time as a framework waiting for
// each decision would, and checks every decision, dead letter and alert,
// the stream counts and the session states in KV. The decisions must be
// byte for byte the ones the pure core gives on the same scenario: the
// stream adds nothing and loses nothing.
func TestScenariosEndToEnd(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "..", "testdata", "scenarios", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 4 {
		t.Fatalf("found %d scenarios", len(paths))
	}
	for _, p := range paths {
		name := filepath.Base(p[:len(p)-len(".yaml")])
		t.Run(name, func(t *testing.T) {
			sc, built := loadScenario(t, name)
			pure := ruletest.Run(guardiantest.Pure(t), guardiantest.DefaultRules(t), sc)
			srv := natstest.RunServer(t)
			nc := natstest.Connect(t, srv)
			js := natstest.JetStream(t, nc)
			w := watch(t, nc)
			proc := startProcessor(t, srv, testConfig())
			waitForConsumers(t, js, testConfig().Topology.Partitions+1)
			wantDecisions, wantDLQ, wantAlerts := 0, 0, 0
			for i, m := range built.Messages {
				seq := natstest.Publish(t, js, m.Subject, m.Data)
				decided := m.Expect.Decision != "none"
				dm, lm := w.await(t, seq, decided, m.Expect.DeadLetter)
				want := pure.Outcomes[i]
				wantAlerts += len(want.Alerts)
				if decided {
					wantDecisions++
					if got := dm.Header.Get(acs.HdrRequestID); m.Expect.Decision != "error" && got != m.RequestID {
						t.Errorf("step %d: decision for request %q, want %q", i+1, got, m.RequestID)
					}
					// An envelope without a readable request id too gets a
					// message id that reads as one.
					if id := dm.Header.Get(acs.HdrMsgID); strings.HasPrefix(id, ":") || id != stream.DecisionMsgID(dm.Header.Get(acs.HdrRequestID), seq) {
						t.Errorf("step %d: decision Nats-Msg-Id %q", i+1, id)
					}
					if raw, _ := acs.Canonical(want.Response); !strings.HasSuffix(m.Subject, ".system") && string(raw) != string(dm.Data) {
						t.Errorf("step %d: the processor decided\n%s\nthe pure core\n%s", i+1, dm.Data, raw)
					}
				}
				if m.Expect.DeadLetter {
					wantDLQ++
					if string(lm.Data) != string(m.Data) || lm.Header.Get(acs.HdrOriginalSubj) != m.Subject {
						t.Errorf("step %d: dead letter does not hold the original bytes and subject", i+1)
					}
				}
				w.awaitAlerts(t, seq, len(want.Alerts))
				if name == "taint-window" && m.Expect.Decision == "deny" {
					checkTaintAlert(t, w, seq, m)
				}
				if err := m.Expect.Check(observe(t, dm, lm, w.alertsFor(seq))); err != nil {
					t.Errorf("step %d (%s): %v", i+1, m.Subject, err)
				}
			}
			// Every effect is stored once every envelope is processed.
			testwait.CheckFor(t, waitFor, 5*time.Millisecond, func() error {
				if n := proc.p.Stats().Processed.Load(); n < uint64(len(built.Messages)) {
					return fmt.Errorf("processed %d of %d", n, len(built.Messages))
				}
				return nil
			})
			checkStreamCount(t, js, acs.DecisionsStream, wantDecisions)
			checkStreamCount(t, js, acs.DLQStream, wantDLQ)
			checkStreamCount(t, js, acs.AlertsStream, wantAlerts)
			checkStates(t, js, built.States)
			// Nothing crashed: nothing may have been read back from the
			// stream or found already applied (the first envelope at
			// stream sequence 1 once was, twice).
			if st := proc.p.Stats(); st.Recovered.Load() != 0 || st.Skipped.Load() != 0 || st.Processed.Load() != uint64(len(built.Messages)) {
				t.Errorf("processed %d of %d, recovered %d, skipped %d", st.Processed.Load(), len(built.Messages), st.Recovered.Load(), st.Skipped.Load())
			}
		})
	}
}

// checkTaintAlert reads the taint guard's alert as a SIEM would: an OCSF
// Detection Finding naming the rule, session, agent, turn, the triggering
// request and stream sequence, and the envelope that tainted the session.
func checkTaintAlert(t *testing.T, w *watcher, seq uint64, m scenario.Message) {
	t.Helper()
	w.mu.Lock()
	msgs := w.alerts[seq]
	w.mu.Unlock()
	if len(msgs) != 1 || msgs[0].Subject != "acs.alerts.default.high.TG-TAINT-001" {
		t.Fatalf("want one alert on acs.alerts.default.high.TG-TAINT-001, got %d (%v)", len(msgs), msgs)
	}
	var f struct {
		ClassUID    int    `json:"class_uid"`
		SeverityID  int    `json:"severity_id"`
		Action      string `json:"action"`
		FindingInfo struct {
			Title    string   `json:"title"`
			Types    []string `json:"types"`
			Analytic struct {
				UID string `json:"uid"`
			} `json:"analytic"`
		} `json:"finding_info"`
		Actor struct {
			User    struct{ UID string } `json:"user"`
			Session struct{ UID string } `json:"session"`
		} `json:"actor"`
		Evidences []struct {
			Data map[string]any `json:"data"`
		} `json:"evidences"`
		Unmapped struct {
			Turnguard map[string]any `json:"turnguard"`
		} `json:"unmapped"`
	}
	if err := json.Unmarshal(msgs[0].Data, &f); err != nil {
		t.Fatal(err)
	}
	tg := f.Unmapped.Turnguard
	if f.ClassUID != 2004 || f.SeverityID != 4 || f.Action != "Denied" || f.FindingInfo.Analytic.UID != "TG-TAINT-001" ||
		!slices.Contains(f.FindingInfo.Types, "aarm") || f.Actor.Session.UID != m.SessionID || f.Actor.User.UID != "scenario-agent" ||
		tg["request_id"] != m.RequestID || tg["stream_seq"] != float64(seq) || tg["turn_id"] == "" || tg["turn_index"] != float64(2) {
		t.Errorf("alert does not describe the hit: %s", msgs[0].Data)
	}
	var anchor map[string]any
	for _, e := range f.Evidences {
		if e.Data["role"] == "taint_anchor" {
			anchor = e.Data
		}
	}
	if anchor == nil || fmt.Sprint(anchor["provenance_ids"]) != "[p-web-1]" || fmt.Sprint(anchor["origins"]) != "[retrieved]" ||
		fmt.Sprint(anchor["source_ids"]) != "[https://example.net/post]" || anchor["turns_ago"] != float64(1) || anchor["hook"] != "toolCallResult" {
		t.Errorf("alert evidence does not name the tainting envelope: %v", anchor)
	}
}

// awaitAlerts waits until n alerts arrived for seq.
func (w *watcher) awaitAlerts(t *testing.T, seq uint64, n int) {
	t.Helper()
	testwait.CheckFor(t, waitFor, 5*time.Millisecond, func() error {
		if got := len(w.alertsFor(seq)); got < n {
			return fmt.Errorf("seq %d: %d alerts, want %d", seq, got, n)
		}
		return nil
	})
}

// TestRestartMidSession stops the processor in the middle of a session and
// starts a new one: the session continues with its state — turns, taint
// labels — intact, and every envelope gets exactly one decision.
func TestRestartMidSession(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		// stopAfter envelopes the processor stops; the next two are
		// published while none runs.
		stopAfter int
	}{{"full-session", 6}, {"taint-window", 8}} {
		t.Run(tc.scenario, func(t *testing.T) {
			_, built := loadScenario(t, tc.scenario)
			srv := natstest.RunServer(t)
			nc := natstest.Connect(t, srv)
			js := natstest.JetStream(t, nc)
			w := watch(t, nc)
			first := startProcessor(t, srv, testConfig())
			waitForConsumers(t, js, testConfig().Topology.Partitions+1)
			check := func(i int, seq uint64) {
				m := built.Messages[i]
				dm, _ := w.await(t, seq, true, false)
				// Alerts are published beside the decision and may reach
				// the watcher just after it.
				w.awaitAlerts(t, seq, len(m.Expect.Alerts))
				if err := m.Expect.Check(observe(t, dm, nil, w.alertsFor(seq))); err != nil {
					t.Errorf("step %d: %v", i+1, err)
				}
			}
			for i, m := range built.Messages[:tc.stopAfter] {
				check(i, natstest.Publish(t, js, m.Subject, m.Data))
			}
			first.stop()
			var seqs []uint64
			for _, m := range built.Messages[tc.stopAfter : tc.stopAfter+2] {
				seqs = append(seqs, natstest.Publish(t, js, m.Subject, m.Data))
			}
			startProcessor(t, srv, testConfig())
			for k, seq := range seqs {
				check(tc.stopAfter+k, seq)
			}
			for i := tc.stopAfter + 2; i < len(built.Messages); i++ {
				check(i, natstest.Publish(t, js, built.Messages[i].Subject, built.Messages[i].Data))
			}
			checkExactlyOnce(t, js, len(built.Messages))
			checkStates(t, js, built.States)
		})
	}
}

// TestConnectionLossIsExactlyOnce kills the processor's connection while
// it is busy — acks, decisions and state writes in flight are lost at an
// arbitrary point — then starts a new processor. Every envelope must end up
// with exactly one decision and every session with exact counters.
func TestConnectionLossIsExactlyOnce(t *testing.T) {
	const sessions = 24
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv)
	js := natstest.JetStream(t, nc)
	cfg := testConfig()
	cfg.BatchSize = 8
	cfg.Topology.AckWait = 2 * time.Second
	first := startProcessor(t, srv, cfg)
	waitForConsumers(t, js, cfg.Topology.Partitions+1)
	total, states := publishSessions(t, js, "full-session", sessions, func(i int) {
		if i == sessions/3 {
			// Mid-stream: drop the processor's connection without a
			// goodbye, as a crash would. The pause is no
			// synchronisation: it lets the processor get busy, and
			// where it is then is arbitrary by design (the check
			// below makes sure it had not finished).
			time.Sleep(20 * time.Millisecond)
			first.nc.Close()
		}
	})
	first.stop()
	if decided := natstest.CountMsgs(t, js, acs.DecisionsStream); decided >= total {
		t.Fatalf("the connection was closed after all %d envelopes were decided; the test proves nothing", total)
	}
	second := startProcessor(t, srv, cfg)
	awaitDecided(t, js, total, 30*time.Second, 50*time.Millisecond)
	checkExactlyOnce(t, js, total)
	checkStates(t, js, states)
	st := second.p.Stats()
	t.Logf("after the restart: %d processed, %d recovered from the stream, %d redeliveries skipped", st.Processed.Load(), st.Recovered.Load(), st.Skipped.Load())
}

// TestEnsureAddsThePriorityGroup: a partition consumer from before
// instances shared partitions (no priority policy) gets its priority group
// and keeps its ack floor; one pinned by somebody else's rules is refused.
func TestEnsureAddsThePriorityGroup(t *testing.T) {
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv)
	js := natstest.JetStream(t, nc)
	ctx := context.Background()
	topo := topology.Default()
	topo.Partitions = 1
	if err := topology.Ensure(ctx, js, topo); err != nil {
		t.Fatal(err)
	}
	hooks, err := js.Stream(ctx, acs.HooksStream)
	if err != nil {
		t.Fatal(err)
	}
	name := acs.PartitionConsumer(0)
	c, err := hooks.Consumer(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	legacy := c.CachedInfo().Config
	legacy.PriorityPolicy, legacy.PriorityGroups, legacy.PinnedTTL = jetstream.PriorityPolicyNone, nil, 0
	if err := hooks.DeleteConsumer(ctx, name); err != nil {
		t.Fatal(err)
	}
	if _, err := hooks.CreateConsumer(ctx, legacy); err != nil {
		t.Fatal(err)
	}
	natstest.Publish(t, js, acs.InboundPrefix+".default.s1.turnStart", []byte("{}"))
	m, err := hooks.Consumer(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := m.Fetch(1)
	if err != nil {
		t.Fatal(err)
	}
	for msg := range msgs.Messages() {
		if err := msg.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := topology.Ensure(ctx, js, topo); err != nil {
		t.Fatalf("upgrading a legacy consumer: %v", err)
	}
	info, err := m.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.PriorityPolicy != jetstream.PriorityPolicyPinned || !slices.Equal(info.Config.PriorityGroups, []string{acs.PartitionGroup}) || info.AckFloor.Stream != 1 {
		t.Fatalf("after Ensure: policy %v, groups %v, ack floor %d", info.Config.PriorityPolicy, info.Config.PriorityGroups, info.AckFloor.Stream)
	}
	other := info.Config
	other.PriorityPolicy, other.PriorityGroups = jetstream.PriorityPolicyOverflow, []string{"theirs"}
	other.PinnedTTL = 0
	if _, err := hooks.UpdateConsumer(ctx, other); err != nil {
		t.Fatal(err)
	}
	var ie *topology.IncompatibleError
	if err := topology.Ensure(ctx, js, topo); !errors.As(err, &ie) {
		t.Fatalf("a consumer with another priority policy must be refused, got %v", err)
	}
}

func TestIncompatibleExistingStreamIsAStartupError(t *testing.T) {
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv)
	js := natstest.JetStream(t, nc)
	ctx := context.Background()
	eight := topology.Default()
	eight.Partitions = 8
	if err := topology.Ensure(ctx, js, eight); err != nil {
		t.Fatal(err)
	}
	before, err := js.Stream(ctx, acs.HooksStream)
	if err != nil {
		t.Fatal(err)
	}
	sixteen := topology.Default()
	err = topology.Ensure(ctx, js, sixteen)
	var ie *topology.IncompatibleError
	if !errors.As(err, &ie) || ie.Asset != "stream "+acs.HooksStream {
		t.Fatalf("want an IncompatibleError for %s, got %v", acs.HooksStream, err)
	}
	after, err := js.Stream(ctx, acs.HooksStream)
	if err != nil {
		t.Fatal(err)
	}
	if *after.CachedInfo().Config.SubjectTransform != *before.CachedInfo().Config.SubjectTransform {
		t.Fatal("Ensure changed the existing stream")
	}
	// A compatible topology is accepted as is, again and again.
	if err := topology.Ensure(ctx, js, eight); err != nil {
		t.Fatalf("re-ensuring the same topology: %v", err)
	}
	ttl := eight
	ttl.SessionTTL = time.Hour
	if err := topology.Ensure(ctx, js, ttl); !errors.As(err, &ie) || ie.Asset != "KV bucket "+acs.StateBucket {
		t.Fatalf("a different session TTL must be refused, got %v", err)
	}
}

// The partition transform sends every session to one partition, and
// malformed subjects stay under acs.hooks.> for the unrouted consumer.
func TestPartitionTransform(t *testing.T) {
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv)
	js := natstest.JetStream(t, nc)
	ctx := context.Background()
	if err := topology.Ensure(ctx, js, topology.Default()); err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, acs.HooksStream)
	if err != nil {
		t.Fatal(err)
	}
	partitionOf := map[string]int{}
	for i := range 64 {
		session := fmt.Sprintf("s%02d", i%16)
		seq := natstest.Publish(t, js, acs.InboundSubject("default", session, "turnStart"), []byte("{}"))
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		r, err := acs.ParsePartitioned(m.Subject)
		if err != nil {
			t.Fatalf("stored subject %q: %v", m.Subject, err)
		}
		if p, seen := partitionOf[session]; seen && p != r.Partition {
			t.Fatalf("session %s in partitions %d and %d", session, p, r.Partition)
		}
		partitionOf[session] = r.Partition
		if r.Tenant != "default" || r.SessionID != session || r.Hook != "turnStart" || r.Partition >= 16 {
			t.Fatalf("route %+v", r)
		}
	}
	seq := natstest.Publish(t, js, "acs.hooks.default.too.many.tokens", []byte("{}"))
	if m, err := s.GetMsg(ctx, seq); err != nil {
		t.Fatal(err)
	} else if m.Subject != "acs.hooks.default.too.many.tokens" {
		t.Fatalf("malformed subject stored as %q", m.Subject)
	}
	if _, err := js.Publish(ctx, acs.PartitionedPrefix+".3.default.s.turnStart", []byte("{}")); err == nil {
		t.Fatal("a publisher could write to a partition subject directly")
	}
}

func waitForConsumers(t *testing.T, js jetstream.JetStream, n int) {
	t.Helper()
	testwait.CheckFor(t, waitFor, 10*time.Millisecond, func() error {
		s, err := js.Stream(context.Background(), acs.HooksStream)
		if err != nil {
			return fmt.Errorf("processor did not create its %d consumers: %w", n, err)
		}
		info, err := s.Info(context.Background())
		if err != nil {
			return fmt.Errorf("processor did not create its %d consumers: %w", n, err)
		}
		if info.State.Consumers != n {
			return fmt.Errorf("processor did not create its %d consumers (%d exist)", n, info.State.Consumers)
		}
		return nil
	})
}

// publishSessions publishes n copies of the full-session scenario (named
// prefix-<i>) asynchronously and returns how many envelopes went out and
// the states the sessions must end in; after each session, between(i)
// may act on the processors (nil: nothing).
func publishSessions(t *testing.T, js jetstream.JetStream, prefix string, n int, between func(i int)) (int, []scenario.ExpectedState) {
	t.Helper()
	total := 0
	var states []scenario.ExpectedState
	for i := range n {
		sc, _ := loadScenario(t, "full-session")
		sc.Name = fmt.Sprintf("%s-%d", prefix, i)
		built, err := sc.Build()
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range built.States {
			// Stream sequences interleave across sessions here.
			delete(st.Fields, "first_seq")
			delete(st.Fields, "last_seq")
			delete(st.Fields, "last_closed_turn")
			states = append(states, st)
		}
		for _, m := range built.Messages {
			if _, err := js.PublishAsync(m.Subject, m.Data); err != nil {
				t.Fatal(err)
			}
			total++
		}
		if between != nil {
			between(i)
		}
	}
	<-js.PublishAsyncComplete()
	return total, states
}

// checkStreamCount requires exactly n messages in the stream; the caller
// first waits until the processor acknowledged every envelope, which it
// does only once their publications are stored.
func checkStreamCount(t *testing.T, js jetstream.JetStream, name string, n int) {
	t.Helper()
	if got := natstest.CountMsgs(t, js, name); got != n {
		t.Errorf("%s holds %d messages, want %d", name, got, n)
	}
}

// awaitDecided waits up to total until ACS_DECISIONS holds n decisions;
// it does not fail the test: checkExactlyOnce, after it, says which are
// missing.
func awaitDecided(t *testing.T, js jetstream.JetStream, n int, total, interval time.Duration) {
	t.Helper()
	if err := testwait.Wait(total, interval, func() error {
		if got := natstest.CountMsgs(t, js, acs.DecisionsStream); got < n {
			return fmt.Errorf("%d of %d decisions", got, n)
		}
		return nil
	}); err != nil {
		t.Log(err)
	}
}

// checkExactlyOnce reads every decision from ACS_DECISIONS and requires one
// per inbound stream sequence 1..n.
func checkExactlyOnce(t *testing.T, js jetstream.JetStream, n int) {
	t.Helper()
	ctx := context.Background()
	c, err := js.OrderedConsumer(ctx, acs.DecisionsStream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]int{}
	total := natstest.CountMsgs(t, js, acs.DecisionsStream)
	for range total {
		m, err := c.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		seq, _ := strconv.ParseUint(m.Headers().Get(acs.HdrStreamSeq), 10, 64)
		seen[seq]++
	}
	var missing, doubled []uint64
	for seq := uint64(1); seq <= uint64(n); seq++ {
		switch seen[seq] {
		case 0:
			missing = append(missing, seq)
		case 1:
		default:
			doubled = append(doubled, seq)
		}
	}
	if len(missing) > 0 || len(doubled) > 0 || total != n {
		t.Fatalf("%d decisions for %d envelopes; missing %v, decided twice %v", total, n, missing, doubled)
	}
}

func checkStates(t *testing.T, js jetstream.JetStream, states []scenario.ExpectedState) {
	t.Helper()
	kv, err := js.KeyValue(context.Background(), acs.StateBucket)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range states {
		e, err := kv.Get(context.Background(), acs.SessionKey(want.Tenant, want.SessionID))
		if err != nil {
			t.Errorf("session %s: %v", want.Alias, err)
			continue
		}
		if err := scenario.CheckState(want.Alias, recordJSON(t, e.Value()), want.Fields); err != nil {
			t.Error(err)
		}
	}
}

// TestAgentThresholdAcrossPartitions: an agent-keyed count is shared by the
// agent's sessions although their envelopes are decided by different
// partition workers; the count lives in KV under the agent's key.
func TestAgentThresholdAcrossPartitions(t *testing.T) {
	rs, err := rulepack.Load("../ruletest/testdata/agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv)
	js := natstest.JetStream(t, nc)
	w := watch(t, nc)
	startProcessorWith(t, srv, testConfig(), rs)
	waitForConsumers(t, js, testConfig().Topology.Partitions+1)
	ctx := context.Background()
	hooks, err := js.Stream(ctx, acs.HooksStream)
	if err != nil {
		t.Fatal(err)
	}
	partitions := map[int]bool{}
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for i := range 5 {
		sid := fmt.Sprintf("00000000-0000-4000-8000-0000000000%02d", i)
		env := fmt.Sprintf(`{"jsonrpc":"2.0","method":"steps/toolCallRequest","id":1,"params":{"acs_version":"0.1.0","request_id":"00000000-0000-4000-8000-00000000aa%02d","timestamp":%q,"metadata":{"agent_id":"shared-agent","session_id":%q},"payload":{"tool":{"name":"t"},"arguments":{}}}}`,
			i, t0.Add(time.Duration(i)*time.Second).Format(time.RFC3339), sid)
		seq := natstest.Publish(t, js, acs.InboundSubject("default", sid, "toolCallRequest"), []byte(env))
		dm, _ := w.await(t, seq, true, false)
		want := "allow"
		if i >= 3 {
			want = "deny"
		}
		if got := dm.Header.Get(acs.HdrDecision); got != want {
			t.Errorf("call %d: %s, want %s", i+1, got, want)
		}
		stored, err := hooks.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		r, err := acs.ParsePartitioned(stored.Subject)
		if err != nil {
			t.Fatal(err)
		}
		partitions[r.Partition] = true
	}
	if len(partitions) < 2 {
		t.Fatalf("the sessions all landed in one partition (%v); the test proves nothing", partitions)
	}
	kv, err := js.KeyValue(ctx, acs.StateBucket)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, turnstate.AgentKey("default", "shared-agent"))
	if err != nil {
		t.Fatal(err)
	}
	var agent turnstate.Agent
	if err := json.Unmarshal(recordJSON(t, e.Value()), &agent); err != nil || agent.AgentID != "shared-agent" || len(agent.Counters["AGENT-RATE"].Times) == 0 {
		t.Fatalf("agent state %s (%v)", e.Value(), err)
	}
}
