package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/acs"
	"github.com/turnguard/turnguard/internal/guardian"
	"github.com/turnguard/turnguard/internal/natsauth"
	"github.com/turnguard/turnguard/internal/rules"
	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/internal/testwait"
	"github.com/turnguard/turnguard/schema"
)

// replay finds an authenticated server through a context of the nats CLI
// (--nats-context, or TURNGUARD_NATS_CONTEXT), as `nats context add`
// writes it, with an admin credential.
func TestReplayThroughNATSContext(t *testing.T) {
	data := t.TempDir()
	auth, _, err := natsauth.LoadOrCreate(filepath.Join(data, "auth"))
	if err != nil {
		t.Fatal(err)
	}
	admin := filepath.Join(data, "creds", "admin.creds")
	if _, err := auth.WriteCreds(admin, natsauth.User{Role: natsauth.RoleAdmin}); err != nil {
		t.Fatal(err)
	}
	srv, err := stream.StartEmbedded(stream.EmbeddedConfig{DataDir: data, Listen: "127.0.0.1:0", Auth: auth, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	self, err := stream.EmbeddedUser(auth, natsauth.User{Role: natsauth.RoleProcessor, Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect("", nats.InProcessServer(srv), self)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	v, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	rs, err := rules.Default()
	if err != nil {
		t.Fatal(err)
	}
	p, err := stream.New(nc, guardian.New(v, guardian.Config{}), rules.NewSource(rs), stream.DefaultConfig(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	envs := examples.Session("")
	for _, e := range envs {
		if _, err := js.Publish(ctx, acs.InboundPrefix+".default."+examples.SessionID+"."+e.Hook, e.Data); err != nil {
			t.Fatal(err)
		}
	}
	testwait.Eventually(t, 20*time.Second, 5*time.Millisecond, "examples not processed", func() bool {
		return p.Stats().Processed.Load() >= uint64(len(envs))
	})

	xdg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", xdg)
	ctxFile := filepath.Join(xdg, "nats", "context", "tg-admin.json")
	if err := os.MkdirAll(filepath.Dir(ctxFile), 0o700); err != nil {
		t.Fatal(err)
	}
	body := `{"description": "", "url": "` + srv.ClientURL() + `", "socks_proxy": "", "token": "", "user": "", "password": "", "creds": "` + admin +
		`", "nkey": "", "cert": "", "key": "", "ca": "", "nsc": "", "jetstream_domain": "", "jetstream_api_prefix": "", "jetstream_event_prefix": "",
  "inbox_prefix": "", "user_jwt": "", "color_scheme": "", "tls_first": false}`
	if err := os.WriteFile(ctxFile, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	// The data dir is in use: without a server named, replay would be
	// refused it, so success shows that the context was followed.
	code, stdout, stderr := runReplay(t, "sessions", "--nats-context", "tg-admin", "--data-dir", data)
	if code != exitOK || !strings.Contains(stdout, examples.SessionID) {
		t.Fatalf("--nats-context: exit %d\n%s%s", code, stdout, stderr)
	}
	t.Setenv("TURNGUARD_NATS_CONTEXT", "tg-admin")
	code, stdout, stderr = runReplay(t, "sessions", "--data-dir", data)
	if code != exitOK || !strings.Contains(stdout, examples.SessionID) {
		t.Fatalf("TURNGUARD_NATS_CONTEXT: exit %d\n%s%s", code, stdout, stderr)
	}
	// --nats-creds wins over the context's credential.
	code, _, stderr = runReplay(t, "sessions", "--nats-creds", "none", "--data-dir", data)
	if code != exitError || !strings.Contains(stderr, srv.ClientURL()) || !strings.Contains(stderr, "tg-admin") {
		t.Fatalf("without credentials: exit %d, %s", code, stderr)
	}
}

// Every help spells flags --flag and says how the connection is found.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"sessions", "--help"}, {"verify", "--help"}} {
		code, stdout, stderr := runReplay(t, args...)
		help := stdout + stderr
		if code != exitOK || !strings.Contains(help, "NATS connection") || !strings.Contains(help, "TURNGUARD_NATS_CONTEXT") ||
			(len(args) > 1 && (!strings.Contains(help, "\n  --nats-context name") || strings.Contains(help, "\n  -nats"))) {
			t.Fatalf("%v: exit %d, help\n%s", args, code, help)
		}
	}
}
