package statestore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/lineage"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/internal/statestore"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
)

// busySession is a long-running session's state: the request-id memory
// full, a taint with evidence, counters and hits. About 6 KB of JSON.
// testdata/session-json-v1.value holds it as an earlier version stored it:
// changing it fails TestLoadLegacyValue.
func busySession() *turnstate.Session {
	s := turnstate.New("default", "7f3c2a9e-4b1d-4e8a-9c6f-2d5e8a1b3c70")
	s.AgentID, s.Started, s.TurnsStarted, s.Envelopes, s.LastSeq = "acme-coder", true, 40, 400, 400
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	s.FirstTime, s.LastTime = t0, t0.Add(time.Hour)
	for i := range turnstate.MaxRecentRequestIDs {
		s.RecentRequestIDs = append(s.RecentRequestIDs, fmt.Sprintf("a1c7e9f0-3b2d-4c5e-8f61-%012d", i))
	}
	hit := turnstate.TaintHit{Seq: 390, RequestID: "b2d8f1a0-6c3e-4d5f-9a7b-1e2f3a4b5c03", Hook: "toolCallResult", Tool: "web_fetch",
		Turn: 39, Time: t0, Source: "untrusted_origin", ProvenanceIDs: []string{"p-web-7"}, Origins: []string{"retrieved"}, SourceIDs: []string{"https://blog.example.net/post"}}
	s.Taints = map[string]*turnstate.Taint{"untrusted_content": {First: hit, Last: hit, Hits: 3}}
	s.Decisions = map[acs.Disposition]uint64{acs.Allow: 390, acs.Deny: 10}
	s.RuleHits = map[string]uint64{"TG-TAINT-001": 10}
	s.ChainHead, s.ChainLength = "3f1b0d8c2a7e4b6f9d0c1e2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e", 400
	return s
}

// readingSession is busySession after the reads of an agent's task, as
// lineage remembers them: the user's words and four tool outputs (a page,
// a channel's messages, a file, a list of records), about 3 KB of text.
func readingSession() *turnstate.Session {
	s := busySession()
	ix := &lineage.Index{}
	ix.AddTrusted("Summarize the article Bob posted in 'general', send it to Alice and pay the bill in bill-december-2023.txt")
	outputs := []string{
		strings.Repeat("The quarterly report at https://www.informations.com/q3 shows revenue up 12 % on the year. ", 12),
		"- body: read the article at www.informations.com\n  recipient: general\n  sender: Bob\n- body: lunch at 12?\n  recipient: general\n  sender: Eve\n",
		"Bill for the month of December 2023\n-----------------------------------\nService  Amount\nCar Rental  98.70\nTotal  98.70\nIBAN: UK12345678901234567890\n",
		"- id_: '1'\n  amount: 100.0\n  recipient: CH9300762011623852957\n  subject: Pizza party\n- id_: '2'\n  amount: 200.0\n  recipient: GB29NWBK60161331926819\n  subject: New year gift\n",
	}
	for i, out := range outputs {
		src := lineage.Source{Seq: uint64(390 + i), RequestID: fmt.Sprintf("c4e9a1b2-7d3f-4a6e-8b5c-%012d", i), Hook: "toolCallResult", Tool: "read_channel_messages"}
		ix.AddUntrusted(out, src)
		ix.AddRecords(out)
	}
	s.Lineage = ix
	return s
}

// BenchmarkStoreSaveLoad is one Save (compare-and-set) and one Load of a
// busy session against an embedded server's KV bucket: through the Store,
// sealed and verified, and the same round trip with the plain JSON earlier
// versions wrote.
func BenchmarkStoreSaveLoad(b *testing.B) {
	srv := natstest.RunServer(b)
	js, err := jetstream.New(natstest.Connect(b, srv))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "BENCH", History: 1, Storage: jetstream.FileStorage})
	if err != nil {
		b.Fatal(err)
	}
	s := busySession()
	sealer, err := turnstate.NewSealer(bytes.Repeat([]byte{1}, turnstate.StateKeySize))
	if err != nil {
		b.Fatal(err)
	}
	// Each run of a sub-benchmark starts on a key of its own, so that
	// revision 0 means "create".
	run := 0
	b.Run("plain", func(b *testing.B) {
		run++
		key := fmt.Sprintf("default.plain-%d", run)
		var rev uint64
		b.ReportAllocs()
		for b.Loop() {
			val, err := json.Marshal(s)
			if err != nil {
				b.Fatal(err)
			}
			if rev == 0 {
				rev, err = kv.Create(ctx, key, val)
			} else {
				rev, err = kv.Update(ctx, key, val, rev)
			}
			if err != nil {
				b.Fatal(err)
			}
			e, err := kv.Get(ctx, key)
			if err != nil {
				b.Fatal(err)
			}
			var got turnstate.Session
			if err := json.Unmarshal(e.Value(), &got); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sealed", func(b *testing.B) {
		run++
		s := s.Clone()
		s.SessionID = fmt.Sprintf("sealed-%d", run)
		store := statestore.NewStore(kv, sealer)
		var rev uint64
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if rev, err = store.Save(ctx, s, rev); err != nil {
				b.Fatal(err)
			}
			if got, _, _, err := store.Load(ctx, s.Key()); err != nil || got == nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStateCodec is the CPU cost of a state write and read without the
// network: encode then decode, plain (what earlier versions stored) and
// sealed (encode, MAC, wrap; unwrap, verify, decode).
func BenchmarkStateCodec(b *testing.B) {
	s := busySession()
	sealer, err := turnstate.NewSealer(bytes.Repeat([]byte{1}, turnstate.StateKeySize))
	if err != nil {
		b.Fatal(err)
	}
	key := s.Key()
	b.Run("plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rec, err := json.Marshal(s)
			if err != nil {
				b.Fatal(err)
			}
			var got turnstate.Session
			if err := json.Unmarshal(rec, &got); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sealed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rec, err := json.Marshal(s)
			if err != nil {
				b.Fatal(err)
			}
			val := sealer.Seal(turnstate.KindSession, key, rec)
			opened, reason := sealer.Open(turnstate.KindSession, key, val)
			if reason != "" {
				b.Fatal(reason)
			}
			var got turnstate.Session
			if err := json.Unmarshal(opened, &got); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("mac-only", func(b *testing.B) {
		rec, err := json.Marshal(s)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(rec)))
		b.ReportAllocs()
		for b.Loop() {
			if _, reason := sealer.Open(turnstate.KindSession, key, sealer.Seal(turnstate.KindSession, key, rec)); reason != "" {
				b.Fatal(reason)
			}
		}
	})
}

// BenchmarkSaveMsg is the encoding side of a session write as the
// processor makes it: a busy session with a one-decision outbox encoded,
// sealed and wrapped in its compare-and-set message (nothing sent), then
// its value released, as once its publish is acknowledged.
func BenchmarkSaveMsg(b *testing.B) {
	_, kv, _ := testBucket(b, "BENCH")
	sealer, err := turnstate.NewSealer(bytes.Repeat([]byte{1}, turnstate.StateKeySize))
	if err != nil {
		b.Fatal(err)
	}
	store := statestore.NewStore(kv, sealer)
	s := busySession()
	out := &statestore.Outbox{Written: s.LastTime, Msgs: []statestore.Publication{{Subject: acs.DecisionSubject("default", s.SessionID),
		Header: map[string][]string{acs.HdrMsgID: {"r:1"}, acs.HdrReceipt: {strings.Repeat("A", 200)}}, Data: bytes.Repeat([]byte("x"), 500)}}}
	b.ReportAllocs()
	for b.Loop() {
		w, err := store.SaveMsg(s, out, 7)
		if err != nil {
			b.Fatal(err)
		}
		w.Release()
	}
}

// BenchmarkRecordJSON is the JSON of a session's write with a one-decision
// outbox, alone, for a busy session and a reading one (with lineage):
// encoding/json's Marshal, as earlier versions wrote it, and the encoder
// that replaced it (encode.go) into a reused buffer, as the store writes
// it.
func BenchmarkRecordJSON(b *testing.B) {
	for _, st := range []struct {
		name string
		s    *turnstate.Session
	}{{"busy", busySession()}, {"reading", readingSession()}} {
		s := st.s
		out := &statestore.Outbox{Written: s.LastTime, Msgs: []statestore.Publication{{Subject: acs.DecisionSubject("default", s.SessionID),
			Header: map[string][]string{acs.HdrMsgID: {"r:1"}, acs.HdrReceipt: {strings.Repeat("A", 200)}}, Data: bytes.Repeat([]byte("x"), 500)}}}
		b.Run(st.name+"/encoding-json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := statestore.MarshalRecord(s, out); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(st.name+"/encoder", func(b *testing.B) {
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if buf, err = statestore.AppendRecordJSON(buf[:0], s, out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOutboxCodec is a session write and read without the network,
// as the processor makes them: a busy session with its outbox encoded,
// sealed and wrapped in its compare-and-set message (SaveMsg), then
// verified and decoded (what Load does with the value). Outboxes: a
// decision (the usual write), an alert and its decision, and a dead letter
// carrying a 256 KiB original with its refusal.
func BenchmarkOutboxCodec(b *testing.B) {
	_, kv, _ := testBucket(b, "BENCH")
	store := statestore.NewStore(kv, fixtureSealer(b))
	s := busySession()
	decision := statestore.Publication{Subject: acs.DecisionSubject(s.Tenant, s.SessionID),
		Header: map[string][]string{acs.HdrMsgID: {"r:1"}, acs.HdrStreamSeq: {"401"}, acs.HdrReceipt: {strings.Repeat("A", 88)}},
		Data:   bytes.Repeat([]byte(`{"decision":"allow"}`), 22)}
	alert := statestore.Publication{Subject: "acs.alerts." + s.Tenant + ".high.TG-TAINT-001",
		Header: map[string][]string{acs.HdrMsgID: {"alert:TG-TAINT-001:401"}, acs.HdrReceipt: {strings.Repeat("A", 88)}},
		Data:   bytes.Repeat([]byte(`{"class_uid":2004}`), 100)}
	dead := statestore.Publication{Subject: acs.DLQSubject(s.Tenant),
		Header: map[string][]string{acs.HdrMsgID: {"dlq:401"}, acs.HdrErrorCode: {"-32602"}},
		Data:   bytes.Repeat([]byte(`{"k":"v"},`), 256<<10/10)}
	for _, c := range []struct {
		name string
		msgs []statestore.Publication
	}{
		{"decision", []statestore.Publication{decision}},
		{"alert+decision", []statestore.Publication{alert, decision}},
		{"deadletter-256KiB", []statestore.Publication{dead, alert, decision}},
	} {
		b.Run(c.name, func(b *testing.B) {
			out := &statestore.Outbox{Written: s.LastTime, Msgs: c.msgs}
			b.ReportAllocs()
			for b.Loop() {
				w, err := store.SaveMsg(s, out, 7)
				if err != nil {
					b.Fatal(err)
				}
				got, gotOut, err := store.OpenSession(s.Key(), w.Msg.Data)
				if err != nil || got == nil || len(gotOut.Msgs) != len(c.msgs) {
					b.Fatal(err)
				}
				w.Release()
			}
		})
	}
}
