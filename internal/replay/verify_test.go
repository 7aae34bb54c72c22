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
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/replay"
	"github.com/turnguard/turnguard/internal/testkit/guardiantest"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
	"github.com/turnguard/turnguard/internal/topology"
)

// recordedMsg is one stored message of a recording, as a copy republishes it.
type recordedMsg struct {
	Subject string
	Header  nats.Header
	Data    []byte
	// Seq is its sequence in the original stream.
	Seq uint64
}

// readStream reads every message of a stream.
func readStream(t *testing.T, js jetstream.JetStream, name string) []recordedMsg {
	t.Helper()
	var out []recordedMsg
	for _, m := range natstest.StoredMsgs(t, js, name) {
		out = append(out, recordedMsg{Subject: m.Subject, Header: m.Header, Data: m.Data, Seq: m.Sequence})
	}
	return out
}

// copyRecording republishes a recording into a new server, as an attacker
// with write access to the streams (or a restore from a doctored backup)
// would: edit may reorder, drop or alter the hooks and decisions.
func copyRecording(t *testing.T, from *server.Server, edit func(hooks, decisions []recordedMsg) ([]recordedMsg, []recordedMsg)) *server.Server {
	t.Helper()
	ctx := context.Background()
	js := natstest.JetStream(t, natstest.Connect(t, from))
	hooks, decisions := edit(readStream(t, js, acs.HooksStream), readStream(t, js, acs.DecisionsStream))
	alerts := readStream(t, js, acs.AlertsStream)

	to := natstest.RunServer(t)
	cjs := natstest.JetStream(t, natstest.Connect(t, to))
	topo := topology.Default()
	topo.Partitions = 4
	if err := topology.Ensure(ctx, cjs, topo); err != nil {
		t.Fatal(err)
	}
	put := func(subject string, m recordedMsg) {
		msg := &nats.Msg{Subject: subject, Header: m.Header, Data: m.Data}
		if _, err := cjs.PublishMsg(ctx, msg); err != nil {
			t.Fatalf("copy to %s: %v", subject, err)
		}
	}
	for _, m := range hooks {
		put(acs.InboundOf(m.Subject), m)
	}
	for _, m := range decisions {
		put(m.Subject, m)
	}
	for _, m := range alerts {
		put(m.Subject, m)
	}
	return to
}

// TestVerify records the taint-window scenario with signed decisions and
// receipts, then verifies doctored copies: an untouched copy verifies; a
// decision turned from deny to allow fails its HMAC signature and its
// receipt at exactly that step; two swapped steps and a removed step break
// the chain at exactly the first step moved.
func TestVerify(t *testing.T) {
	_, built := loadScenario(t, filepath.Join("..", "..", "testdata", "scenarios", "taint-window.yaml"))
	rec := newRecorder(t, guardiantest.DefaultRules(t))
	rec.publishStepwise(built.Messages)
	rec.finish()
	session := built.Messages[0].SessionID
	var denied uint64
	for i, m := range built.Messages {
		if m.Expect.Decision == "deny" && denied == 0 {
			denied = uint64(i + 1)
		}
	}
	if denied == 0 {
		t.Fatal("the scenario has no deny")
	}
	kr, signer := testKeys(t)

	cases := []struct {
		name string
		edit func(hooks, decisions []recordedMsg) ([]recordedMsg, []recordedMsg)
		// wantProblems are substrings of the problems, in order; breakAt
		// is where the chain must break (0: intact).
		wantProblems []string
		breakAt      uint64
	}{
		{name: "untouched copy", edit: func(h, d []recordedMsg) ([]recordedMsg, []recordedMsg) { return h, d }},
		{name: "deny turned into allow", edit: func(h, d []recordedMsg) ([]recordedMsg, []recordedMsg) {
			for i, m := range d {
				if m.Header.Get(acs.HdrStreamSeq) == strconv.FormatUint(denied, 10) {
					d[i].Data = bytes.Replace(m.Data, []byte(`"decision":"deny"`), []byte(`"decision":"allow"`), 1)
				}
			}
			return h, d
		}, wantProblems: []string{"seq " + strconv.FormatUint(denied, 10) + " (toolCallRequest", "HMAC signature: signature does not match", "receipt: receipt does not match"}},
		{name: "steps 3 and 4 swapped", edit: func(h, d []recordedMsg) ([]recordedMsg, []recordedMsg) {
			h[2], h[3] = h[3], h[2]
			return h, d
		}, wantProblems: []string{"seq 3 (toolCallRequest", "steps reordered or replaced", "the hash chain breaks here"}, breakAt: 3},
		{name: "step 5 removed", edit: func(h, d []recordedMsg) ([]recordedMsg, []recordedMsg) {
			return append(h[:4:4], h[5:]...), d
		}, wantProblems: []string{"seq 5 (turnEnd", "steps reordered or replaced", "the hash chain breaks here"}, breakAt: 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cp := copyRecording(t, rec.srv, tc.edit)
			src := openSource(t, cp)
			v, err := replay.Verify(context.Background(), src, rec.guardian(), kr, signer.Public(), wholeRange(t, src), "default", session)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := replay.WriteVerification(&out, v); err != nil {
				t.Fatal(err)
			}
			report := out.String()
			if len(v.Steps) < len(built.Messages)-1 {
				t.Fatalf("verified %d steps:\n%s", len(v.Steps), report)
			}
			if (len(tc.wantProblems) == 0) != v.OK() {
				t.Fatalf("OK() = %v:\n%s", v.OK(), report)
			}
			all := strings.Join(v.Problems, "\n")
			rest := all
			for _, want := range tc.wantProblems {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Fatalf("problems lack %q (in order):\n%s", want, all)
				}
				rest = rest[i+len(want):]
			}
			if tc.breakAt == 0 && (!v.Chain.Intact || v.Chain.Entries == 0) {
				t.Errorf("chain: %+v", v.Chain)
			}
			if tc.breakAt != 0 && (v.Chain.Intact || v.Chain.BreakSeq != tc.breakAt || !strings.Contains(report, "BROKEN at seq "+strconv.FormatUint(tc.breakAt, 10))) {
				t.Errorf("chain %+v, want a break at seq %d:\n%s", v.Chain, tc.breakAt, report)
			}
			if len(tc.wantProblems) == 0 {
				for _, s := range v.Steps {
					if s.Decision != "none" && (s.Signature != replay.CheckOK || s.Receipt != replay.CheckOK) {
						t.Errorf("seq %d: signature %s, receipt %s", s.Seq, s.Signature, s.Receipt)
					}
				}
			}
		})
	}
}

// TestVerifyWithoutKeys checks what verify says with no keys at hand: the
// chain is still recomputed; signatures and receipts are "not checked",
// never "ok".
func TestVerifyWithoutKeys(t *testing.T) {
	_, built := loadScenario(t, filepath.Join("..", "..", "testdata", "scenarios", "full-session.yaml"))
	rec := newRecorder(t, guardiantest.DefaultRules(t))
	rec.publishStepwise(built.Messages)
	rec.finish()
	src := rec.source()
	v, err := replay.Verify(context.Background(), src, rec.guardian(), nil, nil, wholeRange(t, src), "default", built.Messages[0].SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if !v.OK() || !v.Chain.Intact {
		t.Fatalf("problems %v, chain %+v", v.Problems, v.Chain)
	}
	for _, s := range v.Steps {
		if s.Signature != replay.CheckNotChecked || s.Receipt != replay.CheckNotChecked {
			t.Errorf("seq %d: signature %q, receipt %q; want %q", s.Seq, s.Signature, s.Receipt, replay.CheckNotChecked)
		}
	}
}
