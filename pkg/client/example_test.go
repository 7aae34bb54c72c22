package client_test

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/core/receipt"
	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/pkg/client"
	rulepack "github.com/turnguard/turnguard/rules"
	"github.com/turnguard/turnguard/schema"
)

// An agent framework asks before each step and acts on the answer. Here the
// example session of examples/taint runs against a processor with the
// default rule pack: a tool's untrusted output comes in, and the
// consequential call a turn later is denied.
func ExampleClient_Decide() {
	nc, key, stop := startTurnguard()
	defer stop()

	c, err := client.New(nc, client.Options{
		Timeout:     10 * time.Second,
		TrustedKeys: []ed25519.PublicKey{key}, // <data-dir>/receipt-key.pub
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for _, e := range examples.Taint("") {
		d, err := c.Decide(context.Background(), e.Data)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(e.Hook, d.Disposition, d.ReasonCodes)
	}
	// Output:
	// sessionStart allow []
	// turnStart allow []
	// toolCallResult allow []
	// turnEnd allow []
	// turnStart allow []
	// toolCallRequest deny [untrusted_into_consequential aarm_cumulative_taint]
}

// startTurnguard runs what `processor` runs — an embedded NATS JetStream
// server and the stream processor with the default rules — in process, and
// returns a connection to it, the processor's receipt public key and a
// function that stops both.
func startTurnguard() (*nats.Conn, ed25519.PublicKey, func()) {
	dir, err := os.MkdirTemp("", "turnguard-example-")
	if err != nil {
		log.Fatal(err)
	}
	srv, err := server.NewServer(&server.Options{JetStream: true, StoreDir: dir, DontListen: true, NoSigs: true, NoLog: true})
	if err != nil {
		log.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		log.Fatal("NATS server did not start")
	}
	connect := func() *nats.Conn {
		nc, err := nats.Connect("", nats.InProcessServer(srv))
		if err != nil {
			log.Fatal(err)
		}
		return nc
	}
	v, err := schema.New()
	if err != nil {
		log.Fatal(err)
	}
	rs, err := rulepack.DefaultSet()
	if err != nil {
		log.Fatal(err)
	}
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		log.Fatal(err)
	}
	signer := receipt.NewSigner(priv)
	pnc := connect()
	p, err := stream.New(pnc, guardian.New(v, guardian.Config{Receipts: signer}), policy.NewSource(rs), stream.DefaultConfig(), zerolog.Nop())
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	nc := connect()
	return nc, signer.Public(), func() {
		nc.Close()
		cancel()
		if err := <-done; err != nil {
			log.Print(err)
		}
		pnc.Close()
		srv.Shutdown()
		srv.WaitForShutdown()
		_ = os.RemoveAll(dir)
	}
}
