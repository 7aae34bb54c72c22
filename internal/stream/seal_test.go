package stream_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/receipt"
	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/internal/testkit/acstest"
	"github.com/turnguard/turnguard/internal/testkit/guardiantest"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/internal/topology"
	"github.com/turnguard/turnguard/schema"
)

// TestUnsignableIsIsolatedNotPublished: a response the processor cannot
// sign — its keyring's default key is gone, and the envelope named no key
// it has — is never published unsigned. The envelope is isolated: refused
// -32603 in the dead-letter stream and alerted; its refusal cannot be
// signed either, so no decision is stored for it at all. An envelope signed
// with a key the keyring has is decided and signed as before, after it in
// the same partition.
func TestUnsignableIsIsolatedNotPublished(t *testing.T) {
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv)
	js, _ := jetstream.New(nc)
	w := watch(t, nc)

	kr, err := acs.NewKeyring(map[string][]byte{"k1": bytes.Repeat([]byte{1}, 32)}, "k1", nil)
	if err != nil {
		t.Fatal(err)
	}
	// A configured default the keyring no longer has.
	kr.Default = "gone"
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	v, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Topology.Partitions = 1
	proc := startProcessorOf(t, srv, cfg, guardiantest.DefaultRules(t), guardian.New(v, guardian.Config{Keys: kr, Receipts: receipt.NewSigner(priv)}))
	waitForConsumers(t, js, 2)

	const unsigned, signed = "00000000-0000-4000-8000-00000000c001", "00000000-0000-4000-8000-00000000c002"
	subject, data := turnEnvelope(unsigned, 0, true, 16)
	bad := natstest.Publish(t, js, subject, data)
	subject, data = turnEnvelope(signed, 2, true, 16)
	good := natstest.Publish(t, js, subject, acstest.SignJSON(t, kr, "k1", data))

	// The signed envelope comes after the unsignable one in the one
	// partition: once its decision is out, the other was done with.
	d, _ := w.await(t, good, true, false)
	if d.Header.Get(acs.HdrDecision) != "allow" || d.Header.Get(acs.HdrReceipt) == "" {
		t.Fatalf("the signed envelope: %s %q", d.Header, d.Data)
	}
	var r acs.Response
	if err := json.Unmarshal(d.Data, &r); err != nil || r.Sig() == nil || r.Sig().KeyID != "k1" {
		t.Fatalf("the signed envelope's decision is not signed with k1: %s", d.Data)
	}
	_, dl := w.await(t, bad, false, true)
	if code, reason := dl.Header.Get(acs.HdrErrorCode), dl.Header.Get(acs.HdrErrorReason); code != "-32603" || reason != stream.ReasonUnappliable {
		t.Errorf("dead letter %s %s, want -32603 %s", code, reason, stream.ReasonUnappliable)
	}
	if n := proc.p.Stats().Isolated.Load(); n != 1 {
		t.Errorf("Stats.Isolated = %d, want 1", n)
	}
	// Nothing stored on the unsignable envelope's decision subject.
	ds, err := js.Stream(context.Background(), acs.DecisionsStream)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := ds.GetLastMsgForSubject(context.Background(), acs.DecisionSubject("default", unsigned)); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Fatalf("a decision was stored for the unsignable envelope (%v): %v", err, m)
	}
}

// TestBatchReceipts: a backlog decided in batches gets batch receipts —
// one signature per batch, each decision and alert carrying its inclusion
// path — and every one of them verifies for its own subject, envelope and
// body; with Config.SingleReceipts each is signed on its own.
func TestBatchReceipts(t *testing.T) {
	for _, single := range []bool{false, true} {
		t.Run(map[bool]string{false: "batch", true: "single"}[single], func(t *testing.T) {
			srv := natstest.RunServer(t)
			nc := natstest.Connect(t, srv)
			js := natstest.JetStream(t, nc)
			w := watch(t, nc)
			// The backlog is stored before the processor starts, so that
			// its batches are full.
			if err := topology.Ensure(context.Background(), js, testConfig().Topology); err != nil {
				t.Fatal(err)
			}
			var seqs []uint64
			for i := range 12 {
				sid := fmt.Sprintf("00000000-0000-4000-8000-0000000b%04d", i)
				for _, e := range examples.Taint(sid) {
					seqs = append(seqs, natstest.Publish(t, js, e.Subject("default", sid), e.Data))
				}
			}
			_, priv, _ := ed25519.GenerateKey(rand.Reader)
			signer := receipt.NewSigner(priv)
			v, err := schema.New()
			if err != nil {
				t.Fatal(err)
			}
			cfg := testConfig()
			cfg.SingleReceipts = single
			startProcessorOf(t, srv, cfg, guardiantest.DefaultRules(t), guardian.New(v, guardian.Config{Receipts: signer}))
			// Every partition done, not only the last envelope's.
			for _, seq := range seqs {
				w.await(t, seq, true, false)
			}

			batched, checked := 0, 0
			for _, name := range []string{acs.DecisionsStream, acs.AlertsStream} {
				for _, m := range natstest.StoredMsgs(t, js, name) {
					seq, err := strconv.ParseUint(m.Header.Get(acs.HdrStreamSeq), 10, 64)
					if err != nil {
						t.Fatal(err)
					}
					b := receipt.Alert(m.Subject, seq)
					if name == acs.DecisionsStream {
						b = receipt.Binding{Kind: receipt.KindDecision, Subject: m.Subject, Seq: seq}
					}
					rc := m.Header.Get(acs.HdrReceipt)
					if err := receipt.Verify(signer.Public(), b, m.Data, rc); err != nil {
						t.Fatalf("%s seq %d: %v", m.Subject, seq, err)
					}
					if m.Header.Get(acs.HdrReceiptKey) != signer.KeyID {
						t.Fatalf("%s seq %d: receipt key %q", m.Subject, seq, m.Header.Get(acs.HdrReceiptKey))
					}
					if strings.Contains(rc, ".") {
						batched++
					}
					checked++
				}
			}
			if want := len(seqs); checked <= want {
				t.Fatalf("%d receipts checked, want the %d decisions and their alerts", checked, want)
			}
			if single && batched != 0 || !single && batched == 0 {
				t.Fatalf("%d of %d receipts are batch receipts (single %v)", batched, checked, single)
			}
		})
	}
}
