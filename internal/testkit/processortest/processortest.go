// Package processortest runs a processor for the commands' tests the way an
// operator's is reached: an embedded NATS server with turnguard's
// authentication listening on loopback, an admin credential for the command
// under test, and a processor deciding on it. Only tests import it.
package processortest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/embedded"
	"github.com/turnguard/turnguard/internal/natsauth"
	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/internal/testkit/guardiantest"
)

// Rig is a running processor on an authenticated embedded server.
type Rig struct {
	// DataDir is the server's data directory (in use while the rig runs).
	DataDir string
	Server  *server.Server
	// Conn is the processor's own connection.
	Conn      *nats.Conn
	Processor *stream.Processor
	// AdminCreds is an admin credential file, what replay and loadgen use.
	AdminCreds string
}

// Start runs a processor with cfg and the default rule pack until the test
// ends.
func Start(t testing.TB, cfg stream.Config) *Rig {
	t.Helper()
	r := &Rig{DataDir: t.TempDir()}
	auth, _, err := natsauth.LoadOrCreate(filepath.Join(r.DataDir, "auth"))
	if err != nil {
		t.Fatal(err)
	}
	r.AdminCreds = filepath.Join(r.DataDir, "creds", "admin.creds")
	if _, err := auth.WriteCreds(r.AdminCreds, natsauth.User{Role: natsauth.RoleAdmin}); err != nil {
		t.Fatal(err)
	}
	if r.Server, err = embedded.Start(embedded.Config{DataDir: r.DataDir, Listen: "127.0.0.1:0", Auth: auth, Logger: zerolog.Nop()}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Server.Shutdown(); r.Server.WaitForShutdown() })
	self, err := embedded.User(auth, natsauth.User{Role: natsauth.RoleProcessor, Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Conn, err = nats.Connect("", nats.InProcessServer(r.Server), self); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Conn.Close)
	rs := guardiantest.DefaultRules(t)
	if r.Processor, err = stream.New(r.Conn, guardiantest.Pure(t), policy.NewSource(rs), cfg, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Processor.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

// WriteContext writes a context of the nats CLI named name, as `nats
// context add` writes it (every field, most empty), that reaches the rig
// with its admin credential, under a fresh XDG_CONFIG_HOME the test's
// environment then points at.
func (r *Rig) WriteContext(t *testing.T, name string) {
	t.Helper()
	xdg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", xdg)
	file := filepath.Join(xdg, "nats", "context", name+".json")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	body := `{"description": "", "url": "` + r.Server.ClientURL() + `", "socks_proxy": "", "token": "", "user": "", "password": "", "creds": "` + r.AdminCreds +
		`", "nkey": "", "cert": "", "key": "", "ca": "", "nsc": "", "jetstream_domain": "", "jetstream_api_prefix": "", "jetstream_event_prefix": "",
  "inbox_prefix": "", "user_jwt": "", "color_scheme": "", "tls_first": false}`
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}
