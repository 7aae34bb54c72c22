package replay_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/replay"
	"github.com/turnguard/turnguard/internal/testkit/guardiantest"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
)

// tailing runs Tail in the background and hands over its events.
type tailing struct {
	events chan replay.TailEvent
	cancel context.CancelFunc
	done   chan error
}

func startTail(t *testing.T, src *replay.Source, opts replay.TailOptions) *tailing {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tl := &tailing{events: make(chan replay.TailEvent, 256), cancel: cancel, done: make(chan error, 1)}
	go func() {
		tl.done <- src.Tail(ctx, opts, func(e replay.TailEvent) error {
			select {
			case tl.events <- e:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	t.Cleanup(func() { tl.stop(t) })
	return tl
}

// next waits for the next event, failing the test after waitFor.
func (tl *tailing) next(t *testing.T) replay.TailEvent {
	t.Helper()
	select {
	case e := <-tl.events:
		return e
	case err := <-tl.done:
		t.Fatalf("tail ended early: %v", err)
	case <-time.After(waitFor):
		t.Fatalf("no event within %s", waitFor)
	}
	return replay.TailEvent{}
}

// stop cancels the tail and checks it ends cleanly: nil, as for Ctrl-C.
func (tl *tailing) stop(t *testing.T) {
	t.Helper()
	if tl.cancel == nil {
		return
	}
	tl.cancel()
	tl.cancel = nil
	select {
	case err := <-tl.done:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("tail: %v", err)
		}
	case <-time.After(waitFor):
		t.Errorf("tail did not stop within %s", waitFor)
	}
}

// TestTail follows a live processor through the taint scenario: the deny
// of TG-TAINT-001 and its alert arrive verified, decisions forged on the
// session's subject arrive NOT VERIFIED, and the lines and JSON are those
// of the golden files.
func TestTail(t *testing.T) {
	rec := newRecorder(t, guardiantest.DefaultRules(t))
	kr, signer := testKeys(t)
	src := rec.source()
	// New messages only, as `replay tail` starts by default: everything
	// below is published after the consumers exist.
	opts := replay.TailOptions{Decisions: true, Alerts: true, ReceiptKey: signer.Public(), Keys: kr}
	tl := startTail(t, src, opts)
	waitConsumers(t, rec, 2)

	sc, built := loadScenario(t, filepath.Join("..", "..", "testdata", "scenarios", "taint-window.yaml"))
	rec.publishStepwise(built.Messages)
	session := sc.SessionID("")
	want := len(built.Messages) + 1 // every step decided, one alert
	var events []replay.TailEvent
	for len(events) < want {
		events = append(events, tl.next(t))
	}
	var deny, alrt *replay.TailEvent
	for i := range events {
		e := &events[i]
		if e.Verdict != replay.TailVerified {
			t.Errorf("%s %d: %s (%s)", e.Kind, e.StreamSeq, e.Verdict, e.Problem)
		}
		switch {
		case e.Kind == replay.TailDecision && e.Decision == "deny":
			deny = e
		case e.Kind == replay.TailAlert:
			alrt = e
		}
	}
	if deny == nil || !slices.Equal(deny.Rules, []string{"TG-TAINT-001"}) || deny.Tool != "Bash" || deny.SessionID != session || deny.Signature != "ok" {
		t.Fatalf("the deny: %+v", deny)
	}
	if alrt == nil || alrt.Rules[0] != "TG-TAINT-001" || alrt.SessionID != session || alrt.Seq != deny.Seq || alrt.TurnIndex != 2 {
		t.Fatalf("the alert: %+v", alrt)
	}

	// Forgeries on the session's subject: the deny's body without a
	// receipt, with another message's receipt, and the deny published
	// again with its own (a genuine message, but not the answer).
	subject := acs.DecisionSubject("default", session)
	orig := getDecision(t, rec, deny.StreamSeq)
	seq := strconv.FormatUint(deny.Seq, 10)
	forge := func(h nats.Header) {
		m := nats.NewMsg(subject)
		m.Data, m.Header = orig.Data, h
		if _, err := rec.js.PublishMsg(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	forge(nats.Header{acs.HdrStreamSeq: {seq}, acs.HdrDecision: {"deny"}, acs.HdrHook: {"toolCallRequest"}})
	forge(nats.Header{acs.HdrStreamSeq: {strconv.FormatUint(deny.Seq-1, 10)}, acs.HdrDecision: {"deny"}, acs.HdrReceipt: {orig.Header.Get(acs.HdrReceipt)}})
	forge(nats.Header{acs.HdrStreamSeq: {seq}, acs.HdrDecision: {"deny"}, acs.HdrReceipt: {orig.Header.Get(acs.HdrReceipt)}, acs.HdrMsgID: {"again"}})
	for i, want := range []string{"no receipt", "receipt does not match", "another answer to seq " + seq} {
		e := tl.next(t)
		if e.Verdict != replay.TailNotVerified || !strings.Contains(e.Problem, want) || e.Tool != "" {
			t.Errorf("forgery %d: %s %q, want NOT VERIFIED %q", i, e.Verdict, e.Problem, want)
		}
		line := replay.FormatTailLine(e, false)
		if !strings.Contains(line, "NOT VERIFIED") || !strings.Contains(line, "!! ") {
			t.Errorf("forgery %d line: %s", i, line)
		}
		events = append(events, e)
	}
	tl.stop(t)

	// The order across the two streams is the order of arrival: sort for
	// a stable file, and fix the times the server stamped.
	slices.SortStableFunc(events, func(a, b replay.TailEvent) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.StreamSeq, b.StreamSeq))
	})
	var plain, color, lines bytes.Buffer
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i, e := range events {
		e.Time = base.Add(time.Duration(i) * time.Second)
		plain.WriteString(replay.FormatTailLine(e, false) + "\n")
		color.WriteString(replay.FormatTailLine(e, true) + "\n")
		if err := replay.WriteTailJSON(&lines, e); err != nil {
			t.Fatal(err)
		}
	}
	if bytes.Contains(plain.Bytes(), []byte("\x1b")) {
		t.Error("a plain line holds an escape sequence")
	}
	golden(t, filepath.Join("testdata", "tail", "taint-window.txt"), plain.Bytes())
	golden(t, filepath.Join("testdata", "tail", "taint-window.color.txt"), color.Bytes())
	golden(t, filepath.Join("testdata", "tail", "taint-window.jsonl"), lines.Bytes())
}

// TestTailNotChecked: without keys nothing is called verified.
func TestTailNotChecked(t *testing.T) {
	rec := newRecorder(t, guardiantest.DefaultRules(t))
	_, built := loadScenario(t, filepath.Join("..", "..", "testdata", "scenarios", "taint-window.yaml"))
	rec.publishStepwise(built.Messages)
	tl := startTail(t, rec.source(), replay.TailOptions{Decisions: true, Alerts: true, From: time.Now().Add(-time.Hour), Rule: "TG-TAINT-001"})
	for range 2 {
		e := tl.next(t)
		if e.Verdict != replay.TailNotChecked || e.Receipt != replay.CheckNotChecked {
			t.Errorf("%s without keys: %s, receipt %s", e.Kind, e.Verdict, e.Receipt)
		}
		if line := replay.FormatTailLine(e, false); !strings.Contains(line, "  not checked  ") || strings.Contains(line, "verified") {
			t.Errorf("line: %s", line)
		}
	}
}

// TestTailFilters reads a recording from its start with filters. What a
// filter leaves out is proven by a sentinel: the next message that
// passes it must be the next event.
func TestTailFilters(t *testing.T) {
	rec := newRecorder(t, guardiantest.DefaultRules(t))
	_, signer := testKeys(t)
	sc, built := loadScenario(t, filepath.Join("..", "..", "testdata", "scenarios", "taint-window.yaml"))
	rec.publishStepwise(built.Messages)
	session := sc.SessionID("")
	src := rec.source()
	from := time.Now().Add(-time.Hour)
	const other = "00000000-0000-4000-8000-000000000000"
	sentinel := func(tenant, session, decision string) {
		m := nats.NewMsg(acs.DecisionSubject(tenant, session))
		m.Data = []byte(`{"jsonrpc":"2.0","id":"x","result":{"type":"final","acs_version":"0.1.0","request_id":"sentinel","decision":"` + decision +
			`","reasoning":"sentinel","policy_references":[{"rule_id":"TG-TAINT-001"}]}}`)
		m.Header.Set(acs.HdrStreamSeq, "1")
		m.Header.Set(acs.HdrMsgID, "sentinel-"+tenant+"-"+decision+strconv.FormatInt(time.Now().UnixNano(), 10))
		if _, err := rec.js.PublishMsg(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		opts replay.TailOptions
		// want are the events expected before the sentinel, as
		// kind/decision/rule.
		want []string
		// The sentinel's tenant, session and decision ("": none, the
		// stream of alerts has no sentinel).
		tenant, session, decision string
	}{
		{"deny", replay.TailOptions{Decisions: true, Decision: "deny"}, []string{"decision/deny/TG-TAINT-001"}, "default", session, "deny"},
		{"rule", replay.TailOptions{Decisions: true, Rule: "TG-TAINT-001"}, []string{"decision/deny/TG-TAINT-001"}, "default", session, "deny"},
		{"alerts only", replay.TailOptions{Alerts: true, Rule: "TG-TAINT-001"}, []string{"alert/deny/TG-TAINT-001"}, "", "", ""},
		{"other tenant", replay.TailOptions{Decisions: true, Tenant: "other"}, nil, "other", session, "allow"},
		{"other session, any tenant", replay.TailOptions{Decisions: true, SessionID: other, Tenant: "*"}, nil, "default", other, "allow"},
		{"session, modify", replay.TailOptions{Decisions: true, SessionID: session, Decision: "modify"}, nil, "default", session, "modify"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.From, tt.opts.ReceiptKey = from, signer.Public()
			if tt.opts.Tenant == "*" {
				tt.opts.Tenant = ""
			}
			tl := startTail(t, src, tt.opts)
			for _, w := range tt.want {
				e := tl.next(t)
				if got := e.Kind + "/" + e.Decision + "/" + strings.Join(e.Rules, ","); got != w || e.Verdict != replay.TailVerified {
					t.Fatalf("got %s (%s), want %s", got, e.Verdict, w)
				}
			}
			if tt.tenant == "" {
				return // no sentinel passes: nothing more is checked
			}
			sentinel(tt.tenant, tt.session, tt.decision)
			e := tl.next(t)
			if e.Reason != "sentinel" || e.Verdict != replay.TailNotVerified {
				t.Fatalf("after the expected events: %+v, want the sentinel, NOT VERIFIED", e)
			}
		})
	}
}

// waitConsumers waits until the tail's consumers exist on both streams,
// so that it sees what is published next.
func waitConsumers(t *testing.T, rec *recorder, n int) {
	t.Helper()
	testwait.CheckFor(t, waitFor, 5*time.Millisecond, func() error {
		total := 0
		for _, name := range []string{acs.DecisionsStream, acs.AlertsStream} {
			st, err := rec.js.Stream(context.Background(), name)
			if err != nil {
				t.Fatal(err)
			}
			info, err := st.Info(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			total += info.State.Consumers
		}
		if total < n {
			return fmt.Errorf("%d of %d tail consumers", total, n)
		}
		return nil
	})
}

func getDecision(t *testing.T, rec *recorder, seq uint64) *nats.Msg {
	t.Helper()
	st, err := rec.js.Stream(context.Background(), acs.DecisionsStream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.GetMsg(context.Background(), seq)
	if err != nil {
		t.Fatal(err)
	}
	return &nats.Msg{Subject: m.Subject, Data: m.Data, Header: m.Header}
}

// TestTailUntrustedText: what a forger writes cannot steer the terminal.
func TestTailUntrustedText(t *testing.T) {
	h := nats.Header{acs.HdrStreamSeq: {"7"}, acs.HdrHook: {"toolCall\x1b[2JRequest"}}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "x", "result": map[string]any{"type": "final", "request_id": "r",
		"decision": "deny", "reasoning": "evil\x1b]0;title\x07\nsecond line"}})
	e := replay.CheckTailDecision(replay.TailOptions{}, "acs.decisions.default.7f3c2a9e-4b1d-4e8a-9c6f-2d5e8a1b3c70", h, body)
	line := replay.FormatTailLine(e, false)
	if strings.ContainsAny(line, "\x1b\x07\n") {
		t.Errorf("control characters reach the line: %q", line)
	}
	if e.Verdict != replay.TailNotChecked {
		t.Errorf("verdict without a key: %s", e.Verdict)
	}
}
