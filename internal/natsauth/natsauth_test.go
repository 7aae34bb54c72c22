package natsauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/embedded"
	"github.com/turnguard/turnguard/internal/natsauth"
	"github.com/turnguard/turnguard/internal/secgate"
	"github.com/turnguard/turnguard/internal/topology"
	"github.com/turnguard/turnguard/pkg/client"
)

// newWorld starts an authenticated embedded server with turnguard's
// topology (created as the processor) and returns how to connect to it as
// a user, through a credentials file as users do.
func newWorld(t testing.TB) func(u natsauth.User) *conn {
	t.Helper()
	dir := t.TempDir()
	auth, created, err := natsauth.LoadOrCreate(filepath.Join(dir, "auth"))
	if err != nil || !created {
		t.Fatalf("LoadOrCreate: created %v, %v", created, err)
	}
	srv := startEmbedded(t, embedded.Config{DataDir: dir, Auth: auth, Logger: zerolog.Nop()})
	connect := func(u natsauth.User) *conn {
		t.Helper()
		path := filepath.Join(dir, "creds", u.DisplayName()+".creds")
		if _, err := auth.WriteCreds(path, u); err != nil {
			t.Fatal(err)
		}
		opts, err := client.CredentialsOptions(path)
		if err != nil {
			t.Fatal(err)
		}
		c := &conn{errs: make(chan error, 64)}
		opts = append(opts, nats.InProcessServer(srv), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case c.errs <- err:
			default:
			}
		}))
		if c.nc, err = nats.Connect("", opts...); err != nil {
			t.Fatalf("connect as %s: %v", u.DisplayName(), err)
		}
		t.Cleanup(c.nc.Close)
		if c.js, err = jetstream.New(c.nc); err != nil {
			t.Fatal(err)
		}
		return c
	}
	proc := connect(natsauth.User{Role: natsauth.RoleProcessor})
	stop, err := secgate.Start(proc.nc, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	ctx := context.Background()
	if err := topology.Ensure(ctx, proc.js, topology.Default()); err != nil {
		t.Fatalf("the processor role cannot create the topology: %v", err)
	}
	return connect
}

// startEmbedded starts an embedded server for the test, shut down when it
// ends.
func startEmbedded(t testing.TB, cfg embedded.Config) *server.Server {
	t.Helper()
	srv, err := embedded.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	return srv
}

type conn struct {
	nc   *nats.Conn
	js   jetstream.JetStream
	errs chan error
}

// denied waits for the server's permissions violation for what was just
// sent.
func (c *conn) denied(t *testing.T, what string) {
	t.Helper()
	if err := c.nc.Flush(); err != nil {
		t.Fatalf("%s: flush: %v", what, err)
	}
	select {
	case err := <-c.errs:
		if !errors.Is(err, nats.ErrPermissionViolation) && !strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
			t.Fatalf("%s: got %v, want a permissions violation", what, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: allowed, want a permissions violation", what)
	}
}

func TestRolePermissions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := newWorld(t)
	proc := connect(natsauth.User{Role: natsauth.RoleProcessor})
	acme := connect(natsauth.User{Role: natsauth.RoleAgent, Tenant: "acme"})
	beta := connect(natsauth.User{Role: natsauth.RoleAgent, Tenant: "beta"})
	sec := connect(natsauth.User{Role: natsauth.RoleSecurity})
	admin := connect(natsauth.User{Role: natsauth.RoleAdmin})

	// What each role is for works.
	// The hooks as they arrive: an ordered push consumer on the security
	// inbox (an agent's envelope, imported as a service, does not reach
	// the security account's acs.> stream import).
	legacy, err := sec.nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	liveHooks, err := legacy.SubscribeSync("", nats.OrderedConsumer(), nats.BindStream(acs.HooksStream), nats.DeliverNew())
	if err != nil {
		t.Fatalf("security follows ACS_HOOKS: %v", err)
	}
	ack, err := acme.js.Publish(ctx, "acs.hooks.acme.s1.turnStart", []byte(`{}`))
	if err != nil {
		t.Fatalf("agent acme publishes its own envelope: %v", err)
	}
	// Stored under its partition's subject, acs.part.<p>.<tenant>.<session>.<hook>.
	if m, err := liveHooks.NextMsg(5 * time.Second); err != nil || !strings.HasSuffix(m.Subject, ".acme.s1.turnStart") {
		t.Fatalf("security sees the agent's envelope: %v, %v", m, err)
	}
	// But no pull consumer there, nor one named as the processor's.
	for _, c := range []struct{ subject, body string }{
		{"$JS.API.CONSUMER.CREATE.ACS_HOOKS", `{"stream_name":"ACS_HOOKS","config":{"ack_policy":"none"}}`},
		{"$JS.API.CONSUMER.CREATE.ACS_HOOKS.turnguard-p000", `{"stream_name":"ACS_HOOKS","config":{"name":"turnguard-p000","deliver_subject":"_INBOX.security.x"}}`},
		{"$JS.API.CONSUMER.CREATE.ACS_HOOKS", `{"stream_name":"ACS_HOOKS","config":{"durable_name":"turnguard-p001","deliver_subject":"_INBOX.security.x"}}`},
	} {
		m, err := sec.nc.Request(c.subject, []byte(c.body), 10*time.Second)
		if err != nil || !strings.Contains(string(m.Data), `"error"`) {
			t.Fatalf("security %s %s: %v, %v: want refused", c.subject, c.body, m, err)
		}
	}
	if ack.Stream != acs.HooksStream {
		t.Fatalf("ack from %q", ack.Stream)
	}
	sub, err := acme.nc.SubscribeSync("acs.decisions.acme.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := acme.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := proc.js.Publish(ctx, "acs.decisions.acme.s1", []byte(`{"decision":"allow"}`)); err != nil {
		t.Fatalf("the processor publishes a decision: %v", err)
	}
	if _, err := sub.NextMsg(5 * time.Second); err != nil {
		t.Fatalf("agent acme reads its tenant's decision: %v", err)
	}
	kv, err := proc.js.KeyValue(ctx, acs.StateBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "acme.s1", []byte(`{"taints":[1]}`)); err != nil {
		t.Fatalf("the processor writes state: %v", err)
	}
	secKV, err := sec.js.KeyValue(ctx, acs.StateBucket)
	if err != nil {
		t.Fatalf("security opens the state bucket: %v", err)
	}
	if e, err := secKV.Get(ctx, "acme.s1"); err != nil || string(e.Value()) != `{"taints":[1]}` {
		t.Fatalf("security reads state: %v", err)
	}
	keys, err := secKV.ListKeys(ctx)
	if err != nil {
		t.Fatalf("security lists state keys: %v", err)
	}
	n := 0
	for range keys.Keys() {
		n++
	}
	if n != 1 {
		t.Fatalf("security listed %d keys, want 1", n)
	}
	decisions, err := sec.js.Stream(ctx, acs.DecisionsStream)
	if err != nil {
		t.Fatalf("security opens ACS_DECISIONS: %v", err)
	}
	oc, err := decisions.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatalf("security reads decision history: %v", err)
	}
	if _, err := oc.Next(jetstream.FetchMaxWait(5 * time.Second)); err != nil {
		t.Fatalf("security reads decision history: %v", err)
	}
	hooks, err := sec.js.Stream(ctx, acs.HooksStream)
	if err != nil {
		t.Fatalf("security opens ACS_HOOKS: %v", err)
	}
	if _, err := hooks.GetMsg(ctx, ack.Sequence); err != nil {
		t.Fatalf("security reads a recorded envelope: %v", err)
	}
	if _, err := admin.js.Stream(ctx, acs.HooksStream); err != nil {
		t.Fatalf("admin opens ACS_HOOKS: %v", err)
	}

	// And nothing else.
	beta.nc.Publish("acs.hooks.acme.s1.toolCallRequest", []byte(`{}`))
	beta.denied(t, "agent beta publishes into tenant acme")
	beta.nc.Subscribe("acs.decisions.acme.>", func(*nats.Msg) {})
	beta.denied(t, "agent beta subscribes to acme's decisions")
	beta.nc.Subscribe("acs.>", func(*nats.Msg) {})
	beta.denied(t, "agent beta subscribes to everything")
	beta.nc.Subscribe("_INBOX.>", func(*nats.Msg) {})
	beta.denied(t, "agent beta subscribes to every reply")
	for _, c := range []struct {
		who     string
		c       *conn
		subject string
	}{
		{"agent", acme, "acs.decisions.acme.s1"},
		{"agent", acme, "acs.alerts.acme.x"},
		{"agent", acme, "$KV.ACS_TURNSTATE.acme.s1"},
		{"agent", acme, "$KV.ACS_PROCESSORS.fake"},
		{"agent", acme, "$JS.API.STREAM.DELETE.ACS_HOOKS"},
		{"agent", acme, "$JS.API.STREAM.PURGE.ACS_DECISIONS"},
		{"agent", acme, "$JS.API.STREAM.INFO.ACS_HOOKS"},
		{"agent", acme, "$JS.API.CONSUMER.CREATE.ACS_HOOKS.turnguard-p000.acs.part.0.*.*.*"},
		{"security", sec, "acs.hooks.acme.s1.turnStart"},
		{"security", sec, "acs.decisions.acme.s1"},
		{"security", sec, "acs.alerts._system.rules"},
		{"security", sec, "$KV.ACS_TURNSTATE.acme.s1"},
		{"security", sec, "$KV.ACS_PROCESSORS.fake"},
		{"security", sec, "$JS.API.STREAM.DELETE.ACS_HOOKS"},
		{"security", sec, "$JS.API.STREAM.PURGE.ACS_DECISIONS"},
		{"security", sec, "$JS.API.CONSUMER.MSG.NEXT.ACS_HOOKS.turnguard-p000"},
		{"security", sec, "$JS.API.CONSUMER.DELETE.ACS_HOOKS.turnguard-p000"},
		{"security", sec, "$JS.API.CONSUMER.INFO.ACS_HOOKS.turnguard-p000"},
		{"security", sec, "$JS.API.CONSUMER.DURABLE.CREATE.ACS_HOOKS.turnguard-p000"},
		{"security", sec, "$JS.API.CONSUMER.DELETE.KV_ACS_PROCESSORS.watcher"},
		{"security", sec, "$JS.ACK.ACS_HOOKS.turnguard-p000.1.1.1.1.0"},
		{"admin", admin, "acs.decisions.acme.s1"},
		{"admin", admin, "acs.alerts._system.rules"},
		{"admin", admin, "acs.dlq.acme"},
		{"admin", admin, "$KV.ACS_TURNSTATE.acme.s1"},
		{"admin", admin, "$KV.ACS_PROCESSORS.fake"},
		{"admin", admin, "$KV.ACS_HANDSHAKES.acme.s1"},
	} {
		c.c.nc.Publish(c.subject, []byte(`{}`))
		c.c.denied(t, c.who+" publishes to "+c.subject)
	}
	if info, err := admin.js.Stream(ctx, acs.HooksStream); err != nil || info.CachedInfo().State.Msgs != 1 {
		t.Fatalf("ACS_HOOKS after the attempts: %v", err)
	}
	if e, err := kv.Get(ctx, "acme.s1"); err != nil || e.Revision() != 1 {
		t.Fatalf("state after the attempts: revision %v, %v", e, err)
	}
	members, err := proc.js.KeyValue(ctx, acs.MembersBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := members.Get(ctx, "fake"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("a fake member record was written: %v", err)
	}
}

func TestUnauthenticatedClientsAreRefused(t *testing.T) {
	dir := t.TempDir()
	auth, _, err := natsauth.LoadOrCreate(filepath.Join(dir, "auth"))
	if err != nil {
		t.Fatal(err)
	}
	srv := startEmbedded(t, embedded.Config{DataDir: dir, Listen: "127.0.0.1:0", Auth: auth, Logger: zerolog.Nop()})
	if nc, err := nats.Connect(srv.ClientURL()); err == nil {
		nc.Close()
		t.Fatal("a client without credentials connected")
	} else if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("connect without credentials: %v, want an authorization violation", err)
	}
	// Credentials of another authority (another data dir) are refused too.
	other, _, err := natsauth.LoadOrCreate(filepath.Join(t.TempDir(), "auth"))
	if err != nil {
		t.Fatal(err)
	}
	opt, err := embedded.User(other, natsauth.User{Role: natsauth.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	if nc, err := nats.Connect(srv.ClientURL(), opt); err == nil {
		nc.Close()
		t.Fatal("admin credentials of another authority connected")
	} else if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("connect with a foreign credential: %v, want an authorization violation", err)
	}
}

func TestAuthorityPersists(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "auth")
	a, created, err := natsauth.LoadOrCreate(dir)
	if err != nil || !created {
		t.Fatalf("first LoadOrCreate: created %v, %v", created, err)
	}
	b, created, err := natsauth.LoadOrCreate(dir)
	if err != nil || created {
		t.Fatalf("second LoadOrCreate: created %v, %v", created, err)
	}
	if a.AccountPublicKey() != b.AccountPublicKey() {
		t.Fatal("the account changed between starts: every credential would be orphaned")
	}
	for _, f := range []string{"operator.nk", "account.nk", "system-account.nk"} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", f, fi.Mode().Perm())
		}
	}
	if err := os.Remove(filepath.Join(dir, "account.nk")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := natsauth.LoadOrCreate(dir); err == nil || !strings.Contains(err.Error(), "incomplete") {
		t.Fatalf("LoadOrCreate of an incomplete authority: %v", err)
	}
}

func TestUserValidate(t *testing.T) {
	for _, c := range []struct {
		u  natsauth.User
		ok bool
	}{
		{natsauth.User{Role: natsauth.RoleAgent, Tenant: "default"}, true},
		{natsauth.User{Role: natsauth.RoleAgent, Tenant: "acme-2_x"}, true},
		{natsauth.User{Role: natsauth.RoleAgent}, false},
		{natsauth.User{Role: natsauth.RoleAgent, Tenant: "*"}, false},
		{natsauth.User{Role: natsauth.RoleAgent, Tenant: ">"}, false},
		{natsauth.User{Role: natsauth.RoleAgent, Tenant: "a.b"}, false},
		{natsauth.User{Role: natsauth.RoleAgent, Tenant: "_system"}, false},
		{natsauth.User{Role: natsauth.RoleAgent, Tenant: "_unrouted"}, false},
		{natsauth.User{Role: natsauth.RoleAgent, Tenant: strings.Repeat("a", 65)}, false},
		{natsauth.User{Role: natsauth.RoleSecurity}, true},
		{natsauth.User{Role: natsauth.RoleSecurity, Tenant: "acme"}, false},
		{natsauth.User{Role: "root"}, false},
	} {
		if err := c.u.Validate(); (err == nil) != c.ok {
			t.Errorf("%+v: Validate() = %v, want ok=%v", c.u, err, c.ok)
		}
	}
}

// The permissions name streams by literal; they must be the stream
// package's names.
func TestNamesMatchTopology(t *testing.T) {
	perms := natsauth.User{Role: natsauth.RoleSecurity}.Permissions()
	all := strings.Join(perms.Pub.Allow, " ")
	for _, s := range []string{acs.DecisionsStream, acs.AlertsStream, acs.DLQStream, acs.KVStream(acs.StateBucket), acs.KVStream(acs.MembersBucket)} {
		if !strings.Contains(all, "$JS.API.CONSUMER.CREATE."+s+".>") {
			t.Errorf("security cannot read %s", s)
		}
	}
	owned := strings.Join(natsauth.ProcessorOwned, " ")
	for _, b := range []string{acs.StateBucket, acs.MembersBucket} {
		if !strings.Contains(owned, "$KV."+b+".>") {
			t.Errorf("%s is not processor-owned", b)
		}
	}
}

// writeSelfSigned writes a certificate for 127.0.0.1 and its key as PEM
// files, returning their paths.
func writeSelfSigned(t *testing.T, dir string) (cert, key string) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "turnguard-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// With --listen-tls-cert the client port speaks TLS only: a plaintext
// client cannot even present its credential.
func TestEmbeddedTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeSelfSigned(t, dir)
	auth, _, err := natsauth.LoadOrCreate(filepath.Join(dir, "auth"))
	if err != nil {
		t.Fatal(err)
	}
	srv := startEmbedded(t, embedded.Config{DataDir: dir, Listen: "127.0.0.1:0", TLSCert: cert, TLSKey: key, Auth: auth, Logger: zerolog.Nop()})
	admin, err := embedded.User(auth, natsauth.User{Role: natsauth.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	addr := srv.Addr().String()
	if nc, err := nats.Connect("nats://"+addr, admin, nats.Timeout(2*time.Second)); err == nil {
		// nats.go upgrades to TLS when the server requires it; without
		// the CA it must fail verification.
		nc.Close()
		t.Fatal("connected without trusting the server's certificate")
	}
	nc, err := nats.Connect("tls://"+addr, admin, nats.RootCAs(cert))
	if err != nil {
		t.Fatalf("TLS connect with the CA: %v", err)
	}
	defer nc.Close()
	if !nc.TLSRequired() {
		t.Fatal("the connection is not TLS")
	}
}

// A store written by an open server (an earlier turnguard, or --auth none)
// belongs to the turnguard account from the first authenticated start on:
// its streams are still there.
func TestOpenStoreIsAdopted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	open, err := embedded.Start(embedded.Config{DataDir: dir, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect("", nats.InProcessServer(open))
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	if err := topology.Ensure(ctx, js, topology.Default()); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "acs.hooks.default.s1.sessionStart", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	open.Shutdown()
	open.WaitForShutdown()

	auth, _, err := natsauth.LoadOrCreate(filepath.Join(dir, "auth"))
	if err != nil {
		t.Fatal(err)
	}
	srv := startEmbedded(t, embedded.Config{DataDir: dir, Auth: auth, Logger: zerolog.Nop()})
	admin, err := embedded.User(auth, natsauth.User{Role: natsauth.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	anc, err := nats.Connect("", nats.InProcessServer(srv), admin)
	if err != nil {
		t.Fatal(err)
	}
	defer anc.Close()
	ajs, _ := jetstream.New(anc)
	hooks, err := ajs.Stream(ctx, acs.HooksStream)
	if err != nil {
		t.Fatalf("the open store's streams are gone with authentication on: %v", err)
	}
	if n := hooks.CachedInfo().State.Msgs; n != 1 {
		t.Fatalf("ACS_HOOKS holds %d messages after the move, want 1", n)
	}
}
