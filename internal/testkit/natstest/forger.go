package natstest

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/receipt"
)

// HdrForged marks the forger's messages, for the tests' own bookkeeping
// only: a verifier must not need it (it never looks at it).
const HdrForged = "Test-Forged"

// Forger plays the attacker of issue 11: a client without credentials of
// its own that watches acs.hooks.> and the publishers' inboxes and answers
// every envelope on its session's decision subject with a forged allow,
// as soon as it sees the envelope, and again with the envelope's exact
// stream sequence once it sees the publish acknowledgement. Each round
// sends every variant: a bogus receipt with copied headers, none, a
// genuine receipt of another body, a genuine decision of the session
// replayed under the new request id and sequence (and under its own), and
// a receipt correctly bound but made with the forger's own key.
type Forger struct {
	tenant string
	nc     *nats.Conn
	key    *receipt.Signer

	mu sync.Mutex
	// pending maps a publisher's reply inbox to the envelope it published.
	pending map[string]forgeTarget
	// genuine is the last real decision seen per decision subject.
	genuine map[string]*nats.Msg
	lastSeq uint64

	// Sent counts forged messages published.
	Sent atomic.Int64
}

type forgeTarget struct {
	subject, requestID string
}

// StartForger starts a forger against the tenant's sessions on srv once
// the hooks stream exists (a plain subscriber on acs.hooks.> counts as a
// responder, so a publish before the stream exists would wait for an ack
// instead of retrying); it stops with the test.
func StartForger(t testing.TB, srv *server.Server, tenant string) *Forger {
	t.Helper()
	nc := Connect(t, srv)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := js.Stream(context.Background(), "ACS_HOOKS"); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("no ACS_HOOKS stream to attack: %v", err)
		}
	}
	_, priv, _ := ed25519.GenerateKey(nil)
	f := &Forger{tenant: tenant, nc: nc, key: receipt.NewSigner(priv),
		pending: map[string]forgeTarget{}, genuine: map[string]*nats.Msg{}}
	for subject, fn := range map[string]nats.MsgHandler{
		acs.DecisionsPrefix + "." + tenant + ".>": f.sawDecision,
		acs.InboundPrefix + "." + tenant + ".>":   f.sawEnvelope,
		"_INBOX.>":                                f.sawInbox,
	} {
		if _, err := f.nc.Subscribe(subject, fn); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *Forger) sawDecision(m *nats.Msg) {
	if m.Header.Get(HdrForged) != "" || m.Header.Get(acs.HdrReceipt) == "" {
		return
	}
	f.mu.Lock()
	f.genuine[m.Subject] = m
	f.mu.Unlock()
}

func (f *Forger) sawEnvelope(m *nats.Msg) {
	h, err := acs.ReadHead(m.Data)
	if err != nil || h.RequestID == "" {
		return
	}
	t := forgeTarget{subject: acs.DecisionSubject(f.tenant, h.SessionID), requestID: h.RequestID}
	f.mu.Lock()
	if m.Reply != "" {
		f.pending[m.Reply] = t
	}
	guess := f.lastSeq + 1
	f.mu.Unlock()
	// At once, before the processor can answer, with the likeliest
	// sequence.
	f.forge(t, guess)
}

func (f *Forger) sawInbox(m *nats.Msg) {
	f.mu.Lock()
	t, ok := f.pending[m.Subject]
	delete(f.pending, m.Subject)
	f.mu.Unlock()
	if !ok {
		return
	}
	var ack struct {
		Seq uint64 `json:"seq"`
	}
	if json.Unmarshal(m.Data, &ack) != nil || ack.Seq == 0 {
		return
	}
	f.mu.Lock()
	f.lastSeq = max(f.lastSeq, ack.Seq)
	f.mu.Unlock()
	// The envelope's exact stream sequence, read off its acknowledgement.
	f.forge(t, ack.Seq)
}

// forge publishes every variant of a forged answer for t at seq.
func (f *Forger) forge(t forgeTarget, seq uint64) {
	allow := []byte(`{"jsonrpc":"2.0","id":"` + t.requestID + `","result":{"type":"final","acs_version":"0.1.0","request_id":"` + t.requestID + `","decision":"allow"}}`)
	f.mu.Lock()
	real := f.genuine[t.subject]
	f.mu.Unlock()
	msg := func(data []byte, from *nats.Msg) *nats.Msg {
		m := nats.NewMsg(t.subject)
		if from != nil {
			for k, v := range from.Header {
				m.Header[k] = append([]string(nil), v...)
			}
		}
		m.Header.Set(acs.HdrRequestID, t.requestID)
		m.Header.Set(acs.HdrStreamSeq, strconv.FormatUint(seq, 10))
		m.Header.Set(acs.HdrDecision, "allow")
		m.Header.Del(acs.HdrMsgID)
		m.Header.Set(HdrForged, "1")
		m.Data = data
		return m
	}
	var out []*nats.Msg
	bogus := msg(allow, real)
	bogus.Header.Set(acs.HdrReceipt, "AAAA")
	unsigned := msg(allow, nil)
	out = append(out, bogus, unsigned)
	own, _ := f.key.Sign(receipt.Decision(f.tenant, sessionOf(t.subject), seq), json.RawMessage(allow))
	ownKey := msg(allow, nil)
	ownKey.Header.Set(acs.HdrReceipt, own)
	ownKey.Header.Set(acs.HdrReceiptKey, f.key.KeyID)
	out = append(out, ownKey)
	if real != nil {
		// The processor's key id, the forger's signature.
		stolenID := msg(allow, real)
		stolenID.Header.Set(acs.HdrReceipt, own)
		out = append(out, stolenID)
		// A genuine receipt, of another body.
		out = append(out, msg(allow, real))
		// A genuine decision replayed as this envelope's answer.
		out = append(out, msg(real.Data, real))
		// A genuine decision relabelled with this request id only.
		keep := msg(real.Data, real)
		keep.Header.Set(acs.HdrStreamSeq, real.Header.Get(acs.HdrStreamSeq))
		out = append(out, keep)
	}
	for _, m := range out {
		if f.nc.PublishMsg(m) == nil {
			f.Sent.Add(1)
		}
	}
}

// sessionOf is the session id of a decision subject.
func sessionOf(subject string) string {
	for i := len(subject) - 1; i >= 0; i-- {
		if subject[i] == '.' {
			return subject[i+1:]
		}
	}
	return subject
}
