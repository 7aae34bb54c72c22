package stream_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/acs"
	"github.com/turnguard/turnguard/internal/natstest"
	"github.com/turnguard/turnguard/internal/scenario"
	"github.com/turnguard/turnguard/internal/stream"
)

// TestAlertOutlivesAFailedPublish takes the alerts stream away just before
// the taint deny: the deny's alert cannot be stored while its decision
// could. A session's publications end with its decision, and a later load
// takes a stored last decision for a published outbox, so that decision
// must not be stored before the alert is: the alert arrives once the
// stream is back (repair recreates it), and the decision not before it.
// (Seen in the compose cluster: a NATS node killed while leading
// ACS_ALERTS lost 22 alerts whose decisions were stored.)
func TestAlertOutlivesAFailedPublish(t *testing.T) {
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv)
	js, _ := jetstream.New(nc)
	cfg := testConfig()
	startProcessor(t, srv, cfg)
	waitForConsumers(t, js, cfg.Topology.Partitions+1)

	_, built := loadScenario(t, "taint-window")
	deny := slices.IndexFunc(built.Messages, func(m scenario.Message) bool { return m.Expect.Decision == "deny" })
	if deny < 0 {
		t.Fatal("the taint-window scenario has no deny")
	}
	// Decisions only: with nobody subscribed to the alert subjects, a
	// publication to them fails at once (no responders) instead of at the
	// attempt's timeout.
	decided := make(chan *nats.Msg, len(built.Messages))
	sub, err := nc.ChanSubscribe(acs.DecisionsPrefix+".>", decided)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	await := func(seq uint64) *nats.Msg {
		t.Helper()
		timeout := time.After(waitFor)
		for {
			select {
			case d := <-decided:
				if d.Header.Get(acs.HdrStreamSeq) == strconv.FormatUint(seq, 10) {
					return d
				}
			case <-timeout:
				t.Fatalf("seq %d: no decision within %s", seq, waitFor)
			}
		}
	}
	for _, m := range built.Messages[:deny] {
		await(publish(t, js, m.Subject, m.Data))
	}
	ctx := context.Background()
	if err := js.DeleteStream(ctx, stream.AlertsStream); err != nil {
		t.Fatal(err)
	}
	m := built.Messages[deny]
	d := await(publish(t, js, m.Subject, m.Data))
	if got := d.Header.Get(acs.HdrDecision); got != "deny" {
		t.Fatalf("decision %q, want deny", got)
	}
	// The decision went out, so its alert is stored already.
	const subject = "acs.alerts.default.high.TG-TAINT-001"
	alerts, err := js.Stream(ctx, stream.AlertsStream)
	if err != nil {
		t.Fatalf("the decision went out while %s was missing: %v", stream.AlertsStream, err)
	}
	if _, err := alerts.GetLastMsgForSubject(ctx, subject); err != nil {
		t.Fatalf("the decision went out before its alert was stored: %v", err)
	}
	// Each is stored once, however often it was tried.
	for name, want := range map[string]struct {
		subject string
		n       uint64
	}{stream.AlertsStream: {subject, 1}, stream.DecisionsStream: {d.Subject, uint64(deny + 1)}} {
		st, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx, jetstream.WithSubjectFilter(want.subject))
		if err != nil {
			t.Fatal(err)
		}
		if n := info.State.Subjects[want.subject]; n != want.n {
			t.Errorf("%s holds %d messages on %s, want %d", name, n, want.subject, want.n)
		}
	}
}
