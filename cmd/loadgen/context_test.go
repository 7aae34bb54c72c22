package main

import (
	"context"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/internal/testkit/processortest"
)

// loadgen finds an authenticated server through a context of the nats
// CLI named by TURNGUARD_LOADGEN_NATS_CONTEXT (its own: TURNGUARD_NATS_CONTEXT is the processor's), with an admin credential, and its
// run against the processor there reconciles.
func TestRunThroughNATSContext(t *testing.T) {
	// No skew window, as loadgen's synthetic timestamps need.
	cfg := stream.DefaultConfig()
	cfg.Topology.Partitions = 2
	rig := processortest.Start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rig.WriteContext(t, "tg-admin")
	t.Setenv("TURNGUARD_LOADGEN_NATS_CONTEXT", "tg-admin")
	rep, _, _ := runJSON[runReport](t, ctx, "run", "--baseline=false", "--duration", "5s", "--sessions", "20", "--max-envelopes", "400", "--settle", "30s", "--json")
	t.Logf("%d envelopes published to %s, reconcile ok %v", rep.Published, rep.Target, rep.Reconcile.OK)
	if rep.Target != rig.Server.ClientURL() || !rep.Reconcile.OK || rep.Published == 0 {
		t.Fatalf("target %q (want %s), %d published, reconcile %+v", rep.Target, rig.Server.ClientURL(), rep.Published, rep.Reconcile)
	}
}
