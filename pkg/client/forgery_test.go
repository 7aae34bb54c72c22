package client_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/core/receipt"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/pkg/client"
)

// TestForgedDecisionsAreDropped reproduces issue 11's attack: a forger
// watching acs.hooks.> (and the publishers' inboxes, for the exact stream
// sequence) answers every envelope with a forged allow on the decision
// subject, in every variant it can make. The tainted Bash call must come
// back as the processor's deny every time, verified, and the forgeries
// must be counted.
func TestForgedDecisionsAreDropped(t *testing.T) {
	const sessions = 12
	srv := natstest.RunServer(t)
	runProcessor(t, srv)
	forger := natstest.StartForger(t, srv, "default")
	var mu sync.Mutex
	reasons := map[string]int{}
	c := newClient(t, natstest.Connect(t, srv), client.Options{Timeout: 10 * time.Second, OnDrop: func(d client.Drop) {
		mu.Lock()
		defer mu.Unlock()
		reasons[rootCause(d.Reason)]++
		if !d.Forged() && !errors.Is(d.Reason, client.ErrOtherEnvelope) {
			t.Errorf("drop %+v neither forged nor another envelope's", d)
		}
	}})
	for s := range sessions {
		sid := fmt.Sprintf("00000000-0000-4000-8000-%012d", 100+s)
		for i, e := range examples.Taint(sid) {
			d, err := c.Decide(context.Background(), e.Data)
			if err != nil {
				t.Fatal(err)
			}
			want := "allow"
			if i == 5 {
				want = "deny"
			}
			if d.FromPosture || d.Disposition != want || !d.Verified || d.Seq == 0 || d.ReceiptKey != testSigner.KeyID {
				t.Fatalf("session %d %s: %+v, want the processor's %s", s, e.Hook, d, want)
			}
			if err := client.VerifyDecision(testSigner.Public(), "default", sid, d.Seq, d.Response, d.Receipt); err != nil {
				t.Fatalf("session %d %s: the accepted decision does not verify offline: %v", s, e.Hook, err)
			}
		}
	}
	st := c.Stats()
	// OnDrop may still be running for a late forgery: reasons under its lock.
	mu.Lock()
	t.Logf("forgeries sent %d; client stats %+v; reasons %v", forger.Sent.Load(), st, reasons)
	mu.Unlock()
	if forger.Sent.Load() == 0 || st.DroppedUnverified == 0 {
		t.Fatalf("the attack did not run: sent %d, stats %+v", forger.Sent.Load(), st)
	}
	if st.Accepted != sessions*6 {
		t.Fatalf("accepted %d decisions, want %d", st.Accepted, sessions*6)
	}
}

// rootCause names a drop reason by its sentinel.
func rootCause(err error) string {
	for _, e := range []error{receipt.ErrMissing, receipt.ErrMalformed, receipt.ErrUnknownKey, receipt.ErrMismatch,
		client.ErrNoStreamSeq, client.ErrOtherEnvelope, client.ErrOtherRequest} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	return "other: " + err.Error()
}

// A client trusting another key than the processor's takes nothing: every
// call ends with its posture (deny by default), and the decisions it saw
// are counted as unverified.
func TestWrongKeyFailsClosed(t *testing.T) {
	srv := natstest.RunServer(t)
	runProcessor(t, srv)
	other, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, natstest.Connect(t, srv), client.Options{Timeout: 500 * time.Millisecond, TrustedKeys: []ed25519.PublicKey{other}})
	d, err := c.Decide(context.Background(), examples.Session("")[0].Data)
	if err != nil || !d.FromPosture || d.Disposition != "deny" || !errors.Is(d.Failure, client.ErrTimeout) {
		t.Fatalf("%+v, %v; want deny from the posture", d, err)
	}
	if st := c.Stats(); st.DroppedUnverified == 0 || st.Accepted != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// With the explicit opt-out a client takes unsigned decisions (for
// processors run with --receipt-key none), still only its own envelope's.
func TestInsecureOptOut(t *testing.T) {
	srv := natstest.RunServer(t)
	runProcessor(t, srv)
	c := newClient(t, natstest.Connect(t, srv), client.Options{Timeout: 10 * time.Second, InsecureAcceptUnsignedDecisions: true})
	d, err := c.Decide(context.Background(), examples.Session("")[0].Data)
	if err != nil || d.FromPosture || d.Disposition != "allow" || d.Verified || d.Receipt != "" {
		t.Fatalf("%+v, %v; want an unverified allow without receipt", d, err)
	}
}

// TestForgeryWorksWithoutReceipts is the control of
// TestForgedDecisionsAreDropped: the same forger against a client that
// does not check receipts (the opt-out, and pkg/client before issue 11)
// turns the processor's deny into an allow. It keeps the attack above a
// real one.
func TestForgeryWorksWithoutReceipts(t *testing.T) {
	const sessions = 12
	srv := natstest.RunServer(t)
	runProcessor(t, srv)
	natstest.StartForger(t, srv, "default")
	c := newClient(t, natstest.Connect(t, srv), client.Options{Timeout: 10 * time.Second, InsecureAcceptUnsignedDecisions: true})
	forged := 0
	for s := range sessions {
		sid := fmt.Sprintf("00000000-0000-4000-8000-%012d", 200+s)
		e := examples.Taint(sid)
		for _, e := range e[:5] {
			if _, err := c.Decide(context.Background(), e.Data); err != nil {
				t.Fatal(err)
			}
		}
		d, err := c.Decide(context.Background(), e[5].Data)
		if err != nil {
			t.Fatal(err)
		}
		if d.Disposition == "allow" {
			forged++
		}
	}
	t.Logf("%d of %d tainted Bash calls came back allow without receipt checks", forged, sessions)
	if forged == 0 {
		t.Fatal("the forger never won: the attack in TestForgedDecisionsAreDropped proves nothing")
	}
}
