package natsauth_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// requestInfo is the part of the server's Nats-Request-Info header
// (server.ClientInfo) that would name a caller.
type requestInfo struct {
	Account string `json:"acc"`
	User    string `json:"user"`
}

// TestRequestInfoIsNotStored pins why a session cannot be bound to the NATS
// credential that started it (issue 23, "a session is bound to the caller
// identity that started it"): a service import with share makes the server
// attest the requesting client in a Nats-Request-Info header, overwriting
// one the client set itself, but JetStream removes that header before it
// stores the message (stream.go, processJetStreamMsgWithBatch), so the
// envelope in ACS_HOOKS, which the processor and replay read, no longer
// says which credential sent it. If this test fails because the stored
// message keeps the header, the binding can be built on it (README,
// "HTTP callers" under "Security model", says it cannot).
func TestRequestInfoIsNotStored(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	// turnguard's layout in miniature: the tenant's account imports its
	// hooks from the account that stores them, as a service, here with
	// share so that the user is attested too.
	conf := fmt.Sprintf(`
listen: "127.0.0.1:-1"
jetstream: {store_dir: %q}
accounts: {
  TURNGUARD: {
    jetstream: enabled
    users: [{user: proc, password: proc}]
    exports: [{service: "acs.hooks.>"}]
  }
  TENANT_acme: {
    users: [{user: a1, password: a1}, {user: a2, password: a2}]
    imports: [{service: {account: TURNGUARD, subject: "acs.hooks.acme.>"}, share: true}]
  }
}
`, filepath.Join(dir, "js"))
	path := filepath.Join(dir, "server.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatal(err)
	}
	opts.NoLog, opts.NoSigs = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(30 * time.Second) {
		t.Fatal("server not ready")
	}
	connect := func(user string) (*nats.Conn, jetstream.JetStream) {
		t.Helper()
		nc, err := nats.Connect("", nats.InProcessServer(srv), nats.UserInfo(user, user))
		if err != nil {
			t.Fatalf("connect as %s: %v", user, err)
		}
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		return nc, js
	}
	procNC, procJS := connect("proc")
	stream, err := procJS.CreateStream(ctx, jetstream.StreamConfig{Name: "ACS_HOOKS", Subjects: []string{"acs.hooks.>"}})
	if err != nil {
		t.Fatal(err)
	}
	live, err := procNC.SubscribeSync("acs.hooks.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := procNC.Flush(); err != nil {
		t.Fatal(err)
	}
	_, a2 := connect("a2")

	forged, _ := json.Marshal(requestInfo{Account: "TENANT_acme", User: "a1"})
	cases := []struct {
		name   string
		js     jetstream.JetStream
		forged bool
		// live is what a core subscriber in TURNGUARD sees.
		live requestInfo
	}{
		{"through the import", a2, false, requestInfo{"TENANT_acme", "a2"}},
		// The server overwrites a header the publisher set.
		{"through the import, forged", a2, true, requestInfo{"TENANT_acme", "a2"}},
		// Inside TURNGUARD there is no import: the header passes as sent,
		// so even live it attests only what came through an import.
		{"inside turnguard, forged", procJS, true, requestInfo{"TENANT_acme", "a1"}},
	}
	for _, tc := range cases {
		m := nats.NewMsg("acs.hooks.acme.s1.turnStart")
		m.Data = []byte(`{}`)
		m.Header.Set("X-Kept", "yes")
		if tc.forged {
			m.Header.Set(server.ClientInfoHdr, string(forged))
		}
		ack, err := tc.js.PublishMsg(ctx, m)
		if err != nil {
			t.Fatalf("%s: publish: %v", tc.name, err)
		}
		got, err := live.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("%s: live: %v", tc.name, err)
		}
		var ri requestInfo
		if err := json.Unmarshal([]byte(got.Header.Get(server.ClientInfoHdr)), &ri); err != nil || ri != tc.live {
			t.Errorf("%s: live %s = %+v (%v), want %+v", tc.name, server.ClientInfoHdr, ri, err, tc.live)
		}
		stored, err := stream.GetMsg(ctx, ack.Sequence)
		if err != nil {
			t.Fatalf("%s: get: %v", tc.name, err)
		}
		if stored.Header.Get("X-Kept") != "yes" {
			t.Errorf("%s: stored headers %v lost the publisher's own header", tc.name, stored.Header)
		}
		if h := stored.Header.Get(server.ClientInfoHdr); h != "" {
			t.Errorf("%s: JetStream now stores %s (%s): a session can be bound to the NATS credential that started it", tc.name, server.ClientInfoHdr, h)
		}
	}
}
