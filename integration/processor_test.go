package integration

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/internal/statestore"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
)

const exampleSession = examples.SessionID

type envelope struct {
	subject string
	data    []byte
}

// exampleEnvelopes returns the README's example session (examples/session),
// moved to another session id.
func exampleEnvelopes(sid string) []envelope {
	var out []envelope
	for _, e := range examples.Session(sid) {
		out = append(out, envelope{subject: e.Subject("default", sid), data: e.Data})
	}
	return out
}

func sessionID(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }

// startProcessor runs the processor binary and waits until it processes.
func startProcessor(t *testing.T, args ...string) *proc {
	t.Helper()
	// A data dir of the test's own, for the receipt key; a --data-dir in
	// args comes later and wins. The fixtures and the load generator carry
	// timestamps of their own, not the time they are published at, so the
	// skew window is off unless a test sets it.
	// Every processor of a test — restarts and instances sharing the
	// partitions, each with a data dir of its own — gets the test's one
	// state key file, as an operator distributes one to every instance.
	p := start(t, "processor", append([]string{"--log-format", "json", "--partitions", "4", "--data-dir", t.TempDir(), "--skew-window", "0", "--state-key", stateKeyFile(t)}, args...)...)
	// No test here forges state: a value that fails to verify would be a
	// processor sealing wrong, or instances that do not share the key.
	t.Cleanup(func() {
		if strings.Contains(p.out.String(), "does not verify") {
			t.Errorf("a stored state value failed to verify:\n%s", p.out)
		}
	})
	testwait.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		if strings.Contains(p.out.String(), `"message":"processing"`) {
			return nil
		}
		select {
		case <-p.done:
			t.Fatalf("processor exited: %v\n%s", p.err, p.out)
		default:
		}
		return fmt.Errorf("processor not processing\n%s", p.out)
	})
	return p
}

// stateKeys holds each test's state key file, by test name.
var stateKeys sync.Map

// stateKeyFile returns the test's state key file, creating it (32 random
// bytes, mode 0600) on first use.
func stateKeyFile(t *testing.T) string {
	t.Helper()
	if path, ok := stateKeys.Load(t.Name()); ok {
		return path.(string)
	}
	path := filepath.Join(t.TempDir(), "state-key")
	key := make([]byte, turnstate.StateKeySize)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, key, 0o600); err != nil {
		t.Fatal(err)
	}
	stateKeys.Store(t.Name(), path)
	t.Cleanup(func() { stateKeys.Delete(t.Name()) })
	return path
}

// count returns how many messages stream holds. It retries for a while: in
// a cluster whose node just came back, the API can be briefly unanswered.
func count(t *testing.T, js jetstream.JetStream, stream string) int {
	t.Helper()
	var n int
	testwait.CheckFor(t, 20*time.Second, 200*time.Millisecond, func() error {
		s, err := js.Stream(withTimeout(t, 5*time.Second), stream)
		if err != nil {
			return fmt.Errorf("stream %s: %w", stream, err)
		}
		info, err := s.Info(withTimeout(t, 5*time.Second))
		if err != nil {
			return fmt.Errorf("stream %s: %w", stream, err)
		}
		n = int(info.State.Msgs)
		return nil
	})
	return n
}

func awaitCount(t *testing.T, js jetstream.JetStream, stream string, n int, within time.Duration) {
	t.Helper()
	testwait.CheckFor(t, within, 20*time.Millisecond, func() error {
		if got := count(t, js, stream); got < n {
			return fmt.Errorf("%s holds %d messages, want %d", stream, got, n)
		}
		return nil
	})
}

// awaitAcked waits until every consumer of stream has nothing left to
// deliver and nothing delivered unacknowledged.
func awaitAcked(t *testing.T, js jetstream.JetStream, stream string, within time.Duration) {
	t.Helper()
	testwait.CheckFor(t, within, 100*time.Millisecond, func() error {
		s, err := js.Stream(withTimeout(t, 5*time.Second), stream)
		if err != nil {
			return fmt.Errorf("stream %s: %w", stream, err)
		}
		lister := s.ListConsumers(withTimeout(t, 5*time.Second))
		var infos []*jetstream.ConsumerInfo
		for ci := range lister.Info() {
			infos = append(infos, ci)
		}
		if err := lister.Err(); err != nil {
			return fmt.Errorf("consumers of %s: %w", stream, err)
		}
		if len(infos) == 0 {
			return fmt.Errorf("stream %s has no consumers", stream)
		}
		for _, ci := range infos {
			if ci.NumPending != 0 || ci.NumAckPending != 0 {
				return fmt.Errorf("consumer %s of %s: %d pending, %d unacknowledged", ci.Name, stream, ci.NumPending, ci.NumAckPending)
			}
		}
		return nil
	})
}

// decisionsBySeq reads all of ACS_DECISIONS and groups them by the inbound
// stream sequence they answer.
func decisionsBySeq(t *testing.T, js jetstream.JetStream) map[uint64][]jetstream.Msg {
	t.Helper()
	// A cluster node that just came back may not answer yet.
	var c jetstream.Consumer
	testwait.CheckFor(t, 20*time.Second, 200*time.Millisecond, func() (err error) {
		c, err = js.OrderedConsumer(withTimeout(t, 5*time.Second), "ACS_DECISIONS", jetstream.OrderedConsumerConfig{})
		return err
	})
	// One continuous pull rather than a request per message: in a cluster
	// a request right after the consumer's creation can find no responder.
	it, err := c.Messages()
	if err != nil {
		t.Fatal(err)
	}
	defer it.Stop()
	out := map[uint64][]jetstream.Msg{}
	for read := range count(t, js, "ACS_DECISIONS") {
		m, err := it.Next(jetstream.NextMaxWait(10 * time.Second))
		if err != nil {
			t.Fatalf("read ACS_DECISIONS after %d decisions: %v", read, err)
		}
		seq, err := strconv.ParseUint(m.Headers().Get("Acs-Stream-Seq"), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		out[seq] = append(out[seq], m)
	}
	return out
}

type sessionState struct {
	Status       string            `json:"status"`
	TurnsStarted int               `json:"turns_started"`
	Envelopes    int               `json:"envelopes"`
	Decisions    map[string]int    `json:"decisions"`
	Violations   map[string]uint64 `json:"violations"`
}

func state(t *testing.T, js jetstream.JetStream, sid string) sessionState {
	t.Helper()
	kv, err := js.KeyValue(withTimeout(t, 5*time.Second), "ACS_TURNSTATE")
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(withTimeout(t, 5*time.Second), "default."+sid)
	if err != nil {
		t.Fatalf("state of %s: %v", sid, err)
	}
	var s sessionState
	rec, err := statestore.RecordJSON(e.Value())
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(rec, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// checkCompleteSession requires the example session's final state.
func checkCompleteSession(t *testing.T, js jetstream.JetStream, sid string) {
	t.Helper()
	s := state(t, js, sid)
	if s.Status != "closed" || s.TurnsStarted != 1 || s.Envelopes != 8 || s.Decisions["allow"] != 8 || len(s.Violations) != 0 {
		t.Errorf("session %s: %+v; want closed, 1 turn, 8 envelopes, 8 allows, no violations", sid, s)
	}
}

// checkExactlyOnce requires one decision for each inbound sequence 1..n.
func checkExactlyOnce(t *testing.T, js jetstream.JetStream, n int) {
	t.Helper()
	by := decisionsBySeq(t, js)
	var missing, twice []uint64
	for seq := uint64(1); seq <= uint64(n); seq++ {
		switch len(by[seq]) {
		case 0:
			missing = append(missing, seq)
		case 1:
		default:
			twice = append(twice, seq)
		}
	}
	if len(missing)+len(twice) > 0 || len(by) != n {
		t.Fatalf("%d envelopes: missing decisions %v, decided twice %v, answered sequences %d", n, missing, twice, len(by))
	}
}

// TestAgainstExternalServer is the README walkthrough against a separate
// nats-server: the processor creates what it needs, decides each envelope of
// the example session, and keeps the session's state in KV.
func TestAgainstExternalServer(t *testing.T) {
	url, _ := natsServer(t, t.TempDir())
	p := startProcessor(t, "--nats-url", url)
	nc := connect(t, url)
	js := natstest.JetStream(t, nc)
	for _, e := range exampleEnvelopes(exampleSession) {
		if err := nc.Publish(e.subject, e.data); err != nil { // as `nats pub` does
			t.Fatal(err)
		}
	}
	awaitCount(t, js, "ACS_DECISIONS", 8, 20*time.Second)
	by := decisionsBySeq(t, js)
	for seq := uint64(1); seq <= 8; seq++ {
		var resp struct {
			Result struct {
				RequestID string `json:"request_id"`
				Decision  string `json:"decision"`
			} `json:"result"`
		}
		if len(by[seq]) != 1 {
			t.Fatalf("seq %d has %d decisions", seq, len(by[seq]))
		}
		m := by[seq][0]
		_ = json.Unmarshal(m.Data(), &resp)
		want := fmt.Sprintf("a1c7e9f0-3b2d-4c5e-8f61-0d2e4a6b8c%02d", seq)
		if resp.Result.Decision != "allow" || resp.Result.RequestID != want || m.Subject() != "acs.decisions.default."+exampleSession {
			t.Errorf("seq %d: %s on %s, want allow for %s", seq, m.Data(), m.Subject(), want)
		}
	}
	checkCompleteSession(t, js, exampleSession)
	p.stop(t)
	if !regexp.MustCompile(`"message":"turnguard stopped"`).MatchString(p.out.String()) {
		t.Errorf("no clean stop in the log:\n%s", p.out)
	}
}

// TestKill9 kills the processor with SIGKILL twice while sessions stream in,
// restarting it each time. Every envelope still gets exactly one decision
// and every session ends with exact counters.
func TestKill9(t *testing.T) {
	const sessions = 150
	url, _ := natsServer(t, t.TempDir())
	nc := connect(t, url)
	js := natstest.JetStream(t, nc)
	p := startProcessor(t, "--nats-url", url, "--batch-size", "16")
	published := make(chan error, 1)
	go func() {
		pjs := natstest.JetStream(t, nc, jetstream.WithPublishAsyncMaxPending(64))
		for i := range sessions {
			for _, e := range exampleEnvelopes(sessionID(i)) {
				if _, err := pjs.PublishMsgAsync(&nats.Msg{Subject: e.subject, Data: e.data}); err != nil {
					published <- err
					return
				}
			}
			// Paced, so the kills below land while envelopes still arrive.
			time.Sleep(10 * time.Millisecond)
		}
		<-pjs.PublishAsyncComplete()
		published <- nil
	}()
	total := sessions * 8
	for kill := 1; kill <= 2; kill++ {
		awaitCount(t, js, "ACS_DECISIONS", kill*total/3, 60*time.Second)
		p.kill()
		at := count(t, js, "ACS_DECISIONS")
		t.Logf("SIGKILL %d with %d of %d envelopes decided", kill, at, total)
		if at >= total {
			t.Fatal("killed after everything was decided; the test proves nothing")
		}
		p = startProcessor(t, "--nats-url", url, "--batch-size", "16")
	}
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	awaitCount(t, js, "ACS_DECISIONS", total, 90*time.Second)
	// A duplicate could only come from a redelivery: once every consumer
	// of the inbound stream has delivered and had acknowledged everything
	// (what a killed processor held comes back after the ack wait), no
	// further decision can appear.
	awaitAcked(t, js, "ACS_HOOKS", 90*time.Second)
	checkExactlyOnce(t, js, total)
	for i := range sessions {
		checkCompleteSession(t, js, sessionID(i))
	}
	p.stop(t)
}

// embeddedWithExample starts a processor with its embedded server on a
// loopback port and a data directory of the test's own, and has it decide
// the example session.
func embeddedWithExample(t *testing.T) (dataDir, listen string, p *proc, nc *nats.Conn) {
	t.Helper()
	dataDir = filepath.Join(t.TempDir(), "data")
	p = startProcessor(t, "--data-dir", dataDir, "--listen", "127.0.0.1:0")
	listen = addrOf(t, p, natsListener)
	nc = connectAs(t, "nats://"+listen, filepath.Join(dataDir, "creds", "admin.creds"))
	js := natstest.JetStream(t, nc)
	for _, e := range exampleEnvelopes(exampleSession) {
		if err := nc.Publish(e.subject, e.data); err != nil {
			t.Fatal(err)
		}
	}
	awaitCount(t, js, "ACS_DECISIONS", 8, 20*time.Second)
	return dataDir, listen, p, nc
}

// TestEmbeddedServer is the quick start: no NATS installed, the processor
// starts its own server on a loopback port with its data under --data-dir,
// and the state survives a restart.
func TestEmbeddedServer(t *testing.T) {
	data, listen, p, nc := embeddedWithExample(t)
	nc.Close()
	p.stop(t)
	if _, err := os.Stat(filepath.Join(data, "jetstream")); err != nil {
		t.Fatalf("no JetStream store under --data-dir: %v", err)
	}

	// Back on the port the first start reported, as a restarted service.
	startProcessor(t, "--data-dir", data, "--listen", listen)
	nc = connectAs(t, "nats://"+listen, filepath.Join(data, "creds", "admin.creds"))
	js := natstest.JetStream(t, nc)
	checkCompleteSession(t, js, exampleSession)
	// The session ended before the restart; a late step is refused.
	late := exampleEnvelopes(exampleSession)[2]
	late.data = []byte(strings.ReplaceAll(string(late.data), "a1c7e9f0-3b2d-4c5e-8f61-0d2e4a6b8c03", "a1c7e9f0-3b2d-4c5e-8f61-0d2e4a6b8c99"))
	if err := nc.Publish(late.subject, late.data); err != nil {
		t.Fatal(err)
	}
	awaitCount(t, js, "ACS_DECISIONS", 9, 20*time.Second)
	if m := decisionsBySeq(t, js)[9]; len(m) != 1 || !strings.Contains(string(m[0].Data()), `"reason_codes":["session_closed"]`) {
		t.Fatalf("late step: %v", m)
	}
}

// TestDataDirIsExclusiveAndReplayable: while a processor runs on a data
// directory, a second processor and replay refuse to open it (two servers
// on one store would corrupt it); once it stops, replay reads the store.
func TestDataDirIsExclusiveAndReplayable(t *testing.T) {
	data, listen, p, nc := embeddedWithExample(t)

	second := start(t, "processor", "--data-dir", data, "--listen", "none")
	if code := second.wait(t, 30*time.Second); code != 1 || !strings.Contains(second.out.String(), "data directory in use by another turnguard process") {
		t.Fatalf("second processor on the same data dir: exit %d\n%s", code, second.out)
	}
	busy := start(t, "replay", "sessions", "--data-dir", data)
	if code := busy.wait(t, 30*time.Second); code != 2 || !strings.Contains(busy.out.String(), "a processor is running on") {
		t.Fatalf("replay on a store in use: exit %d\n%s", code, busy.out)
	}
	live := start(t, "replay", "timeline", "--nats-url", "nats://"+listen, "--nats-creds", filepath.Join(data, "creds", "admin.creds"), "--session", exampleSession, "--skew-window", "0")
	if code := live.wait(t, 30*time.Second); code != 0 || !strings.Contains(live.out.String(), "steps   8 envelopes, 8 chain entries") || !strings.Contains(live.out.String(), "chain   intact") {
		t.Fatalf("replay against the running processor: exit %d\n%s", code, live.out)
	}
	// Connected to the running processor's NATS, replay verify checks the
	// receipts with the key in the processor's data dir on this host,
	// without being told, and says which key it used.
	liveVerify := start(t, "replay", "verify", "--nats-url", "nats://"+listen, "--nats-creds", filepath.Join(data, "creds", "admin.creds"),
		"--data-dir", data, "--session", exampleSession, "--skew-window", "0")
	if code := liveVerify.wait(t, 30*time.Second); code != 0 || !strings.Contains(liveVerify.out.String(), "result     verified") ||
		!strings.Contains(liveVerify.out.String(), "checking receipts with "+filepath.Join(data, "receipt-key.pub")) {
		t.Fatalf("replay verify against the running processor, its data dir on this host: exit %d\n%s", code, liveVerify.out)
	}
	nc.Close()
	p.stop(t)

	sessions := start(t, "replay", "sessions", "--data-dir", data)
	if code := sessions.wait(t, 30*time.Second); code != 0 || !strings.Contains(sessions.out.String(), exampleSession) {
		t.Fatalf("replay sessions: exit %d\n%s", code, sessions.out)
	}
	verify := start(t, "replay", "verify", "--data-dir", data, "--session", exampleSession, "--skew-window", "0")
	if code := verify.wait(t, 30*time.Second); code != 0 || !strings.Contains(verify.out.String(), "result     verified") {
		t.Fatalf("replay verify: exit %d\n%s", code, verify.out)
	}
}

// TestIncompatibleExistingStream: an existing stream that does not match
// the flags is a clear startup error, and nothing is changed.
func TestIncompatibleExistingStream(t *testing.T) {
	url, _ := natsServer(t, t.TempDir())
	startProcessor(t, "--nats-url", url).stop(t)
	p := start(t, "processor", "--nats-url", url, "--partitions", "8")
	if code := p.wait(t, 30*time.Second); code != 1 {
		t.Fatalf("exit code %d, want 1\n%s", code, p.out)
	}
	if out := p.out.String(); !strings.Contains(out, "ACS_HOOKS exists with an incompatible configuration") || !strings.Contains(out, "--partitions") {
		t.Fatalf("startup error does not say what is wrong:\n%s", out)
	}
	startProcessor(t, "--nats-url", url).stop(t)
}

// TestNearLimitMessageOnDefaultServer: on a server with the default 1 MiB
// max_payload, a refused message close to ACS_HOOKS' 1 MiB limit cannot be
// copied into the dead-letter stream with its headers. The dead letter then
// points at the original in ACS_HOOKS instead, and the partition goes on.
func TestNearLimitMessageOnDefaultServer(t *testing.T) {
	url, _ := natsServer(t, t.TempDir())
	startProcessor(t, "--nats-url", url)
	nc := connect(t, url)
	js := natstest.JetStream(t, nc)
	subject := "acs.hooks.default." + exampleSession + ".userMessage"
	big := []byte(strings.Repeat("x", 1_048_400))
	if _, err := js.Publish(withTimeout(t, 10*time.Second), subject, big); err != nil {
		t.Fatal(err)
	}
	for _, e := range exampleEnvelopes(exampleSession) {
		if err := nc.Publish(e.subject, e.data); err != nil {
			t.Fatal(err)
		}
	}
	awaitCount(t, js, "ACS_DECISIONS", 9, 30*time.Second)
	awaitCount(t, js, "ACS_DLQ", 1, 10*time.Second)
	dlq, err := js.Stream(withTimeout(t, 5*time.Second), "ACS_DLQ")
	if err != nil {
		t.Fatal(err)
	}
	m, err := dlq.GetMsg(withTimeout(t, 5*time.Second), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Data) != 0 || !strings.Contains(m.Header.Get("Acs-Body-Omitted"), "ACS_HOOKS sequence 1") || m.Header.Get("Acs-Error-Reason") != "envelope_too_large" {
		t.Fatalf("dead letter: %d bytes, headers %v", len(m.Data), m.Header)
	}
	checkCompleteSession(t, js, exampleSession)
}

// TestRulesReload changes the rule file under a running processor: the new
// rules apply without a restart; a broken file is refused whole, the last
// good rules keep deciding, and an operational alert says why; SIGHUP
// reloads too.
func TestRulesReload(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "rules.yaml")
	writeRules := func(tool string) {
		t.Helper()
		src := fmt.Sprintf(`apiVersion: turnguard/v1
kind: RuleSet
metadata: {name: reload-test}
rules:
  - id: NO-TOOL
    title: No %[1]s
    severity: high
    on: [toolCallRequest]
    when: tool.name == "%[1]s"
    decision: deny
`, tool)
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeRules("shell")
	p := startProcessor(t, "--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0", "--rules", file)
	listen := addrOf(t, p, natsListener)
	nc := connectAs(t, "nats://"+listen, filepath.Join(dir, "data", "creds", "admin.creds"))
	js := natstest.JetStream(t, nc)
	ops, err := nc.SubscribeSync("acs.alerts._system.>")
	if err != nil {
		t.Fatal(err)
	}
	sid := sessionID(42)
	n := 0
	decide := func(tool string) string {
		t.Helper()
		n++
		env := fmt.Sprintf(`{"jsonrpc":"2.0","method":"steps/toolCallRequest","id":%d,"params":{"acs_version":"0.1.0","request_id":"00000000-0000-4000-8000-%012d","timestamp":"2026-12-02T10:00:00Z","metadata":{"agent_id":"a","session_id":"%s"},"payload":{"tool":{"name":"%s"},"arguments":{}}}}`, n, n, sid, tool)
		if err := nc.Publish("acs.hooks.default."+sid+".toolCallRequest", []byte(env)); err != nil {
			t.Fatal(err)
		}
		awaitCount(t, js, "ACS_DECISIONS", n, 20*time.Second)
		m := decisionsBySeq(t, js)[uint64(n)]
		if len(m) != 1 {
			t.Fatalf("seq %d: %d decisions", n, len(m))
		}
		return m[0].Headers().Get("Acs-Decision")
	}
	awaitLog := func(what string, times int) {
		t.Helper()
		testwait.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
			if strings.Count(p.out.String(), what) < times {
				return fmt.Errorf("no %q in the log:\n%s", what, p.out)
			}
			return nil
		})
	}
	if d := decide("shell"); d != "deny" {
		t.Fatalf("shell under the first rules: %s", d)
	}
	writeRules("python")
	awaitLog(`"message":"rules reloaded"`, 1)
	if d1, d2 := decide("shell"), decide("python"); d1 != "allow" || d2 != "deny" {
		t.Fatalf("after the change: shell %s, python %s; want allow, deny", d1, d2)
	}
	if err := os.WriteFile(file, []byte("apiVersion: turnguard/v1\nkind: RuleSet\nmetadata: {name: reload-test}\nrules:\n  - id: NO-TOOL\n    whn: oops\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	awaitLog(`"message":"rule set refused; the last good one keeps running"`, 1)
	m, err := ops.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatalf("no operational alert: %v", err)
	}
	if m.Subject != "acs.alerts._system.high.rules_reload_failed" || !strings.Contains(string(m.Data), `unknown field \"whn\"`) || !strings.Contains(string(m.Data), "rules.yaml:6:5") {
		t.Fatalf("operational alert on %s: %s", m.Subject, m.Data)
	}
	if d := decide("python"); d != "deny" {
		t.Fatalf("the last good rules must keep deciding: python %s", d)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	awaitLog(`"message":"SIGHUP: reloading rules"`, 1)
	awaitLog(`"message":"rule set refused; the last good one keeps running"`, 2)
	writeRules("ruby")
	awaitLog(`"message":"rules reloaded"`, 2)
	if d := decide("ruby"); d != "deny" {
		t.Fatalf("after fixing the file: ruby %s", d)
	}
	p.stop(t)
}

// TestEmbeddedPortInUse: when the client port is taken the processor says
// so and exits, rather than run unreachable while the nats CLI talks to
// whatever holds the port.
func TestEmbeddedPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p := start(t, "processor", "--data-dir", t.TempDir(), "--listen", l.Addr().String())
	if code := p.wait(t, 15*time.Second); code != 1 || !strings.Contains(p.out.String(), "address already in use") {
		t.Fatalf("exit %d:\n%s", code, p.out)
	}
}

// TestHTTPEndpoint runs the binary as an ACS Guardian over HTTP with keys
// required: an unsigned hello is refused -32004, a step before the
// handshake -32003, both signed, and the receipt key is served and was
// logged at start.
func TestHTTPEndpoint(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.yaml")
	if err := os.WriteFile(keys, []byte("keys:\n  - {id: k1, secret: \"hex:"+strings.Repeat("ab", 32)+"\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	callerArgs, token := httpCaller(t, dir, "default")
	p := startProcessor(t, append([]string{"--data-dir", dir, "--listen", "none", "--http", "127.0.0.1:0", "--keys", keys, "--require-signatures", "--skew-window", "5m"}, callerArgs...)...)
	httpAddr := addrOf(t, p, httpListener)
	post := func(body string) map[string]any {
		t.Helper()
		resp, err := httpClient.Do(endpoint{base: "http://" + httpAddr, token: token}.request(t, []byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("HTTP %d: %v", resp.StatusCode, err)
		}
		return out
	}
	hello := post(`{"jsonrpc":"2.0","method":"handshake/hello","id":1,"params":{"acs_version":"0.1.0","request_id":"00000000-0000-4000-8000-000000000001","timestamp":"2026-12-02T10:00:00Z","metadata":{"agent_id":"a","session_id":"` + sessionID(1) + `"},"payload":{"acs_versions_supported":["0.1.0"],"methods_implemented":["steps/toolCallRequest"],"transports_supported":["http"],"provenance_producer":"none"}}}`)
	// Unsigned under --require-signatures: refused, and the refusal is
	// signed (TestConformance holds the signed handshake to the rest).
	if e, _ := hello["error"].(map[string]any); e["code"] != float64(-32004) || e["signature"] == nil {
		t.Fatalf("unsigned hello: %v", hello)
	}
	refused := post(string(exampleEnvelopes(sessionID(2))[0].data))
	if e, _ := refused["error"].(map[string]any); e["code"] != float64(-32003) || e["signature"] == nil {
		t.Fatalf("a step before any handshake: %v", refused)
	}
	resp, err := http.Get("http://" + httpAddr + "/receipt-key")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(p.out.String(), resp.Header.Get("Acs-Receipt-Key")) {
		t.Fatalf("GET /receipt-key: %d %q", resp.StatusCode, resp.Header.Get("Acs-Receipt-Key"))
	}
	if _, err := os.Stat(filepath.Join(dir, "receipt-key.pem")); err != nil {
		t.Fatalf("receipt key not created in the data dir: %v", err)
	}
	// The public key next to it, for clients on the host: the key served.
	served, _ := io.ReadAll(resp.Body)
	if pub, err := os.ReadFile(filepath.Join(dir, "receipt-key.pub")); err != nil || !bytes.Equal(pub, served) {
		t.Fatalf("receipt-key.pub %q, %v; GET /receipt-key %q", pub, err, served)
	}
	p.stop(t)
}

// TestReceiptsOff: --receipt-key none decides without Ed25519 receipts and
// writes no key, saying so in the log; the default signs every decision.
func TestReceiptsOff(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want bool
	}{{"none", false}, {"", true}} {
		t.Run(fmt.Sprintf("receipt-key %q", tc.key), func(t *testing.T) {
			url, _ := natsServer(t, t.TempDir())
			dataDir := t.TempDir()
			args := []string{"--nats-url", url, "--data-dir", dataDir}
			if tc.key != "" {
				args = append(args, "--receipt-key", tc.key)
			}
			p := startProcessor(t, args...)
			nc := connect(t, url)
			js := natstest.JetStream(t, nc)
			for _, e := range exampleEnvelopes(exampleSession) {
				if err := nc.Publish(e.subject, e.data); err != nil {
					t.Fatal(err)
				}
			}
			awaitCount(t, js, "ACS_DECISIONS", 8, 20*time.Second)
			for seq, ms := range decisionsBySeq(t, js) {
				if got := ms[0].Headers().Get("Acs-Receipt") != ""; got != tc.want {
					t.Errorf("seq %d: receipt %v, want %v", seq, got, tc.want)
				}
			}
			_, err := os.Stat(filepath.Join(dataDir, "receipt-key.pem"))
			if keyWritten := err == nil; keyWritten != tc.want {
				t.Errorf("receipt key written: %v, want %v", keyWritten, tc.want)
			}
			if off := strings.Contains(p.out.String(), "decision receipts are off"); off == tc.want {
				t.Errorf("log says receipts off: %v\n%s", off, p.out)
			}
			p.stop(t)
		})
	}
}
