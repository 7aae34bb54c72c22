package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/guardian"
	"github.com/turnguard/turnguard/internal/rules"
	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/schema"
)

// target is what the load runs against: a NATS URL, or an embedded server
// with an in-process processor that close tears down.
type target struct {
	nc *nats.Conn
	// dial opens another connection to the same target (named name).
	dial  func(name string) (*nats.Conn, error)
	close func()
	// embedded says the target is the in-process server and processor.
	embedded bool
}

// clientOptions make a connection ride out a server or cluster node that
// dies mid-run: reconnect forever, and buffer what is published meanwhile.
func clientOptions(name string) []nats.Option {
	return []nats.Option{nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectBufSize(64 << 20), nats.RetryOnFailedConnect(false)}
}

// connect opens the target. url may list several servers separated by
// commas (a cluster); an empty url starts the embedded one, with partitions
// partitions.
func connect(ctx context.Context, url string, partitions int) (*target, error) {
	if url != "" {
		dial := func(name string) (*nats.Conn, error) {
			nc, err := nats.Connect(url, clientOptions(name)...)
			if err != nil {
				return nil, fmt.Errorf("connect %s: %w", url, err)
			}
			return nc, nil
		}
		nc, err := dial("turnguard-loadgen")
		if err != nil {
			return nil, err
		}
		return &target{nc: nc, dial: dial, close: nc.Close}, nil
	}
	dir, err := os.MkdirTemp("", "turnguard-loadgen-")
	if err != nil {
		return nil, err
	}
	srv, err := stream.StartEmbedded(stream.EmbeddedConfig{DataDir: dir, Logger: zerolog.Nop()})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	teardown := func() {
		srv.Shutdown()
		srv.WaitForShutdown()
		os.RemoveAll(dir)
	}
	stopProcessor, err := runProcessor(ctx, srv, partitions)
	if err != nil {
		teardown()
		return nil, err
	}
	dial := func(name string) (*nats.Conn, error) {
		return nats.Connect("", append(clientOptions(name), nats.InProcessServer(srv))...)
	}
	nc, err := dial("turnguard-loadgen")
	if err != nil {
		stopProcessor()
		teardown()
		return nil, err
	}
	return &target{nc: nc, dial: dial, embedded: true, close: func() { nc.Close(); stopProcessor(); teardown() }}, nil
}

func runProcessor(ctx context.Context, srv *server.Server, partitions int) (func(), error) {
	v, err := schema.New()
	if err != nil {
		return nil, err
	}
	rs, err := rules.Default()
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect("", nats.InProcessServer(srv), nats.Name("turnguard-processor"))
	if err != nil {
		return nil, err
	}
	cfg := stream.DefaultConfig()
	cfg.Topology.Partitions = partitions
	p, err := stream.New(nc, guardian.New(v, guardian.Config{}), stream.NewRuleSource(rs), cfg, zerolog.Nop())
	if err != nil {
		nc.Close()
		return nil, err
	}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.Run(pctx)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for p.Ready() != nil {
		if time.Now().After(deadline) {
			cancel()
			return nil, fmt.Errorf("the in-process processor did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return func() { cancel(); <-done; _ = nc.Drain() }, nil
}

// startProfile writes a CPU profile to path until the returned stop.
func startProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
