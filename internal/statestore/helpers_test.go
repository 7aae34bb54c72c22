package statestore_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
)

// testBucket runs a server and creates a KV bucket on it as the state
// bucket is made (one value per key), returning it with its stream, which
// a store reads through to see delete markers (Store.WithMarkers), and the
// JetStream context that made it.
func testBucket(tb testing.TB, name string) (jetstream.JetStream, jetstream.KeyValue, jetstream.Stream) {
	tb.Helper()
	srv := natstest.RunServer(tb)
	js, err := jetstream.New(natstest.Connect(tb, srv))
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: name, History: 1})
	if err != nil {
		tb.Fatal(err)
	}
	st, err := js.Stream(ctx, acs.KVStream(name))
	if err != nil {
		tb.Fatal(err)
	}
	return js, kv, st
}
