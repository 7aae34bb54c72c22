package agentdojo_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/agentdojo"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/core/receipt"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/internal/gateway"
	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
	"github.com/turnguard/turnguard/schema"
)

// startEndpoint runs a processor deciding with rs on an embedded server,
// and its HTTP endpoint (open, handshake required), as `processor --http
// --auth none` does. It returns the endpoint's URL.
func startEndpoint(t *testing.T, rs *policy.Set) string {
	t.Helper()
	srv := natstest.RunServer(t)
	v, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer := receipt.NewSigner(priv)
	key := bytes.Repeat([]byte{7}, turnstate.StateKeySize)
	pcfg := stream.DefaultConfig()
	pcfg.Topology.Partitions = 2
	pcfg.StateKey = key
	pcfg.Topology.HandshakeTTL = time.Hour
	p, err := stream.New(natstest.Connect(t, srv), guardian.New(v, guardian.Config{Receipts: signer}), policy.NewSource(rs), pcfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	testwait.CheckFor(t, time.Minute, 10*time.Millisecond, p.Ready)
	gw, err := gateway.New(context.Background(), natstest.Connect(t, srv), v,
		gateway.Config{Tenant: agentdojo.Tenant, Timeout: 30 * time.Second, Receipts: signer, StateKey: key, Handshake: gateway.HandshakeRequired}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(gw.Handler())
	t.Cleanup(hs.Close)
	return hs.URL + "/acs"
}

// TestLiveMatchesInProcess: the sample's sessions sent to a running
// processor over POST /acs get the decisions, rules and reasons the
// in-process core gives them, call by call.
func TestLiveMatchesInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a processor")
	}
	rs := benchRules(t)
	url := startEndpoint(t, rs)
	paths := []string{"testdata/sample.jsonl"}
	want, err := agentdojo.Bench(context.Background(), inProcess(t), rs, paths, agentdojo.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	live := &agentdojo.Live{URL: url, Salt: "run-1"}
	got, err := agentdojo.Bench(context.Background(), live, rs, paths, agentdojo.Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Runs) != len(want.Runs) || len(got.Runs) == 0 {
		t.Fatalf("%d runs live, %d in-process", len(got.Runs), len(want.Runs))
	}
	stopped := 0
	for i, w := range want.Runs {
		g := got.Runs[i]
		if g.Source != w.Source || len(g.Calls) != len(w.Calls) {
			t.Fatalf("run %d: %s with %d calls live, %s with %d in-process", i, g.Source, len(g.Calls), w.Source, len(w.Calls))
		}
		if g.Session == w.Session {
			t.Errorf("%s: the live session reuses the in-process session id", g.Source)
		}
		for j := range w.Calls {
			gd, wd := g.Calls[j].Decision, w.Calls[j].Decision
			if gd.Decision != wd.Decision || strings.Join(gd.Rules, ",") != strings.Join(wd.Rules, ",") ||
				strings.Join(gd.ReasonCodes, ",") != strings.Join(wd.ReasonCodes, ",") ||
				!sameReason(gd.Reason, wd.Reason) {
				t.Errorf("%s call %d (%s): live %+v, in-process %+v", w.Source, j, w.Calls[j].Tool, gd, wd)
			}
			if wd.Decision != "allow" {
				stopped++
			}
		}
		if g.Refused != 0 || w.Refused != 0 || g.Others != w.Others || g.Score != w.Score {
			t.Errorf("%s: live refused %d (%s) others %d score %+v; in-process refused %d others %d score %+v",
				w.Source, g.Refused, g.FirstError, g.Others, g.Score, w.Refused, w.Others, w.Score)
		}
	}
	if stopped == 0 {
		t.Error("no call of the sample is denied or asked about: the comparison proves little")
	}

	// The same runs again need new ids: a processor refuses request ids it
	// has seen (here, every envelope of the first live run).
	again, err := agentdojo.Bench(context.Background(), &agentdojo.Live{URL: url, Salt: "run-1"}, rs, paths[:1], agentdojo.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if again.Rows[len(again.Rows)-1].Refused == 0 {
		t.Error("sending the same sessions twice refused nothing")
	}
}

func TestLiveUnreachable(t *testing.T) {
	hs := httptest.NewServer(nil) // answers 404
	defer hs.Close()
	_, err := agentdojo.Bench(context.Background(), &agentdojo.Live{URL: hs.URL + "/acs"}, benchRules(t), []string{"testdata/sample.jsonl"}, agentdojo.Options{Workers: 1})
	if err == nil || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "sample.jsonl:1") {
		t.Fatalf("error %v, want the endpoint's 404 for the first run", err)
	}
}

// requestIDs matches the ids a session's envelopes carry (UUIDs).
var requestIDs = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// sameReason compares two decisions' reasons but for the request ids
// they cite: a reason names the request a value came from, and each
// session has request ids of its own.
func sameReason(a, b string) bool {
	return requestIDs.ReplaceAllString(a, "<id>") == requestIDs.ReplaceAllString(b, "<id>")
}
