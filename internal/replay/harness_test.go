package replay_test

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/core/receipt"
	"github.com/turnguard/turnguard/internal/replay"
	"github.com/turnguard/turnguard/internal/scenario"
	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
	"github.com/turnguard/turnguard/schema"
)

const waitFor = 20 * time.Second

// recorder is a real processor on a real JetStream server recording what
// tests publish: decisions signed with an HMAC key and a receipt key, as
// in production.
type recorder struct {
	t         testing.TB
	srv       *server.Server
	js        jetstream.JetStream
	proc      *stream.Processor
	stop      func()
	cfg       guardian.Config
	published uint64
}

// testKeys are the HMAC keyring and the receipt key of every recording.
func testKeys(t testing.TB) (*acs.Keyring, *receipt.Signer) {
	t.Helper()
	kr, err := acs.NewKeyring(map[string][]byte{"k1": []byte("0123456789abcdef0123456789abcdef")}, "k1", nil)
	if err != nil {
		t.Fatal(err)
	}
	seed := make([]byte, ed25519.SeedSize)
	copy(seed, "turnguard replay test receipts")
	return kr, receipt.NewSigner(ed25519.NewKeyFromSeed(seed))
}

func newRecorder(t testing.TB, rs *policy.Set) *recorder {
	t.Helper()
	kr, signer := testKeys(t)
	r := &recorder{t: t, srv: natstest.RunServer(t), cfg: guardian.Config{Keys: kr, Receipts: signer}}
	nc := natstest.Connect(t, r.srv)
	r.js = natstest.JetStream(t, nc)
	cfg := stream.DefaultConfig()
	cfg.Topology.Partitions = 4
	pnc, err := nats.Connect("", nats.InProcessServer(r.srv))
	if err != nil {
		t.Fatal(err)
	}
	v, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	r.proc, err = stream.New(pnc, guardian.New(v, r.cfg), policy.NewSource(rs), cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.proc.Run(ctx) }()
	r.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("processor: %v", err)
		}
		pnc.Close()
	}
	t.Cleanup(func() {
		if r.stop != nil {
			r.stop()
		}
	})
	testwait.CheckFor(t, waitFor, 10*time.Millisecond, func() error {
		if err := r.proc.Ready(); err != nil {
			return fmt.Errorf("processor not ready: %w", err)
		}
		return nil
	})
	return r
}

// guardian is a core configured as the recording processor's; deciding
// signs nothing, as replay wants.
func (r *recorder) guardian() *guardian.Guardian {
	v, err := schema.New()
	if err != nil {
		r.t.Fatal(err)
	}
	return guardian.New(v, r.cfg)
}

func (r *recorder) publish(subject string, data []byte) uint64 {
	r.t.Helper()
	ack, err := r.js.Publish(context.Background(), subject, data)
	if err != nil {
		r.t.Fatalf("publish %s: %v", subject, err)
	}
	r.published++
	return ack.Sequence
}

// settle waits until everything published was decided and acknowledged:
// its decisions, alerts and dead letters are stored by then.
func (r *recorder) settle() {
	r.t.Helper()
	testwait.CheckFor(r.t, waitFor, 2*time.Millisecond, func() error {
		if got := r.proc.Stats().Processed.Load(); got < r.published {
			return fmt.Errorf("%d of %d envelopes processed", got, r.published)
		}
		return nil
	})
}

// publishStepwise publishes messages one at a time, each decided before the
// next, as a framework waiting for decisions does: the order of effects
// across partitions (a subagent's spawn) is then the stream order.
func (r *recorder) publishStepwise(msgs []scenario.Message) {
	for _, m := range msgs {
		r.publish(m.Subject, m.Data)
		r.settle()
	}
}

// finish stops the processor, so nothing more is recorded.
func (r *recorder) finish() {
	r.settle()
	r.stop()
	r.stop = nil
}

func (r *recorder) source() *replay.Source {
	r.t.Helper()
	return openSource(r.t, r.srv)
}

func openSource(t testing.TB, srv *server.Server) *replay.Source {
	t.Helper()
	js := natstest.JetStream(t, natstest.Connect(t, srv))
	src, err := replay.Open(context.Background(), js)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func wholeRange(t testing.TB, src *replay.Source) replay.Range {
	t.Helper()
	r, err := src.Resolve(context.Background(), replay.Bounds{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func loadScenario(t testing.TB, path string) (*scenario.Scenario, scenario.Built) {
	t.Helper()
	sc, err := scenario.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	built, err := sc.Build()
	if err != nil {
		t.Fatal(err)
	}
	return sc, built
}

func scenarioPaths(t testing.TB) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "..", "testdata", "scenarios", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 5 {
		t.Fatalf("found %d scenarios", len(paths))
	}
	return paths
}

// backtestSession is a generated session: web content taints it in turn 1,
// every turn has a user message, and a shell call follows gap turns later (gap < 0: no web content, the
// session stays clean).
func backtestSession(i, gap int) *scenario.Scenario {
	sc := &scenario.Scenario{Name: fmt.Sprintf("backtest-%03d", i), Agent: fmt.Sprintf("agent-%d", i%7),
		Start: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)}
	turn := func(n int) string { return fmt.Sprintf("t%d", n) }
	// Ten seconds a step keeps the turns of a session under the default
	// pack's 30 turns a minute, and the whole session within its 30-minute
	// taint window.
	at := time.Duration(0)
	step := func(s scenario.Step) {
		at += 10 * time.Second
		d := scenario.Duration{Duration: at}
		s.At = &d
		sc.Steps = append(sc.Steps, s)
	}
	step(scenario.Step{Hook: "sessionStart"})
	last := max(gap, 0) + 1
	for n := 1; n <= last; n++ {
		step(scenario.Step{Hook: "turnStart", Turn: turn(n), Payload: map[string]any{"triggered_by": "user_message"}})
		// The user's message is the work that makes the turn count
		// toward the window (an empty turn would not).
		step(scenario.Step{Hook: "userMessage", Turn: turn(n), Payload: map[string]any{"content": []any{map[string]any{"type": "text", "value": "go on"}}}})
		if n == 1 && gap >= 0 {
			step(scenario.Step{Hook: "toolCallResult", Turn: turn(n), Payload: map[string]any{
				"tool": map[string]any{"name": "web_fetch"}, "exit_status": "success",
				"outputs": []any{map[string]any{"value": "a page from outside"}}}})
		}
		if n == last {
			step(scenario.Step{Hook: "toolCallRequest", Turn: turn(n), Request: "shell", Payload: map[string]any{
				"tool": map[string]any{"name": "Bash"}, "arguments": map[string]any{"command": map[string]any{"value": "make test"}}}})
		}
		step(scenario.Step{Hook: "turnEnd", Turn: turn(n), Payload: map[string]any{"outcome": "completed"}})
	}
	step(scenario.Step{Hook: "sessionEnd", Payload: map[string]any{"reason": "completed"}})
	return sc
}
