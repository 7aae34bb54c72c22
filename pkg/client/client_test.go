package client_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/core/receipt"
	"github.com/turnguard/turnguard/internal/keyfile"
	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/internal/testkit/guardiantest"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
	"github.com/turnguard/turnguard/internal/topology"
	"github.com/turnguard/turnguard/pkg/client"
)

// runProcessor runs a processor on srv until the returned stop is called.
func runProcessor(t *testing.T, srv *server.Server) (stop func()) {
	t.Helper()
	return runProcessorB(t, srv)
}

func runProcessorB(t testing.TB, srv *server.Server) (stop func()) {
	t.Helper()
	rs := guardiantest.DefaultRules(t)
	nc := natstest.Connect(t, srv)
	cfg := stream.DefaultConfig()
	cfg.Topology.Partitions = 4
	p, err := stream.New(nc, guardiantest.New(t, guardian.Config{Receipts: testSigner}), policy.NewSource(rs), cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := p.Run(ctx); err != nil {
			t.Errorf("processor: %v", err)
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// testSigner is the test processors' receipt key.
var testSigner = receipt.NewSigner(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize)))

// newClient returns a client; one configured with neither trusted keys nor
// the insecure opt-out trusts the test processors' key.
func newClient(t *testing.T, nc *nats.Conn, opt client.Options) *client.Client {
	t.Helper()
	if len(opt.TrustedKeys) == 0 && !opt.InsecureAcceptUnsignedDecisions {
		opt.TrustedKeys = []ed25519.PublicKey{testSigner.Public()}
	}
	c, err := client.New(nc, opt)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDecideASession(t *testing.T) {
	srv := natstest.RunServer(t)
	runProcessor(t, srv)
	c := newClient(t, natstest.Connect(t, srv), client.Options{Timeout: 10 * time.Second})
	for i, e := range examples.Taint("") {
		called := time.Now()
		d, err := c.Decide(context.Background(), e.Data)
		if err != nil {
			t.Fatal(err)
		}
		if d.Stored.Before(called) || d.Stored.After(time.Now()) {
			t.Fatalf("%s: stored at %v, not within the call (%v on)", e.Hook, d.Stored, called)
		}
		want := "allow"
		if i == 5 {
			want = "deny"
		}
		if d.FromPosture || d.Disposition != want || d.RequestID == "" || !strings.Contains(string(d.Response), d.RequestID) {
			t.Fatalf("%s: %+v", e.Hook, d)
		}
		if want == "deny" && (len(d.ReasonCodes) == 0 || !strings.Contains(d.Reasoning, "untrusted content")) {
			t.Fatalf("the deny does not say why: %+v", d)
		}
	}
}

// Many concurrent calls over a few sessions each get their own decision;
// calls of one session share one subscription, which outlives them by the
// linger time.
func TestConcurrentCallsShareSubscriptions(t *testing.T) {
	const sessions = 6
	srv := natstest.RunServer(t)
	runProcessor(t, srv)
	nc := natstest.Connect(t, srv)
	// A linger far longer than the test, so that the subscriptions are
	// still held when checked after the calls however slow the machine.
	c := newClient(t, nc, client.Options{Timeout: 20 * time.Second, Linger: time.Hour})
	t.Cleanup(c.Close)
	var wg sync.WaitGroup
	var maxSubs int
	var mu sync.Mutex
	errs := make(chan error, sessions*20)
	for s := range sessions {
		sid := fmt.Sprintf("00000000-0000-4000-8000-%012d", s)
		envs := examples.Session(sid)
		// Each session in order; within a session, the three steps that do
		// not depend on each other are sent at once.
		wg.Go(func() {
			for _, batch := range [][]examples.Envelope{envs[:2], envs[2:5], envs[5:]} {
				var inner sync.WaitGroup
				for _, e := range batch {
					inner.Go(func() {
						d, err := c.Decide(context.Background(), e.Data)
						switch {
						case err != nil:
							errs <- err
						case d.FromPosture || d.Disposition == "":
							errs <- fmt.Errorf("%s %s: %+v", sid, e.Hook, d)
						}
						mu.Lock()
						maxSubs = max(maxSubs, c.OpenSubscriptions())
						mu.Unlock()
					})
				}
				inner.Wait()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if maxSubs > sessions {
		t.Fatalf("%d subscriptions for %d sessions", maxSubs, sessions)
	}
	if n := c.OpenSubscriptions(); n != sessions {
		t.Fatalf("%d subscriptions linger after the calls, want one per session: %d", n, sessions)
	}
	// A short linger ends: a client lingering 50 ms releases its session's
	// subscription after its call.
	brief := newClient(t, nc, client.Options{Timeout: 20 * time.Second, Linger: 50 * time.Millisecond})
	if d, err := brief.Decide(context.Background(), examples.Session(fmt.Sprintf("00000000-0000-4000-8000-%012d", sessions))[0].Data); err != nil || d.FromPosture {
		t.Fatalf("a call of the brief client: %+v, %v", d, err)
	}
	testwait.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if n := brief.OpenSubscriptions(); n != 0 {
			return fmt.Errorf("%d subscriptions left after the linger time", n)
		}
		return nil
	})
}

// With the processor down, Decide returns within its deadline with the
// caller's posture; the envelope waits in the stream and is decided when
// the processor is back — asking again then returns the real decision.
func TestTimeoutPostureAndNothingLost(t *testing.T) {
	srv := natstest.RunServer(t)
	stop := runProcessor(t, srv)
	nc := natstest.Connect(t, srv)
	deny := newClient(t, nc, client.Options{Timeout: 300 * time.Millisecond})
	proceed := newClient(t, nc, client.Options{Timeout: 300 * time.Millisecond, Posture: client.Proceed})
	if deny.Options().Posture != client.Deny {
		t.Fatalf("default posture %q, want deny (fail closed)", deny.Options().Posture)
	}
	envs := examples.Session("")
	// A processor that has just started may take longer than 300 ms under
	// a loaded machine (the race detector, other packages' tests).
	up := newClient(t, nc, client.Options{Timeout: 20 * time.Second})
	if d, err := up.Decide(context.Background(), envs[0].Data); err != nil || d.FromPosture {
		t.Fatalf("with the processor up: %+v, %v", d, err)
	}
	stop()
	for _, tc := range []struct {
		c    *client.Client
		env  examples.Envelope
		want string
	}{{deny, envs[1], "deny"}, {proceed, envs[2], "allow"}} {
		start := time.Now()
		d, err := tc.c.Decide(context.Background(), tc.env.Data)
		if err != nil || !d.FromPosture || d.Disposition != tc.want || !errors.Is(d.Failure, client.ErrTimeout) {
			t.Fatalf("with the processor down: %+v, %v", d, err)
		}
		// The stream took the envelope; only the decision did not come.
		if d.Stored.IsZero() {
			t.Fatalf("with the processor down: the envelope's acknowledgement is not reported: %+v", d)
		}
		if took := time.Since(start); took > time.Second {
			t.Fatalf("Decide took %s with a 300ms timeout", took)
		}
	}
	runProcessor(t, srv)
	patient := newClient(t, nc, client.Options{Timeout: 15 * time.Second})
	for _, e := range envs[1:3] {
		d, err := patient.Decide(context.Background(), e.Data)
		if err != nil || d.FromPosture || d.Disposition != "allow" {
			t.Fatalf("%s after the restart: %+v, %v", e.Hook, d, err)
		}
	}
	// Asking again for decided envelopes finds their decisions in the
	// stream rather than deciding them twice.
	d, err := patient.Decide(context.Background(), envs[0].Data)
	if err != nil || d.FromPosture || d.Disposition != "allow" || !d.Replayed || d.Stored.IsZero() {
		t.Fatalf("asking again: %+v, %v", d, err)
	}
}

// A connection that stops answering — a network partition, which closes
// nothing — holds no call past its deadline: one starting a session (and
// subscribing) and one in a session whose subscription is open both answer
// from the posture in time, and neither holds up the other.
func TestStalledConnectionAnswersWithinTimeout(t *testing.T) {
	srv := natstest.RunServer(t)
	runProcessor(t, srv)
	link := natstest.NewLink(srv)
	nc, err := nats.Connect("", nats.InProcessServer(link))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	t.Cleanup(link.Heal) // before the close, which flushes
	open := examples.Session("")
	// Up first, with room for a processor just started on a loaded machine;
	// the session's subscription stays open (Options.Linger).
	c := newClient(t, nc, client.Options{Timeout: 20 * time.Second})
	if d, err := c.Decide(context.Background(), open[0].Data); err != nil || d.FromPosture {
		t.Fatalf("with the link up: %+v, %v", d, err)
	}
	if n := c.OpenSubscriptions(); n != 1 {
		t.Fatalf("%d session subscriptions open, want 1", n)
	}
	link.Cut()
	fresh := examples.Session("5b0e7f2a-0000-4000-8000-00000000c0de")
	type result struct {
		d    *client.Decision
		err  error
		took time.Duration
	}
	results := make(chan result, 2)
	for _, env := range []examples.Envelope{fresh[0], open[1]} {
		go func() {
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			d, err := c.Decide(ctx, env.Data)
			results <- result{d, err, time.Since(start)}
		}()
	}
	for range 2 {
		select {
		case r := <-results:
			if r.err != nil || !r.d.FromPosture || r.d.Disposition != "deny" || r.d.Failure == nil {
				t.Fatalf("over a stalled connection: %+v, %v", r.d, r.err)
			}
			// nats.go's Flush waits up to 10 s: far past the call's 300 ms.
			if r.took > 5*time.Second {
				t.Fatalf("Decide took %s with a 300ms deadline", r.took)
			}
		case <-time.After(9 * time.Second):
			t.Fatal("Decide over a stalled connection did not return within 9s, with a 300ms deadline")
		}
	}
}

func TestMalformedEnvelopeIsAnError(t *testing.T) {
	srv := natstest.RunServer(t)
	c := newClient(t, natstest.Connect(t, srv), client.Options{})
	for _, bad := range []string{`not json`, `{"method":"steps/turnStart","params":{}}`} {
		if _, err := c.Decide(context.Background(), []byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if _, err := client.New(natstest.Connect(t, srv), client.Options{Posture: "maybe", InsecureAcceptUnsignedDecisions: true}); err == nil {
		t.Error("an unknown posture was accepted")
	}
}

// A client that cannot tell the processor's decisions from forged ones is
// refused, unless the insecure opt-out says so out loud.
func TestNewNeedsTrustedKeys(t *testing.T) {
	nc := natstest.Connect(t, natstest.RunServer(t))
	tests := []struct {
		name string
		opt  client.Options
		want error
	}{
		{"no key", client.Options{}, client.ErrNoTrustedKeys},
		{"no key, proceed", client.Options{Posture: client.Proceed}, client.ErrNoTrustedKeys},
		{"a key", client.Options{TrustedKeys: []ed25519.PublicKey{testSigner.Public()}}, nil},
		{"the explicit opt-out", client.Options{InsecureAcceptUnsignedDecisions: true}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := client.New(nc, tt.opt); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	if _, err := client.New(nc, client.Options{TrustedKeys: []ed25519.PublicKey{[]byte("short")}}); err == nil {
		t.Fatal("a malformed key was accepted")
	}
}

func TestLoadReceiptKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "receipt-key.pub")
	if err := keyfile.WriteReceiptPublic(path, testSigner); err != nil {
		t.Fatal(err)
	}
	k, err := client.LoadReceiptKey(path)
	if err != nil || !k.Equal(testSigner.Public()) {
		t.Fatalf("LoadReceiptKey: %v", err)
	}
	if k, err := client.ParseReceiptKey(testSigner.PublicPEM()); err != nil || !k.Equal(testSigner.Public()) {
		t.Fatalf("ParseReceiptKey: %v", err)
	}
	if _, err := client.ParseReceiptKey([]byte("AAAA")); err == nil {
		t.Fatal("garbage parsed as a key")
	}
}

// TestOnlyItsOwnDecision: a decision naming the call's request id but
// another stream sequence — an earlier copy of the request, decided before,
// or a decision published again after a crash — is not the call's answer;
// the decision of the message the call stored is. The test plays the
// processor: it reads the stored envelope's sequence and answers with a
// stale allow first, then the real deny.
func TestOnlyItsOwnDecision(t *testing.T) {
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	topo := topology.Default()
	topo.Partitions = 1
	if err := topology.Ensure(context.Background(), js, topo); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, natstest.Connect(t, srv), client.Options{Timeout: 10 * time.Second})
	e := examples.Session("")[0]
	var env struct {
		Params struct {
			RequestID string `json:"request_id"`
		} `json:"params"`
	}
	if err := json.Unmarshal(e.Data, &env); err != nil {
		t.Fatal(err)
	}
	requestID := env.Params.RequestID
	type result struct {
		d   *client.Decision
		err error
	}
	done := make(chan result, 1)
	go func() {
		d, err := c.Decide(context.Background(), e.Data)
		done <- result{d, err}
	}()
	hooks, err := js.Stream(context.Background(), acs.HooksStream)
	if err != nil {
		t.Fatal(err)
	}
	var seq uint64
	testwait.CheckFor(t, 10*time.Second, 5*time.Millisecond, func() error {
		info, err := hooks.Info(context.Background())
		if err != nil {
			return fmt.Errorf("the envelope was not stored: %w", err)
		}
		if info.State.Msgs != 1 {
			return fmt.Errorf("the envelope was not stored: %d messages", info.State.Msgs)
		}
		seq = info.State.LastSeq
		return nil
	})
	// Both answers carry genuine receipts, each bound to its sequence:
	// the stale one is the processor's too, only not for this envelope.
	answer := func(decision string, seq uint64) {
		m := nats.NewMsg(acs.DecisionSubject("default", examples.SessionID))
		m.Header.Set(acs.HdrRequestID, requestID)
		m.Header.Set(acs.HdrStreamSeq, strconv.FormatUint(seq, 10))
		m.Data = []byte(`{"jsonrpc":"2.0","id":"x","result":{"type":"final","acs_version":"0.1.0","request_id":"` + requestID + `","decision":"` + decision + `","reasoning":"r"}}`)
		rc, err := testSigner.Sign(receipt.Decision("default", examples.SessionID, seq), json.RawMessage(m.Data))
		if err != nil {
			t.Fatal(err)
		}
		m.Header.Set(acs.HdrReceipt, rc)
		m.Header.Set(acs.HdrReceiptKey, testSigner.KeyID)
		if err := nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	answer("allow", seq+1000)
	answer("deny", seq)
	r := <-done
	if r.err != nil || r.d.Disposition != "deny" || r.d.FromPosture || !r.d.Verified || r.d.Seq != seq {
		t.Fatalf("decision %+v, %v; want the deny answering sequence %d", r.d, r.err, seq)
	}
	if st := c.Stats(); st.Accepted != 1 || st.DroppedOtherEnvelope != 1 || st.DroppedUnverified != 0 {
		t.Fatalf("stats %+v, want 1 accepted and the stale answer dropped", st)
	}
}
