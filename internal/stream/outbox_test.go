package stream_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/scenario"
	"github.com/turnguard/turnguard/internal/testkit/guardiantest"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
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
	js := natstest.JetStream(t, nc)
	cfg := testConfig()
	startProcessor(t, srv, cfg)
	waitForConsumers(t, js, cfg.Topology.Partitions+1)

	_, built := loadScenario(t, "taint-window")
	deny := slices.IndexFunc(built.Messages, func(m scenario.Message) bool { return m.Expect.Decision == "deny" })
	if deny < 0 {
		t.Fatal("the taint-window scenario has no deny")
	}
	w := watchDecisions(t, nc)
	for _, m := range built.Messages[:deny] {
		w.decision(t, natstest.Publish(t, js, m.Subject, m.Data))
	}
	ctx := context.Background()
	if err := js.DeleteStream(ctx, acs.AlertsStream); err != nil {
		t.Fatal(err)
	}
	m := built.Messages[deny]
	d := w.decision(t, natstest.Publish(t, js, m.Subject, m.Data))
	if got := d.Header.Get(acs.HdrDecision); got != "deny" {
		t.Fatalf("decision %q, want deny", got)
	}
	// The decision went out, so its alert is stored already.
	const subject = "acs.alerts.default.high.TG-TAINT-001"
	alerts, err := js.Stream(ctx, acs.AlertsStream)
	if err != nil {
		t.Fatalf("the decision went out while %s was missing: %v", acs.AlertsStream, err)
	}
	if _, err := alerts.GetLastMsgForSubject(ctx, subject); err != nil {
		t.Fatalf("the decision went out before its alert was stored: %v", err)
	}
	// Each is stored once, however often it was tried.
	for name, want := range map[string]struct {
		subject string
		n       uint64
	}{acs.AlertsStream: {subject, 1}, acs.DecisionsStream: {d.Subject, uint64(deny + 1)}} {
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

// TestHandBackAfterACut: a running instance is cut off the network and
// another holder takes the partition meanwhile, acknowledging nothing of
// one message (here the web page that taints the session) and handing an
// earlier one back. When the cut heals and the partition comes back, the
// instance's next fresh deliveries come after a message still pending at
// the other holder, and must not be applied before it: the pending one is
// read from the stream first. Applied out of order, the taint would be
// skipped as "already applied" when it is redelivered, and the Bash call
// of the next turn allowed. (Seen in the compose cluster, where a
// processor cut off for ten seconds kept its partitions.)
func TestHandBackAfterACut(t *testing.T) {
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv)
	js := natstest.JetStream(t, nc)
	cfg := testConfig()
	cfg.Topology.Partitions = 1
	cfg.Topology.PinnedTTL = 3 * time.Second
	cfg.Topology.AckWait = 3 * time.Second
	link := natstest.NewLink(srv)
	startProcessorWith(t, link, cfg, guardiantest.DefaultRules(t))
	waitForConsumers(t, js, 2)

	_, built := loadScenario(t, "taint-window")
	taint := slices.IndexFunc(built.Messages, func(m scenario.Message) bool { return strings.HasSuffix(m.Subject, ".toolCallResult") })
	deny := slices.IndexFunc(built.Messages, func(m scenario.Message) bool { return m.Expect.Decision == "deny" })
	if taint < 1 || deny < taint+2 {
		t.Fatalf("taint-window: toolCallResult at %d, deny at %d", taint, deny)
	}
	w := watchDecisions(t, nc)
	for _, m := range built.Messages[:taint] {
		w.decision(t, natstest.Publish(t, js, m.Subject, m.Data))
	}

	ctx := context.Background()
	hooks, err := js.Stream(ctx, acs.HooksStream)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := hooks.Consumer(ctx, acs.PartitionConsumer(0))
	if err != nil {
		t.Fatal(err)
	}
	link.Cut()
	// The cut-off instance's pull requests expire at the server (a third of
	// the pinned TTL), so the next one to ask is served.
	testwait.CheckFor(t, waitFor, 20*time.Millisecond, func() error {
		info, err := cons.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.NumWaiting != 0 {
			return errors.New("the cut-off instance's pull requests did not expire")
		}
		return nil
	})
	// Another holder takes the partition: it hands an envelope of another
	// session back and keeps the web page unacknowledged.
	other, _ := buildOtherSession(t)
	otherSeq := natstest.Publish(t, js, other.Subject, other.Data)
	taintSeq := natstest.Publish(t, js, built.Messages[taint].Subject, built.Messages[taint].Data)
	if err := hooks.UnpinConsumer(ctx, acs.PartitionConsumer(0), acs.PartitionGroup); err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(2, jetstream.FetchPriorityGroup(acs.PartitionGroup), jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var held []jetstream.Msg
	for m := range batch.Messages() {
		held = append(held, m)
	}
	if len(held) != 2 {
		t.Fatalf("the other holder got %d messages, want 2 (%v)", len(held), batch.Error())
	}
	if err := held[0].Nak(); err != nil {
		t.Fatal(err)
	}
	if err := hooks.UnpinConsumer(ctx, acs.PartitionConsumer(0), acs.PartitionGroup); err != nil {
		t.Fatal(err)
	}
	// The session goes on; then the instance is back.
	next := natstest.Publish(t, js, built.Messages[taint+1].Subject, built.Messages[taint+1].Data)
	link.Heal()
	w.decision(t, otherSeq)
	if d := w.decision(t, taintSeq); d.Header.Get(acs.HdrDecision) != "allow" {
		t.Fatalf("the web page was decided %s", d.Header.Get(acs.HdrDecision))
	}
	w.decision(t, next)
	for _, m := range built.Messages[taint+2 : deny+1] {
		d := w.decision(t, natstest.Publish(t, js, m.Subject, m.Data))
		if want := m.Expect.Decision; d.Header.Get(acs.HdrDecision) != want {
			t.Fatalf("%s decided %s, want %s: %s", m.Subject, d.Header.Get(acs.HdrDecision), want, d.Data)
		}
	}
}

// buildOtherSession is the first envelope of a session other than the
// taint-window scenario's.
func buildOtherSession(t *testing.T) (scenario.Message, scenario.Built) {
	t.Helper()
	_, built := loadScenario(t, "full-session")
	return built.Messages[0], built
}
