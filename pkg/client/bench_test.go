package client_test

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/pkg/client"
)

// BenchmarkDecideRoundTrip measures one synchronous decision end to end —
// client publish, stream, processor (default rules), decision stream, client
// — one at a time on an embedded server. Compare with
// BenchmarkRawSyncPublish, the floor: one synchronous JetStream publish.
func BenchmarkDecideRoundTrip(b *testing.B) {
	srv := natstest.RunServer(b)
	runProcessorB(b, srv)
	c, err := client.New(natstest.Connect(b, srv), client.Options{Timeout: 10 * time.Second, TrustedKeys: []ed25519.PublicKey{testSigner.Public()}})
	if err != nil {
		b.Fatal(err)
	}
	var envs []examples.Envelope
	b.ResetTimer()
	for i := range b.N {
		if len(envs) == 0 {
			envs = examples.Session(fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
		}
		d, err := c.Decide(context.Background(), envs[0].Data)
		if err != nil || d.FromPosture {
			b.Fatalf("%v %+v", err, d)
		}
		envs = envs[1:]
	}
}

func BenchmarkRawSyncPublish(b *testing.B) {
	srv := natstest.RunServer(b)
	js, err := jetstream.New(natstest.Connect(b, srv))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "RAW", Subjects: []string{"raw.>"}, Storage: jetstream.FileStorage}); err != nil {
		b.Fatal(err)
	}
	payload := examples.Session("")[3].Data
	b.ResetTimer()
	for i := range b.N {
		if _, err := js.Publish(ctx, "raw.x", payload, jetstream.WithMsgID(fmt.Sprint(i))); err != nil {
			b.Fatal(err)
		}
	}
}
