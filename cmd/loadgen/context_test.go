package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/guardian"
	"github.com/turnguard/turnguard/internal/natsauth"
	"github.com/turnguard/turnguard/internal/rules"
	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/schema"
)

// loadgen finds an authenticated server through a context of the nats
// CLI named by TURNGUARD_NATS_CONTEXT, with an admin credential, and its
// run against the processor there reconciles.
func TestRunThroughNATSContext(t *testing.T) {
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
	// No skew window, as loadgen's synthetic timestamps need.
	cfg := stream.DefaultConfig()
	cfg.Topology.Partitions = 2
	p, err := stream.New(nc, guardian.New(v, guardian.Config{}), rules.NewSource(rs), cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	pctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(pctx) }()
	t.Cleanup(func() { stop(); <-done })

	xdg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", xdg)
	ctxFile := filepath.Join(xdg, "nats", "context", "tg-admin.json")
	if err := os.MkdirAll(filepath.Dir(ctxFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ctxFile, []byte(`{"description": "", "url": "`+srv.ClientURL()+`", "creds": "`+admin+`", "jetstream_domain": "", "tls_first": false}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TURNGUARD_NATS_CONTEXT", "tg-admin")
	var out, errOut bytes.Buffer
	args := []string{"run", "--baseline=false", "--duration", "5s", "--sessions", "20", "--max-envelopes", "400", "--settle", "30s", "--json"}
	if code := run(ctx, args, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut.String(), out.String())
	}
	var rep runReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, out.String())
	}
	t.Logf("%d envelopes published to %s, reconcile ok %v", rep.Published, rep.Target, rep.Reconcile.OK)
	if rep.Target != srv.ClientURL() || !rep.Reconcile.OK || rep.Published == 0 {
		t.Fatalf("target %q (want %s), %d published, reconcile %+v", rep.Target, srv.ClientURL(), rep.Published, rep.Reconcile)
	}
}
