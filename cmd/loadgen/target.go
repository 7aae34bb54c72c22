package main

import (
	"context"
	"crypto/ed25519"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/embedded"
	"github.com/turnguard/turnguard/internal/keyfile"
	"github.com/turnguard/turnguard/internal/natsconn"
	"github.com/turnguard/turnguard/internal/stream"
	rulepack "github.com/turnguard/turnguard/rules"
	"github.com/turnguard/turnguard/schema"
)

// target is what the load runs against: a NATS URL, or an embedded server
// whose in-process processors start with startProcessors and stop with
// close.
type target struct {
	nc *nats.Conn
	// url is the server or cluster connected to (empty: embedded).
	url string
	// dial opens another connection to the same target (named name).
	dial  func(name string) (*nats.Conn, error)
	close func()
	// embedded says the target is the in-process server and processors.
	embedded bool
	srv      *server.Server
	dir      string
	stops    []func()
	// procs are the embedded processors, for their counters.
	procs []*stream.Processor
	// receiptKey is the embedded processors' receipt public key, which
	// synchronous clients trust (nil: receipts off, or not embedded).
	receiptKey ed25519.PublicKey
}

// processorConfig is the embedded processors' configuration, which the
// pipeline floor and a backlog's topology copy.
func processorConfig(partitions int) stream.Config {
	cfg := stream.DefaultConfig()
	cfg.Topology.Partitions = partitions
	return cfg
}

// embeddedOptions shape the in-process processors of the embedded target.
type embeddedOptions struct {
	Partitions int
	// Processors is how many instances share the partitions, each on its
	// own connection, as separate processes would.
	Processors int
	// NoReceipts turns the Ed25519 receipts off (processor
	// --receipt-key none); SingleReceipts signs each on its own
	// (processor --receipt-format single).
	NoReceipts, SingleReceipts bool
	// Group is the processors' grouping of live batches across
	// partitions (stream.Config's Group fields; zero: the defaults).
	Group groupOptions
}

// groupOptions are stream.Config's GroupLoops, GroupMax and GroupLinger.
type groupOptions struct {
	Loops, Max int
	Linger     time.Duration
}

// register adds the flags setting g to fs.
func (g *groupOptions) register(fs *flag.FlagSet) {
	fs.IntVar(&g.Loops, "group-loops", 0, "embedded target: the processors' loops applying live batches of several partitions together (0: the processor's default; -1: each partition alone)")
	fs.IntVar(&g.Max, "group-max", 0, "embedded target: the most envelopes one group takes (0: the processor's default)")
	fs.DurationVar(&g.Linger, "group-linger", 0, "embedded target: how long a group waits for more partitions' batches (at most 1ms; 0: not at all)")
}

// clientOptions make a connection ride out a server or cluster node that
// dies mid-run: reconnect forever, and buffer what is published meanwhile.
func clientOptions(name string) []nats.Option {
	return []nats.Option{nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectBufSize(64 << 20), nats.RetryOnFailedConnect(false)}
}

// connect opens the target resolved by natsconn. Its URL may list
// several servers separated by commas (a cluster), its credential should
// be an admin one (loadgen publishes envelopes, reads every stream and
// makes a scratch stream for its baseline); an empty URL starts the
// embedded server, in-process only and open, whose processors
// startProcessors starts.
func connect(nt natsconn.Target) (*target, error) {
	if url := nt.URL; url != "" {
		dial := func(name string) (*nats.Conn, error) {
			nc, err := nats.Connect(url, append(clientOptions(name), nt.Options...)...)
			if err != nil {
				return nil, fmt.Errorf("connect to NATS %s (from %s): %w", url, nt.Source, err)
			}
			return nc, nil
		}
		nc, err := dial("turnguard-loadgen")
		if err != nil {
			return nil, err
		}
		return &target{nc: nc, url: url, dial: dial, close: nc.Close}, nil
	}
	dir, err := os.MkdirTemp("", "turnguard-loadgen-")
	if err != nil {
		return nil, err
	}
	srv, err := embedded.Start(embedded.Config{DataDir: dir, Logger: zerolog.Nop()})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	t := &target{embedded: true, srv: srv, dir: dir}
	t.dial = func(name string) (*nats.Conn, error) {
		return nats.Connect("", append(clientOptions(name), nats.InProcessServer(srv))...)
	}
	t.close = func() {
		if t.nc != nil {
			t.nc.Close()
		}
		for _, stop := range t.stops {
			stop()
		}
		srv.Shutdown()
		srv.WaitForShutdown()
		os.RemoveAll(dir)
	}
	if t.nc, err = t.dial("turnguard-loadgen"); err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

// startProcessors starts the embedded target's processors, configured as
// the processor binary is by default (default rule pack, Ed25519 receipts),
// and waits until every one consumes. Against a URL it does nothing: the
// processors there are the user's.
func (t *target) startProcessors(ctx context.Context, o embeddedOptions) error {
	if !t.embedded {
		return nil
	}
	v, err := schema.New()
	if err != nil {
		return err
	}
	rs, err := rulepack.DefaultSet()
	if err != nil {
		return err
	}
	var gcfg guardian.Config
	if !o.NoReceipts {
		signer, _, err := keyfile.ReceiptSigner(filepath.Join(t.dir, "receipt-key.pem"))
		if err != nil {
			return err
		}
		gcfg.Receipts = signer
		t.receiptKey = signer.Public()
	}
	g := guardian.New(v, gcfg)
	for i := range max(o.Processors, 1) {
		nc, err := t.dial(fmt.Sprintf("turnguard-processor-%d", i+1))
		if err != nil {
			return err
		}
		cfg := processorConfig(o.Partitions)
		cfg.InstanceID = fmt.Sprintf("loadgen-%d", i+1)
		cfg.SingleReceipts = o.SingleReceipts
		cfg.GroupLoops, cfg.GroupMax, cfg.GroupLinger = o.Group.Loops, o.Group.Max, o.Group.Linger
		p, err := stream.New(nc, g, policy.NewSource(rs), cfg, zerolog.Nop())
		if err != nil {
			nc.Close()
			return err
		}
		pctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = p.Run(pctx)
		}()
		t.stops = append(t.stops, func() { cancel(); <-done; _ = nc.Drain() })
		t.procs = append(t.procs, p)
		deadline := time.Now().Add(30 * time.Second)
		for p.Ready() != nil {
			if time.Now().After(deadline) {
				return fmt.Errorf("in-process processor %d did not start", i+1)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
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

// writeAllocProfile writes the allocations sampled since the process
// started to path.
func writeAllocProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("allocation profile: %w", err)
	}
	return f.Close()
}

// allocsPer is the allocations (to a tenth) and bytes (whole) the process
// made between two readings of its memory statistics, per one of n.
func allocsPer(from, to runtime.MemStats, n float64) (allocs, bytes float64) {
	return math.Round(float64(to.Mallocs-from.Mallocs)/n*10) / 10, math.Round(float64(to.TotalAlloc-from.TotalAlloc) / n)
}
