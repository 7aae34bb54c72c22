package replay_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/alert"
	"github.com/turnguard/turnguard/internal/replay"
	"github.com/turnguard/turnguard/internal/testkit/guardiantest"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
)

// recordTaintWindow records the taint-window scenario and returns the
// recording, its session and the stream sequence of its first deny (the
// tainted call a forger wants allowed).
func recordTaintWindow(t *testing.T) (rec *recorder, session string, denied uint64) {
	t.Helper()
	_, built := loadScenario(t, filepath.Join("..", "..", "testdata", "scenarios", "taint-window.yaml"))
	rec = newRecorder(t, guardiantest.DefaultRules(t))
	rec.publishStepwise(built.Messages)
	rec.finish()
	for i, m := range built.Messages {
		if m.Expect.Decision == "deny" && denied == 0 {
			denied = uint64(i + 1)
		}
	}
	return rec, built.Messages[0].SessionID, denied
}

// TestVerifyReportsForgeries: whatever a third party publishes on a
// session's decision subject or as its alert stays in the streams, and
// verify must name it — a forged allow without Acs-Stream-Seq (issue 11's
// attack, which verify used to skip), a second answer with a bogus
// receipt, a genuine decision replayed under another sequence, an answer
// to a sequence that is no envelope of the session, a forged answer
// stored before the real one, forged alerts — and never say "verified".
func TestVerifyReportsForgeries(t *testing.T) {
	rec, session, denied := recordTaintWindow(t)
	kr, signer := testKeys(t)
	subject := acs.DecisionSubject("default", session)
	deny := strconv.FormatUint(denied, 10)
	allow := []byte(`{"jsonrpc":"2.0","id":"x","result":{"type":"final","acs_version":"0.1.0","request_id":"x","decision":"allow"}}`)
	forged := func(subject, seq, rc string, data []byte) recordedMsg {
		h := nats.Header{}
		h.Set(acs.HdrRequestID, "x")
		if seq != "" {
			h.Set(acs.HdrStreamSeq, seq)
		}
		if rc != "" {
			h.Set(acs.HdrReceipt, rc)
			h.Set(acs.HdrReceiptKey, signer.KeyID)
		}
		return recordedMsg{Subject: subject, Header: h, Data: data}
	}
	// genuine returns the recorded decision of seq.
	genuine := func(d []recordedMsg, seq string) recordedMsg {
		for _, m := range d {
			if m.Header.Get(acs.HdrStreamSeq) == seq {
				return m
			}
		}
		t.Fatalf("no decision of seq %s", seq)
		return recordedMsg{}
	}
	relabel := func(m recordedMsg, seq string) recordedMsg {
		h := nats.Header{}
		for k, v := range m.Header {
			h[k] = v
		}
		h.Set(acs.HdrStreamSeq, seq)
		h.Del(acs.HdrMsgID)
		return recordedMsg{Subject: m.Subject, Header: h, Data: m.Data}
	}
	tests := []struct {
		name string
		edit func(d []recordedMsg) []recordedMsg
		// publish adds messages to the copy after it is made.
		publish []recordedMsg
		want    []string
		// system checks acs.alerts._system instead of the session.
		system bool
	}{
		{name: "forged allow without Acs-Stream-Seq", publish: []recordedMsg{forged(subject, "", "AAAA", allow)},
			want: []string{"no valid Acs-Stream-Seq"}},
		{name: "second answer with a bogus receipt", publish: []recordedMsg{forged(subject, deny, "AAAA", allow)},
			want: []string{"another answer to seq " + deny, "malformed receipt"}},
		{name: "second answer without receipt", publish: []recordedMsg{forged(subject, deny, "", allow)},
			want: []string{"another answer to seq " + deny, "no receipt"}},
		{name: "genuine decision replayed as another step's", edit: func(d []recordedMsg) []recordedMsg {
			return append(d, relabel(genuine(d, "2"), deny))
		}, want: []string{"another answer to seq " + deny, "receipt: receipt does not match"}},
		{name: "answer to a sequence of no envelope of the session", edit: func(d []recordedMsg) []recordedMsg {
			return append(d, relabel(genuine(d, "2"), "999"))
		}, want: []string{"sequence 999 is not an envelope of this session", "receipt does not match"}},
		{name: "forged answer stored before the real one", edit: func(d []recordedMsg) []recordedMsg {
			for i, m := range d {
				if m.Header.Get(acs.HdrStreamSeq) == deny {
					return append(d[:i:i], append([]recordedMsg{forged(subject, deny, "AAAA", allow)}, d[i:]...)...)
				}
			}
			return d
		}, want: []string{"another answer to seq " + deny}},
		{name: "forged alert bound to the denied step", publish: []recordedMsg{forged(alert.Subject("default", "high", "TG-TAINT-001"), deny, "AAAA", []byte(`{"actor":{"session":{"uid":"`+session+`"}}}`))},
			want: []string{"(alert): receipt: malformed receipt"}},
		{name: "forged alert naming the session, bound to nothing", publish: []recordedMsg{forged(alert.Subject("default", "critical", "TG-X"), "", "", []byte(`{"actor":{"session":{"uid":"`+session+`"}}}`))},
			want: []string{"names this session but is bound to no envelope of it", "no receipt"}},
		{name: "forged reload failure", system: true, publish: []recordedMsg{forged(alert.Subject(alert.SystemTenant, "high", "rules_reload_failed"), "", "AAAA", []byte(`{"message":"rules gone"}`))},
			want: []string{"(operational alert): receipt: malformed receipt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cp := copyRecording(t, rec.srv, func(h, d []recordedMsg) ([]recordedMsg, []recordedMsg) {
				if tt.edit != nil {
					d = tt.edit(d)
				}
				return h, d
			})
			publishRaw(t, cp, tt.publish)
			src := openSource(t, cp)
			var v *replay.Verification
			var err error
			if tt.system {
				v, err = replay.VerifySystemAlerts(context.Background(), src, signer.Public())
			} else {
				v, err = replay.Verify(context.Background(), src, rec.guardian(), kr, signer.Public(), wholeRange(t, src), "default", session)
			}
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := replay.WriteVerification(&out, v); err != nil {
				t.Fatal(err)
			}
			report := out.String()
			if v.OK() || strings.Contains(report, "result     verified") || len(v.Rejected) == 0 {
				t.Fatalf("the forgery went unreported:\n%s", report)
			}
			all := strings.Join(v.Problems, "\n")
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("problems lack %q:\n%s", w, report)
				}
			}
			if !tt.system && !strings.Contains(report, "messages   ") {
				t.Errorf("no counts:\n%s", report)
			}
			// The real deny is still the step's decision, its receipt ok.
			for _, s := range v.Steps {
				if strconv.FormatUint(s.Seq, 10) == deny && (s.Decision != "deny" || s.Receipt != replay.CheckOK) {
					t.Errorf("seq %s: decision %s receipt %s, want the verified deny", deny, s.Decision, s.Receipt)
				}
			}
		})
	}
}

// publishRaw publishes messages into a server's streams as they are.
func publishRaw(t *testing.T, srv *server.Server, msgs []recordedMsg) {
	t.Helper()
	js := natstest.JetStream(t, natstest.Connect(t, srv))
	for _, m := range msgs {
		if _, err := js.PublishMsg(context.Background(), &nats.Msg{Subject: m.Subject, Header: m.Header, Data: m.Data}); err != nil {
			t.Fatalf("publish %s: %v", m.Subject, err)
		}
	}
}

// TestVerifyCountsWhatItChecks: an untouched recording verifies, with every
// decision and alert counted as checked; without the receipt key nothing
// is called verified.
func TestVerifyCountsWhatItChecks(t *testing.T) {
	_, built := loadScenario(t, filepath.Join("..", "..", "testdata", "scenarios", "taint-window.yaml"))
	rec := newRecorder(t, guardiantest.DefaultRules(t))
	rec.publishStepwise(built.Messages)
	rec.finish()
	session := built.Messages[0].SessionID
	kr, signer := testKeys(t)
	src := rec.source()
	for _, tc := range []struct {
		name string
		key  bool
		want string
	}{{"with the key", true, "result     verified"}, {"without the key", false, "result     partly checked: 17 chain entries, 17 signatures sound; not checked: 18 receipts (no --receipt-key): not verified"}} {
		t.Run(tc.name, func(t *testing.T) {
			pub := signer.Public()
			if !tc.key {
				pub = nil
			}
			v, err := replay.Verify(context.Background(), src, rec.guardian(), kr, pub, wholeRange(t, src), "default", session)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			_ = replay.WriteVerification(&out, v)
			m := v.Messages
			if !v.OK() || !strings.Contains(out.String(), tc.want) || m.Decisions == 0 || m.Alerts == 0 {
				t.Fatalf("%+v\n%s", m, out.String())
			}
			if tc.key && (m.DecisionsChecked != m.Decisions || m.AlertsChecked != m.Alerts || !v.Complete()) {
				t.Fatalf("with the key, not everything was checked: %+v", m)
			}
			if !tc.key && (m.DecisionsNotChecked != m.Decisions || m.AlertsNotChecked != m.Alerts) {
				t.Fatalf("without the key: %+v", m)
			}
		})
	}
}

// TestTimelineShowsOnlyVerifiedDecisions: a forged allow stored before the
// real deny of the tainted call (so that "the last message wins" or "the
// first wins" would both be fooled by one ordering or the other) is left
// out of the timeline given the receipt key, and counted; without the key
// the first message per step is shown.
func TestTimelineShowsOnlyVerifiedDecisions(t *testing.T) {
	rec, session, denied := recordTaintWindow(t)
	_, signer := testKeys(t)
	deny := strconv.FormatUint(denied, 10)
	h := nats.Header{}
	h.Set(acs.HdrStreamSeq, deny)
	h.Set(acs.HdrDecision, "allow")
	h.Set(acs.HdrReceipt, "AAAA")
	forgedAllow := recordedMsg{Subject: acs.DecisionSubject("default", session), Header: h,
		Data: []byte(`{"jsonrpc":"2.0","id":"x","result":{"type":"final","acs_version":"0.1.0","request_id":"x","decision":"allow"}}`)}
	cp := copyRecording(t, rec.srv, func(hooks, d []recordedMsg) ([]recordedMsg, []recordedMsg) {
		for i, m := range d {
			if m.Header.Get(acs.HdrStreamSeq) == deny {
				return hooks, append(d[:i:i], append([]recordedMsg{forgedAllow}, d[i:]...)...)
			}
		}
		t.Fatal("no decision of the denied step")
		return hooks, d
	})
	src := openSource(t, cp)
	src.SetTrustedKey(signer.Public())
	tl, err := replay.BuildTimeline(context.Background(), src, rec.guardian(), guardiantest.DefaultRules(t), wholeRange(t, src), "default", session)
	if err != nil {
		t.Fatal(err)
	}
	if tl.Ignored != 1 {
		t.Fatalf("%d messages ignored, want the one forgery", tl.Ignored)
	}
	for _, s := range tl.Steps {
		if s.Seq == denied && s.Decision != "deny" {
			t.Fatalf("the tainted call shows %q, want the verified deny", s.Decision)
		}
	}
	var out bytes.Buffer
	if err := replay.WriteTable(&out, tl); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "ignored 1 message on") {
		t.Fatalf("the table does not say a message was left out:\n%s", out.String())
	}
}
