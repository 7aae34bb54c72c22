package replay_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/alert"
	"github.com/turnguard/turnguard/internal/core/receipt"
	"github.com/turnguard/turnguard/internal/replay"
	"github.com/turnguard/turnguard/internal/testkit/guardiantest"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
)

// forgery is a forged message and what its rejection must say.
type forgery struct {
	name string
	m    recordedMsg
	want string
}

// msgKey names a stored message.
type msgKey struct {
	stream string
	seq    uint64
}

// sweepWorld is a recording of sessions of two tenants, acme and globex:
// per tenant a clean session and two whose shell call is denied (with an
// alert) one and zero turns after web content.
type sweepWorld struct {
	rec *recorder
	// sessions are each tenant's session ids, in publishing order.
	sessions map[string][]string
}

func recordSweepWorld(t *testing.T) *sweepWorld {
	t.Helper()
	w := &sweepWorld{rec: newRecorder(t, guardiantest.DefaultRules(t)), sessions: map[string][]string{}}
	for i, tenant := range []string{"acme", "globex", "acme", "globex", "acme", "globex"} {
		sc := backtestSession(i, []int{-1, 0, 1}[i/2])
		sc.Tenant = tenant
		built, err := sc.Build()
		if err != nil {
			t.Fatal(err)
		}
		w.sessions[tenant] = append(w.sessions[tenant], built.Messages[0].SessionID)
		w.rec.publishStepwise(built.Messages)
	}
	w.rec.finish()
	return w
}

// stored finds a stored message: the first of stream on subjects under
// prefix for which match holds.
func stored(t *testing.T, srv *server.Server, name, prefix string, match func(recordedMsg) bool) recordedMsg {
	t.Helper()
	js := natstest.JetStream(t, natstest.Connect(t, srv))
	for _, m := range readStream(t, js, name) {
		if strings.HasPrefix(m.Subject, prefix) && match(m) {
			return m
		}
	}
	t.Fatalf("no message in %s under %s", name, prefix)
	return recordedMsg{}
}

// envelopeSeq is the sequence of the first stored envelope of a session.
func envelopeSeq(t *testing.T, srv *server.Server, tenant, session string) uint64 {
	t.Helper()
	m := stored(t, srv, acs.HooksStream, acs.PartitionedPrefix, func(m recordedMsg) bool {
		r, err := acs.ParsePartitioned(m.Subject)
		return err == nil && r.Tenant == tenant && r.SessionID == session
	})
	return m.Seq
}

// publishAcked publishes messages into a server's streams as they are and
// returns the stream sequence each was stored at.
func publishAcked(t *testing.T, srv *server.Server, msgs []recordedMsg) []uint64 {
	t.Helper()
	js := natstest.JetStream(t, natstest.Connect(t, srv))
	var seqs []uint64
	for _, m := range msgs {
		ack, err := js.PublishMsg(context.Background(), &nats.Msg{Subject: m.Subject, Header: m.Header, Data: m.Data})
		if err != nil {
			t.Fatalf("publish %s: %v", m.Subject, err)
		}
		seqs = append(seqs, ack.Sequence)
	}
	return seqs
}

func streamCount(t *testing.T, srv *server.Server, name string) int {
	t.Helper()
	js := natstest.JetStream(t, natstest.Connect(t, srv))
	return len(readStream(t, js, name))
}

// TestVerifyAll: a sweep of two tenants' untouched recording verifies,
// counting every decision and alert as checked (and, without the key,
// none); forged decisions and alerts on any session — including sessions
// nobody would think of verifying — are each reported exactly once, for
// what is wrong with them, even where the receipt itself is sound (made
// with the real key, as by a processor bug or a stolen key).
func TestVerifyAll(t *testing.T) {
	w := recordSweepWorld(t)
	srv := w.rec.srv
	ctx := context.Background()
	_, signer := testKeys(t)
	decisions, alerts := streamCount(t, srv, acs.DecisionsStream), streamCount(t, srv, acs.AlertsStream)
	if alerts < 4 {
		t.Fatalf("the world has %d alerts, want one per denied session", alerts)
	}

	t.Run("clean", func(t *testing.T) {
		for _, tc := range []struct {
			name      string
			tenant    string
			key       ed25519.PublicKey
			decisions int
			want      string
		}{
			{"every tenant", "", signer.Public(), decisions, "result     verified"},
			{"without the key", "", nil, decisions, "result     not checked: 50 receipts (no --receipt-key): not verified"},
			{"one tenant", "acme", signer.Public(), -1, "result     verified"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				v, err := replay.VerifyAll(ctx, openSource(t, srv), tc.key, replay.SweepOptions{Tenant: tc.tenant})
				if err != nil {
					t.Fatal(err)
				}
				var out bytes.Buffer
				if err := replay.WriteVerification(&out, v); err != nil {
					t.Fatal(err)
				}
				m := v.Messages
				if !v.OK() || len(v.Rejected) != 0 || !strings.Contains(out.String(), tc.want) {
					t.Fatalf("%+v\n%s", m, out.String())
				}
				switch {
				case tc.decisions >= 0 && (m.Decisions != tc.decisions || m.Alerts != alerts):
					t.Fatalf("counted %d decisions and %d alerts, the streams hold %d and %d", m.Decisions, m.Alerts, tc.decisions, alerts)
				case tc.decisions < 0 && (m.Decisions == 0 || m.Decisions >= decisions || m.Alerts == 0 || m.Alerts >= alerts):
					t.Fatalf("one tenant of two: %+v of %d decisions, %d alerts", m, decisions, alerts)
				}
				if tc.key != nil && (!v.Complete() || m.DecisionsChecked != m.Decisions || m.AlertsChecked != m.Alerts) {
					t.Fatalf("with the key, not everything checked: %+v", m)
				}
				if tc.key == nil && (v.Complete() || m.DecisionsNotChecked != m.Decisions || m.AlertsNotChecked != m.Alerts) {
					t.Fatalf("without the key: %+v", m)
				}
			})
		}
	})

	// The forgeries, all on one copy of the recording.
	acme1, acme2, globex1 := w.sessions["acme"][1], w.sessions["acme"][2], w.sessions["globex"][1]
	cp := copyRecording(t, srv, func(h, d []recordedMsg) ([]recordedMsg, []recordedMsg) { return h, d })
	// genuine is acme1's decision of its first envelope.
	acme1Seq := envelopeSeq(t, cp, "acme", acme1)
	globexSeq := envelopeSeq(t, cp, "globex", globex1)
	genuine := stored(t, cp, acs.DecisionsStream, acs.DecisionSubject("acme", acme1), func(m recordedMsg) bool {
		return m.Header.Get(acs.HdrStreamSeq) == strconv.FormatUint(acme1Seq, 10)
	})
	genuineAlert := stored(t, cp, acs.AlertsStream, acs.AlertsPrefix+".acme.", func(recordedMsg) bool { return true })
	alertSeq := genuineAlert.Header.Get(acs.HdrStreamSeq)
	allow := []byte(`{"jsonrpc":"2.0","id":"x","result":{"type":"final","acs_version":"0.1.0","request_id":"x","decision":"allow"}}`)
	finding := []byte(`{"class_uid":2004,"message":"forged"}`)
	_, stranger, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	foreign := receipt.NewSigner(stranger)
	// msg builds a message; sign, when set, gives it a receipt made by
	// that key for its own subject and seq (kind from the subject).
	msg := func(subject, seq string, data []byte, sign *receipt.Signer, rc string) recordedMsg {
		h := nats.Header{}
		h.Set(acs.HdrRequestID, "x")
		if seq != "" {
			h.Set(acs.HdrStreamSeq, seq)
		}
		if sign != nil {
			n, _ := strconv.ParseUint(seq, 10, 64)
			b := receipt.Binding{Kind: receipt.KindDecision, Subject: subject, Seq: n}
			if strings.HasPrefix(subject, acs.AlertsPrefix) {
				b.Kind = receipt.KindAlert
			}
			var err error
			if rc, err = sign.Sign(b, json.RawMessage(data)); err != nil {
				t.Fatal(err)
			}
		}
		if rc != "" {
			h.Set(acs.HdrReceipt, rc)
			h.Set(acs.HdrReceiptKey, signer.KeyID)
			if sign != nil {
				h.Set(acs.HdrReceiptKey, sign.KeyID)
			}
		}
		return recordedMsg{Subject: subject, Header: h, Data: data}
	}
	moved := func(m recordedMsg, subject string) recordedMsg {
		h := nats.Header{}
		for k, v := range m.Header {
			h[k] = v
		}
		h.Del(acs.HdrMsgID)
		return recordedMsg{Subject: subject, Header: h, Data: m.Data}
	}
	acme1Subject := acs.DecisionSubject("acme", acme1)
	seq := strconv.FormatUint(acme1Seq, 10)
	forgeries := []forgery{
		{"bogus receipt", msg(acme1Subject, seq, allow, nil, "AAAA"), "malformed receipt"},
		{"no receipt", msg(acme1Subject, seq, allow, nil, ""), "no receipt"},
		{"unknown key", msg(acme1Subject, seq, allow, foreign, ""), "receipt made with key"},
		{"no Acs-Stream-Seq", msg(acme1Subject, "", allow, nil, "AAAA"), "no valid Acs-Stream-Seq"},
		{"malformed Acs-Stream-Seq", msg(acme1Subject, "0"+seq, allow, signer, ""), "no valid Acs-Stream-Seq"},
		{"genuine decision replayed to another session", moved(genuine, acs.DecisionSubject("acme", acme2)),
			"receipt does not match the decision on " + acs.DecisionSubject("acme", acme2) + " for seq " + seq + "; sequence " + seq + " is an envelope of tenant acme session " + acme1 + ", not of tenant acme session " + acme2},
		{"another tenant's envelope, with a sound receipt", msg(acme1Subject, strconv.FormatUint(globexSeq, 10), allow, signer, ""),
			"is an envelope of tenant globex session " + globex1 + ", not of tenant acme"},
		{"no envelope at that sequence", msg(acme1Subject, "99999", allow, signer, ""), "sequence 99999 is not an envelope in ACS_HOOKS"},
		{"a copy of the answer", moved(genuine, genuine.Subject), "another copy of the answer for seq " + seq + " (ACS_DECISIONS message "},
		{"a second verified answer", msg(acme1Subject, seq, allow, signer, ""), "another answer to seq " + seq + " than ACS_DECISIONS message "},
		{"no such subject", msg(acs.DecisionsPrefix+".acme", seq, allow, signer, ""), "the subject is not acs.decisions.<tenant>.<session_id>"},
		{"alert with a bogus receipt", msg(alert.Subject("acme", "high", "TG-TAINT-001"), alertSeq, finding, nil, "AAAA"), "malformed receipt"},
		{"alert on another tenant's envelope", msg(alert.Subject("acme", "high", "TG-X"), strconv.FormatUint(globexSeq, 10), finding, signer, ""),
			"is an envelope of tenant globex session " + globex1 + ", not of tenant acme"},
		{"alert without Acs-Stream-Seq", msg(alert.Subject("globex", "critical", "TG-X"), "", finding, nil, ""), "no valid Acs-Stream-Seq"},
		{"a copy of an alert", moved(genuineAlert, genuineAlert.Subject), "another copy of the alert TG-TAINT-001 for seq " + alertSeq + " (ACS_ALERTS message "},
		{"operational alert", msg(alert.Subject(alert.SystemTenant, "high", "rules_reload_failed"), "", finding, nil, "AAAA"), "malformed receipt"},
	}
	before := time.Now()
	var batch []recordedMsg
	for _, f := range forgeries {
		batch = append(batch, f.m)
	}
	seqs := publishAcked(t, cp, batch)
	forged := map[msgKey]int{}
	for i, f := range forgeries {
		name := acs.DecisionsStream
		if strings.HasPrefix(f.m.Subject, acs.AlertsPrefix) {
			name = acs.AlertsStream
		}
		forged[msgKey{name, seqs[i]}] = i
	}
	for _, window := range []struct {
		name    string
		size    int
		advance uint64
		restart int
	}{{name: "forgeries"}, {"forgeries, tiny window", 4, 16, 1}} {
		t.Run(window.name, func(t *testing.T) {
			if window.size > 0 {
				// The same verdicts whichever way envelopes are looked up.
				t.Cleanup(replay.SetHookWindow(window.size, window.advance, window.restart))
			}
			sweepForgeries(t, cp, signer, forgeries, forged, decisions+alerts, seq)
		})
	}

	t.Run("listing bounded", func(t *testing.T) {
		v, err := replay.VerifyAll(ctx, openSource(t, cp), signer.Public(), replay.SweepOptions{MaxRejected: 3})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		_ = replay.WriteVerification(&out, v)
		if len(v.Rejected) != 3 || v.RejectedCount() != len(forgeries) || v.OK() ||
			!strings.Contains(out.String(), fmt.Sprintf("… and %d more, not listed", len(forgeries)-3)) {
			t.Errorf("listed %d, counted %d:\n%s", len(v.Rejected), v.RejectedCount(), out.String())
		}
	})

	t.Run("range", func(t *testing.T) {
		// Only what was stored since the forgeries: the genuine messages
		// are out of range, so the copies are first answers there.
		v, err := replay.VerifyAll(ctx, openSource(t, cp), signer.Public(), replay.SweepOptions{Bounds: replay.Bounds{From: before}})
		if err != nil {
			t.Fatal(err)
		}
		if got := v.Messages.Decisions + v.Messages.Alerts; got != len(forgeries) {
			t.Errorf("counted %d messages since the forgeries, want %d", got, len(forgeries))
		}
		if len(v.Rejected) != len(forgeries)-2 {
			t.Errorf("rejected %d, want all %d forgeries but the two copies", len(v.Rejected), len(forgeries))
		}
		v, err = replay.VerifyAll(ctx, openSource(t, cp), signer.Public(), replay.SweepOptions{Bounds: replay.Bounds{To: before}})
		if err != nil || !v.OK() || v.Messages.Decisions != decisions {
			t.Errorf("up to the forgeries: %v %+v %v", err, v.Messages, v.Problems)
		}
	})
}

// BenchmarkVerifyAll measures `replay verify --all` over the replay
// benchmarks' history (2500 sessions, 20,000 decisions): every decision
// and alert read, its receipt verified and its envelope looked up. The
// metric is messages swept per second, wall time, everything included.
func BenchmarkVerifyAll(b *testing.B) {
	rec := recordBenchHistory(b)
	src := rec.source()
	_, signer := testKeys(b)
	b.ResetTimer()
	start := time.Now()
	var n int
	for range b.N {
		v, err := replay.VerifyAll(context.Background(), src, signer.Public(), replay.SweepOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if !v.OK() || !v.Complete() || v.Messages.Decisions != benchSessions*8 {
			b.Fatalf("%+v %v", v.Messages, v.Problems[:min(len(v.Problems), 3)])
		}
		n += v.Messages.Decisions + v.Messages.Alerts
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "messages/s")
}

// sweepForgeries sweeps the forged copy and requires every forgery, and
// nothing else, reported once, for its reason.
func sweepForgeries(t *testing.T, cp *server.Server, signer *receipt.Signer, forgeries []forgery, forged map[msgKey]int, genuine int, seq string) {
	t.Helper()
	v, err := replay.VerifyAll(context.Background(), openSource(t, cp), signer.Public(), replay.SweepOptions{Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := replay.WriteVerification(&out, v); err != nil {
		t.Fatal(err)
	}
	report := out.String()
	if v.OK() || strings.Contains(report, "verified") {
		t.Fatalf("forgeries unreported:\n%s", report)
	}
	seen := map[msgKey]int{}
	for _, r := range v.Rejected {
		k := msgKey{r.Stream, r.StreamSeq}
		seen[k]++
		i, ok := forged[k]
		if !ok {
			t.Errorf("a genuine message rejected: %+v", r)
			continue
		}
		if !strings.Contains(r.Detail, forgeries[i].want) {
			t.Errorf("%s: %q lacks %q", forgeries[i].name, r.Detail, forgeries[i].want)
		}
	}
	for k, i := range forged {
		if seen[k] != 1 {
			t.Errorf("%s (%s %d) reported %d times", forgeries[i].name, k.stream, k.seq, seen[k])
		}
	}
	m := v.Messages
	if m.Decisions+m.Alerts != genuine+len(forgeries) || m.DecisionsNotChecked+m.AlertsNotChecked != 0 {
		t.Errorf("counts %+v, want %d messages all checked", m, genuine+len(forgeries))
	}
	for _, w := range []string{"rejected   " + strconv.Itoa(len(forgeries)), "STREAM", "another answer to seq " + seq} {
		if !strings.Contains(report, w) {
			t.Errorf("report lacks %q:\n%s", w, report)
		}
	}
	if t.Failed() {
		t.Log(report)
	}
}
