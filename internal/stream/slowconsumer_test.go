package stream_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/embedded"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
)

// TestSlowConsumerIsCutOff: a client subscribed to acs.> that never reads
// is disconnected as a slow consumer once more than MaxPending
// waits for it, and the processor keeps deciding meanwhile.
func TestSlowConsumerIsCutOff(t *testing.T) {
	srv, err := embedded.Start(embedded.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Logger: zerolog.Nop(),
		WriteDeadline: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	r := startProcessor(t, srv, testConfig())
	nc := r.nc
	js := natstest.JetStream(t, nc)
	w := watch(t, nc)
	waitForConsumers(t, js, testConfig().Topology.Partitions+1)

	// The slow subscriber: a raw client that subscribes, makes sure the
	// subscription is in place (PONG), then never reads again.
	u, err := url.Parse(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	slow, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	_ = slow.(*net.TCPConn).SetReadBuffer(4096)
	_ = slow.SetDeadline(time.Now().Add(waitFor))
	if _, err := slow.Write([]byte("CONNECT {\"verbose\":false,\"pedantic\":false}\r\nSUB acs.> 1\r\nPING\r\n")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(slow)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("slow subscriber before PONG: %v", err)
		}
		if strings.HasPrefix(line, "PONG") {
			break
		}
	}

	// Flood acs.> with core messages (in no stream) until the server gives
	// up on it: at most twice its pending limit.
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for i := 0; srv.NumSlowConsumersClients() == 0; i++ {
		if i > 2*embedded.MaxPending/len(chunk) {
			t.Fatalf("%d MiB published to a subscriber that never reads, and no slow consumer", i)
		}
		if err := nc.Publish("acs.flood.x", chunk); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	// Disconnected within the write deadline: the server no longer lists
	// it (only the processor's connection is left).
	testwait.CheckFor(t, waitFor, 20*time.Millisecond, func() error {
		if n := srv.NumClients(); n > 1 {
			return fmt.Errorf("the slow subscriber is still connected (%d clients)", n)
		}
		return nil
	})

	// The processor kept deciding: an envelope published now is refused
	// (not JSON), with a decision and a dead letter.
	seq := natstest.Publish(t, js, "acs.hooks.default.00000000-0000-4000-8000-000000000001.userMessage", []byte("not json"))
	w.await(t, seq, true, true)
	if !nc.IsConnected() {
		t.Fatal("the processor's connection was cut off too")
	}
}
