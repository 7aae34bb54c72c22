package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/internal/testkit/processortest"
	"github.com/turnguard/turnguard/internal/testkit/syncbuf"
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
	var out bytes.Buffer
	// The run logs from its publishers' goroutines.
	var errOut syncbuf.Buffer
	args := []string{"run", "--baseline=false", "--duration", "5s", "--sessions", "20", "--max-envelopes", "400", "--settle", "30s", "--json"}
	if code := run(ctx, args, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut.String(), out.String())
	}
	var rep runReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, out.String())
	}
	t.Logf("%d envelopes published to %s, reconcile ok %v", rep.Published, rep.Target, rep.Reconcile.OK)
	if rep.Target != rig.Server.ClientURL() || !rep.Reconcile.OK || rep.Published == 0 {
		t.Fatalf("target %q (want %s), %d published, reconcile %+v", rep.Target, rig.Server.ClientURL(), rep.Published, rep.Reconcile)
	}
}
