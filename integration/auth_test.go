package integration

import (
	"context"
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/pkg/client"
)

// violations collects a connection's asynchronous permission errors.
type violations chan error

func (v violations) option() nats.Option {
	return nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case v <- err:
		default:
		}
	})
}

// expectDenied flushes nc and waits for the server's permissions violation
// for what was just sent on it.
func (v violations) expectDenied(t *testing.T, nc *nats.Conn, what string) {
	t.Helper()
	if err := nc.Flush(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	select {
	case err := <-v:
		if !errors.Is(err, nats.ErrPermissionViolation) {
			t.Fatalf("%s: %v, want a permissions violation", what, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: allowed, want a permissions violation", what)
	}
}

// TestEmbeddedAuthentication is the secure default: the embedded server
// admits no one without a credential, writes one per role on first start,
// and each role can do its job and nothing else. A credential minted while
// the processor runs works at once.
func TestEmbeddedAuthentication(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	url := "nats://" + addrOf(t, startProcessor(t, "--data-dir", dataDir, "--listen", "127.0.0.1:0"), natsListener)
	creds := filepath.Join(dataDir, "creds")
	security := connectAs(t, url, filepath.Join(creds, "security.creds"))

	if nc, err := nats.Connect(url); err == nil {
		nc.Close()
		t.Fatal("a client without credentials connected to the embedded server")
	} else if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("connect without credentials: %v, want an authorization violation", err)
	}
	for _, role := range []string{"agent", "security", "admin"} {
		fi, err := os.Stat(filepath.Join(creds, role+".creds"))
		if err != nil {
			t.Fatalf("%s.creds: %v", role, err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s.creds mode %v, want 0600", role, fi.Mode().Perm())
		}
	}
	if _, err := os.Stat(filepath.Join(creds, "processor.creds")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the embedded processor's own credential lies in a file: %v", err)
	}

	// The agent plays the example session; the security role sees every
	// decision and the state.
	decisions, err := security.SubscribeSync("acs.decisions.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := security.Flush(); err != nil {
		t.Fatal(err)
	}
	agentErrs := make(violations, 16)
	agent := connectAs(t, url, filepath.Join(creds, "agent.creds"), agentErrs.option())
	agentJS, err := jetstream.New(agent)
	if err != nil {
		t.Fatal(err)
	}
	ctx := withTimeout(t, time.Minute)
	for _, e := range exampleEnvelopes(exampleSession) {
		if _, err := agentJS.Publish(ctx, e.subject, e.data); err != nil {
			t.Fatalf("agent publishes %s: %v", e.subject, err)
		}
	}
	for i := range 8 {
		if _, err := decisions.NextMsg(20 * time.Second); err != nil {
			t.Fatalf("decision %d: %v", i+1, err)
		}
	}
	secJS, err := jetstream.New(security)
	if err != nil {
		t.Fatal(err)
	}
	checkCompleteSession(t, secJS, exampleSession)

	// pkg/client with the agent credential, verifying the receipts with
	// the public key the processor wrote.
	key, err := client.LoadReceiptKey(filepath.Join(dataDir, "receipt-key.pub"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(agent, client.Options{TrustedKeys: []ed25519.PublicKey{key}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Decide(ctx, examples.Session(sessionID(7))[0].Data)
	if err != nil || d.FromPosture || !d.Verified || d.Disposition != "allow" {
		t.Fatalf("pkg/client as the agent: %+v, %v", d, err)
	}

	agent.Publish("acs.hooks.acme."+exampleSession+".turnEnd", []byte(`{}`))
	agentErrs.expectDenied(t, agent, "agent of tenant default publishes as tenant acme")
	agent.Publish("acs.decisions.default."+exampleSession, []byte(`{"result":{"decision":"allow"}}`))
	agentErrs.expectDenied(t, agent, "agent forges a decision")
	agent.Subscribe("acs.alerts.>", func(*nats.Msg) {})
	agentErrs.expectDenied(t, agent, "agent reads alerts")
	agent.Publish("$JS.API.STREAM.PURGE.ACS_DECISIONS", nil)
	agentErrs.expectDenied(t, agent, "agent purges ACS_DECISIONS")

	adminErrs := make(violations, 16)
	admin := connectAs(t, url, filepath.Join(creds, "admin.creds"), adminErrs.option())
	admin.Publish("$KV.ACS_PROCESSORS.fake-1", []byte(`{"id":"fake-1","owns":[0,1,2,3]}`))
	adminErrs.expectDenied(t, admin, "admin writes a fake processor record")
	admin.Publish("acs.alerts._system.rules_reload_failed", []byte(`{}`))
	adminErrs.expectDenied(t, admin, "admin forges an operational alert")

	// A credential for another tenant, minted while the processor runs.
	acmeFile := filepath.Join(t.TempDir(), "acme.creds")
	add := start(t, "processor", "creds", "add", "--data-dir", dataDir, "--role", "agent", "--tenant", "acme", "--out", acmeFile)
	if code := add.wait(t, 30*time.Second); code != 0 || !strings.Contains(add.out.String(), "--inbox-prefix _INBOX.agent.acme") {
		t.Fatalf("creds add: exit %d\n%s", code, add.out)
	}
	acmeErrs := make(violations, 16)
	acme := connectAs(t, url, acmeFile, acmeErrs.option())
	acmeJS, err := jetstream.New(acme)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := acmeJS.Publish(ctx, "acs.hooks.acme.s-1.sessionStart", []byte(`{}`)); err != nil {
		t.Fatalf("agent acme publishes in its tenant: %v", err)
	}
	acme.Subscribe("acs.decisions.default.>", func(*nats.Msg) {})
	acmeErrs.expectDenied(t, acme, "agent acme reads tenant default's decisions")
	acme.Publish("acs.hooks.default."+exampleSession+".sessionEnd", []byte(`{}`))
	acmeErrs.expectDenied(t, acme, "agent acme publishes into tenant default")

	procFile := filepath.Join(t.TempDir(), "processor.creds")
	addProc := start(t, "processor", "creds", "add", "--data-dir", dataDir, "--role", "processor", "--out", procFile)
	if code := addProc.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("creds add --role processor: exit %d\n%s", code, addProc.out)
	}
	probeReplies(t, ctx, acme, "acme", security, connectAs(t, url, procFile))

	bad := start(t, "processor", "creds", "add", "--data-dir", dataDir, "--role", "agent", "--tenant", ">")
	if code := bad.wait(t, 30*time.Second); code != 1 || !strings.Contains(bad.out.String(), "tenant") {
		t.Fatalf("creds add with a wildcard tenant: exit %d\n%s", code, bad.out)
	}
}

// TestAuthNone is the development mode: open, said loudly, and refused off
// loopback.
func TestAuthNone(t *testing.T) {
	p := startProcessor(t, "--data-dir", filepath.Join(t.TempDir(), "data"), "--listen", "127.0.0.1:0", "--auth", "none")
	connect(t, "nats://"+addrOf(t, p, natsListener)).Close()
	poll(t, 10*time.Second, "the warning", func() bool { return strings.Contains(p.out.String(), "AUTHENTICATION IS OFF") })

	open := start(t, "processor", "--data-dir", filepath.Join(t.TempDir(), "data"), "--listen", "0.0.0.0:0", "--auth", "none")
	if code := open.wait(t, 30*time.Second); code != 2 || !strings.Contains(open.out.String(), "--auth none would open NATS to the network") {
		t.Fatalf("--auth none off loopback: exit %d\n%s", code, open.out)
	}
	plain := start(t, "processor", "--data-dir", filepath.Join(t.TempDir(), "data"), "--listen", "0.0.0.0:0")
	if code := plain.wait(t, 30*time.Second); code != 2 || !strings.Contains(plain.out.String(), "--listen-tls-cert") {
		t.Fatalf("plaintext NATS off loopback: exit %d\n%s", code, plain.out)
	}
}

// TestExternalServerWithShippedConfig runs a real nats-server with
// deploy/nats/nats-server.conf and the authority `processor creds init`
// lays out: the processor works with its credential, and an agent of
// tenant a cannot act as b, read b's decisions, or touch any stream.
func TestExternalServerWithShippedConfig(t *testing.T) {
	dir := t.TempDir()
	initc := start(t, "processor", "creds", "init", "--dir", dir)
	if code := initc.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("creds init: exit %d\n%s", code, initc.out)
	}
	conf, err := os.ReadFile("../deploy/nats/nats-server.conf")
	if err != nil {
		t.Fatal(err)
	}
	// The shipped file as is, but for where its store lies.
	conf = []byte(strings.Replace(string(conf), "/var/lib/turnguard/nats", filepath.Join(dir, "store"), 1))
	if err := os.WriteFile(filepath.Join(dir, "nats-server.conf"), conf, 0o600); err != nil {
		t.Fatal(err)
	}
	url, _ := natsServerWith(t, "-c", filepath.Join(dir, "nats-server.conf"))
	for _, tenant := range []string{"a", "b"} {
		add := start(t, "processor", "creds", "add", "--auth-dir", filepath.Join(dir, "auth"), "--role", "agent", "--tenant", tenant, "--out", filepath.Join(dir, tenant+".creds"))
		if code := add.wait(t, 30*time.Second); code != 0 {
			t.Fatalf("creds add: exit %d\n%s", code, add.out)
		}
	}
	security := connectAs(t, url, filepath.Join(dir, "creds", "security.creds"))
	startProcessor(t, "--nats-url", url, "--nats-creds", filepath.Join(dir, "creds", "processor.creds"))

	if nc, err := nats.Connect(url); err == nil {
		nc.Close()
		t.Fatal("a client without credentials connected to the configured server")
	}
	aErrs := make(violations, 16)
	a := connectAs(t, url, filepath.Join(dir, "a.creds"), aErrs.option())
	mine, err := a.SubscribeSync("acs.decisions.a.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	aJS, err := jetstream.New(a)
	if err != nil {
		t.Fatal(err)
	}
	ctx := withTimeout(t, time.Minute)
	// The processor creates the streams on start; publish once they exist.
	var sessionStart envelope
	for _, e := range exampleEnvelopes(exampleSession) {
		sessionStart = envelope{subject: strings.Replace(e.subject, ".default.", ".a.", 1), data: e.data}
		break
	}
	poll(t, 30*time.Second, "ACS_HOOKS", func() bool {
		_, err := aJS.Publish(ctx, sessionStart.subject, sessionStart.data)
		return err == nil
	})
	if m, err := mine.NextMsg(20 * time.Second); err != nil {
		t.Fatalf("agent a gets its decision: %v", err)
	} else if m.Header.Get("Acs-Decision") != "allow" {
		t.Fatalf("decision %q", m.Header.Get("Acs-Decision"))
	}
	secJS, err := jetstream.New(security)
	if err != nil {
		t.Fatal(err)
	}
	hooks, err := secJS.Stream(ctx, "ACS_HOOKS")
	if err != nil {
		t.Fatal(err)
	}
	before := hooks.CachedInfo().State.Msgs

	for _, c := range []struct{ what, subject string }{
		{"publish as tenant b", "acs.hooks.b.s-1.sessionStart"},
		{"forge a decision", "acs.decisions.a." + exampleSession},
		{"forge an alert", "acs.alerts.a.taint"},
		{"write state", "$KV.ACS_TURNSTATE.a." + exampleSession},
		{"register a processor", "$KV.ACS_PROCESSORS.fake"},
		{"delete ACS_HOOKS", "$JS.API.STREAM.DELETE.ACS_HOOKS"},
		{"purge ACS_DECISIONS", "$JS.API.STREAM.PURGE.ACS_DECISIONS"},
		{"read stream info", "$JS.API.STREAM.INFO.ACS_DECISIONS"},
		{"create a consumer", "$JS.API.CONSUMER.CREATE.ACS_DECISIONS"},
	} {
		a.Publish(c.subject, []byte(`{}`))
		aErrs.expectDenied(t, a, "agent a: "+c.what)
	}
	a.Subscribe("acs.decisions.b.>", func(*nats.Msg) {})
	aErrs.expectDenied(t, a, "agent a reads tenant b's decisions")
	a.Subscribe("_INBOX.>", func(*nats.Msg) {})
	aErrs.expectDenied(t, a, "agent a reads every reply")

	info, err := hooks.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != before {
		t.Fatalf("ACS_HOOKS went from %d to %d messages after the refused attempts", before, info.State.Msgs)
	}

	probeReplies(t, ctx, a, "a", security, connectAs(t, url, filepath.Join(dir, "creds", "processor.creds")))
}

// probeReplies is issue 23's findings 1 and 2 against a running
// deployment: an agent's publish acks and the security role's reads
// replied to turnguard's buckets and streams, and security push consumers
// delivering onto them, store nothing there. Each target is checked by
// subject once a sentinel the processor credential writes to the same
// stream afterwards is acknowledged (the stream stores in order).
func probeReplies(t *testing.T, ctx context.Context, agent *nats.Conn, tenant string, security, proc *nats.Conn) {
	t.Helper()
	procJS, err := jetstream.New(proc)
	if err != nil {
		t.Fatal(err)
	}
	targets := []struct{ subject, stream, sentinel string }{
		{"$KV.ACS_TURNSTATE.zz.probe", "KV_ACS_TURNSTATE", "$KV.ACS_TURNSTATE.zz.probe-sentinel"},
		{"acs.decisions.zz.probe", "ACS_DECISIONS", "acs.decisions.zz.probe-sentinel"},
		{"acs.alerts._system.critical.probe", "ACS_ALERTS", "acs.alerts.zz.probe-sentinel"},
		{"$KV.ACS_PROCESSORS.probe-fake", "KV_ACS_PROCESSORS", "$KV.ACS_PROCESSORS.probe-sentinel"},
	}
	agentJS, err := jetstream.New(agent)
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range targets {
		// The agent's envelope with a chosen reply subject.
		if err := agent.PublishRequest("acs.hooks."+tenant+".probe.turnStart", tg.subject, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		// The security role's reads, replied to the target.
		for _, req := range []struct{ subject, body string }{
			{"$JS.API.DIRECT.GET.KV_ACS_PROCESSORS.$KV.ACS_PROCESSORS.probe-fake", ""},
			{"$JS.API.DIRECT.GET.ACS_DECISIONS", `{"seq":1}`},
			{"$JS.API.STREAM.INFO.ACS_ALERTS", ""},
		} {
			if err := security.PublishRequest(req.subject, tg.subject, []byte(req.body)); err != nil {
				t.Fatal(err)
			}
		}
		// A push consumer delivering onto the target: refused.
		req := `{"stream_name":"ACS_DECISIONS","config":{"deliver_subject":"` + tg.subject + `","ack_policy":"none"}}`
		m, err := security.Request("$JS.API.CONSUMER.CREATE.ACS_DECISIONS", []byte(req), 10*time.Second)
		if err != nil {
			t.Fatalf("security consumer create: %v", err)
		}
		if !strings.Contains(string(m.Data), `"error"`) {
			t.Errorf("security created a push consumer delivering to %s: %.120s", tg.subject, m.Data)
		}
	}
	// Both still get their own replies.
	if _, err := agentJS.Publish(ctx, "acs.hooks."+tenant+".probe.turnEnd", []byte(`{}`)); err != nil {
		t.Fatalf("the agent's own publish ack: %v", err)
	}
	secJS, err := jetstream.New(security)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := secJS.KeyValue(ctx, "ACS_PROCESSORS")
	if err != nil {
		t.Fatalf("security opens ACS_PROCESSORS: %v", err)
	}
	if _, err := kv.ListKeys(ctx); err != nil {
		t.Fatalf("security lists the members (a push consumer on its inbox): %v", err)
	}
	for _, tg := range targets {
		if _, err := procJS.Publish(ctx, tg.sentinel, []byte(`{}`)); err != nil {
			t.Fatalf("sentinel %s: %v", tg.sentinel, err)
		}
		s, err := procJS.Stream(ctx, tg.stream)
		if err != nil {
			t.Fatal(err)
		}
		if m, err := s.GetLastMsgForSubject(ctx, tg.subject); err == nil {
			t.Errorf("%s holds message %d on %s, written through a reply or a delivery: %.80s", tg.stream, m.Sequence, tg.subject, m.Data)
		} else if !errors.Is(err, jetstream.ErrMsgNotFound) {
			t.Fatalf("%s last message on %s: %v", tg.stream, tg.subject, err)
		}
	}
}
