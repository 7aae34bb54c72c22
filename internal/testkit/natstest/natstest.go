// Package natstest starts real NATS JetStream servers for tests: in-process,
// with their store in the test's temporary directory, stopped when the test
// ends.
package natstest

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// RunServer starts an in-process single-node JetStream server without a
// client listener; connect to it with Connect.
func RunServer(t testing.TB) *server.Server {
	t.Helper()
	return RunServerIn(t, t.TempDir())
}

// RunServerIn starts a server on an existing store directory, so a test can
// restart "the same" server.
func RunServerIn(t testing.TB, storeDir string) *server.Server {
	t.Helper()
	return RunServerWith(t, &server.Options{StoreDir: storeDir, MaxPayload: 2 << 20})
}

// RunServerWith starts an in-process JetStream server with opts (a store
// limit, say), which it completes: JetStream on, no listener, no signal
// handling, no log, and a temporary store directory when opts has none.
func RunServerWith(t testing.TB, opts *server.Options) *server.Server {
	t.Helper()
	opts.JetStream, opts.DontListen, opts.NoSigs, opts.NoLog = true, true, true, true
	if opts.StoreDir == "" {
		opts.StoreDir = t.TempDir()
	}
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server did not start")
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// Connect opens an in-process connection, closed when the test ends.
func Connect(t testing.TB, s *server.Server) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect("", nats.InProcessServer(s))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// JetStream is jetstream.New(nc, opts...), failing t on an error.
func JetStream(t testing.TB, nc *nats.Conn, opts ...jetstream.JetStreamOpt) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// Publish stores one message the way `nats pub` does and returns its
// stream sequence.
func Publish(t testing.TB, js jetstream.JetStream, subject string, data []byte) uint64 {
	t.Helper()
	ack, err := js.Publish(context.Background(), subject, data)
	if err != nil {
		t.Fatalf("publish %s: %v", subject, err)
	}
	return ack.Sequence
}

// CountMsgs is how many messages the stream name holds.
func CountMsgs(t testing.TB, js jetstream.JetStream, name string) int {
	t.Helper()
	s, err := js.Stream(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return int(info.State.Msgs)
}

// StoredMsgs reads every message the stream name holds, oldest first.
func StoredMsgs(t testing.TB, js jetstream.JetStream, name string) []*jetstream.RawStreamMsg {
	t.Helper()
	ctx := context.Background()
	s, err := js.Stream(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}
