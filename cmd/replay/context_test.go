package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/internal/testkit/processortest"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
)

// replay finds an authenticated server through a context of the nats CLI
// (--nats-context, or TURNGUARD_REPLAY_NATS_CONTEXT), as `nats context add`
// writes it, with an admin credential.
func TestReplayThroughNATSContext(t *testing.T) {
	rig := processortest.Start(t, stream.DefaultConfig())
	ctx := context.Background()
	js, err := jetstream.New(rig.Conn)
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
		return rig.Processor.Stats().Processed.Load() >= uint64(len(envs))
	})

	rig.WriteContext(t, "tg-admin")
	// The data dir is in use: without a server named, replay would be
	// refused it, so success shows that the context was followed.
	code, stdout, stderr := runReplay(t, "sessions", "--nats-context", "tg-admin", "--data-dir", rig.DataDir)
	if code != exitOK || !strings.Contains(stdout, examples.SessionID) {
		t.Fatalf("--nats-context: exit %d\n%s%s", code, stdout, stderr)
	}
	t.Setenv("TURNGUARD_REPLAY_NATS_CONTEXT", "tg-admin")
	code, stdout, stderr = runReplay(t, "sessions", "--data-dir", rig.DataDir)
	if code != exitOK || !strings.Contains(stdout, examples.SessionID) {
		t.Fatalf("TURNGUARD_REPLAY_NATS_CONTEXT: exit %d\n%s%s", code, stdout, stderr)
	}
	// --nats-creds wins over the context's credential.
	code, _, stderr = runReplay(t, "sessions", "--nats-creds", "none", "--data-dir", rig.DataDir)
	if code != exitError || !strings.Contains(stderr, rig.Server.ClientURL()) || !strings.Contains(stderr, "tg-admin") {
		t.Fatalf("without credentials: exit %d, %s", code, stderr)
	}
}

// Every help spells flags --flag and says how the connection is found.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"sessions", "--help"}, {"verify", "--help"}} {
		code, stdout, stderr := runReplay(t, args...)
		help := stdout + stderr
		if code != exitOK || !strings.Contains(help, "NATS connection") || !strings.Contains(help, "TURNGUARD_REPLAY_NATS_CONTEXT") ||
			(len(args) > 1 && (!strings.Contains(help, "\n  --nats-context name") || strings.Contains(help, "\n  -nats"))) {
			t.Fatalf("%v: exit %d, help\n%s", args, code, help)
		}
	}
}
