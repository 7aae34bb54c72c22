package statestore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/internal/statestore"
)

// TestStoreRoundTrip covers what the processor relies on from the store
// alone: compare-and-set, sealed values written through SaveMsg, and a
// deleted key read through the bucket's stream as an IntegrityError with
// its marker's revision.
func TestStoreRoundTrip(t *testing.T) {
	ctx := context.Background()
	js, kv, st := testBucket(t, "TEST")
	sealer, err := turnstate.NewSealer(bytes.Repeat([]byte{7}, turnstate.StateKeySize))
	if err != nil {
		t.Fatal(err)
	}
	store := statestore.NewStore(kv, sealer).WithMarkers(st)

	sess := turnstate.New("default", "s1")
	rev, err := store.Save(ctx, sess, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Save(ctx, sess, 0); !errors.Is(err, statestore.ErrConflict) {
		t.Fatalf("second create: %v, want ErrConflict", err)
	}

	out := &statestore.Outbox{Msgs: []statestore.Publication{{Subject: acs.DecisionSubject("default", "s1"),
		Header: map[string][]string{acs.HdrMsgID: {"r:1"}}, Data: []byte("{}")}}}
	w, err := store.SaveMsg(sess, out, rev)
	if err != nil {
		t.Fatal(err)
	}
	m := w.Msg
	if m.Subject != acs.KVSubject("TEST", sess.Key()) {
		t.Fatalf("SaveMsg subject %q", m.Subject)
	}
	ack, err := js.PublishMsg(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.PublishMsg(ctx, m); !statestore.IsConflict(err) {
		t.Fatalf("stale SaveMsg publish: %v, want a conflict", err)
	}
	got, gotOut, gotRev, err := store.Load(ctx, sess.Key())
	if err != nil || got == nil || gotRev != ack.Sequence {
		t.Fatalf("Load: %v, %v, rev %d (want %d)", got, err, gotRev, ack.Sequence)
	}
	if gotOut == nil || len(gotOut.Msgs) != 1 || gotOut.Msgs[0].Header.Get(acs.HdrMsgID) != "r:1" {
		t.Fatalf("outbox %+v", gotOut)
	}

	if err := kv.Delete(ctx, sess.Key()); err != nil {
		t.Fatal(err)
	}
	_, _, markerRev, err := store.Load(ctx, sess.Key())
	var ie *statestore.IntegrityError
	if !errors.As(err, &ie) || ie.Reason != turnstate.ReasonDeleted || markerRev == 0 {
		t.Fatalf("deleted key: %v (rev %d), want an IntegrityError %s with the marker's revision", err, markerRev, turnstate.ReasonDeleted)
	}
}

// TestSaveMsgEncoding: the record SaveMsg seals is the framed record —
// '#', the JSON of the state and its outbox without the bodies, then each
// body raw, every part a netstring — for one record after another through
// the store's reused buffers, each value released once read; its MAC
// verifies, and it opens back as it was saved. A value not released is
// never written over by later ones.
func TestSaveMsgEncoding(t *testing.T) {
	sealer := fixtureSealer(t)
	_, kv, _ := testBucket(t, "ENC")
	store := statestore.NewStore(kv, sealer)
	busy := busySession()
	small := turnstate.New("default", "s<&>\u2028")
	out := &statestore.Outbox{Msgs: []statestore.Publication{{Subject: acs.DecisionSubject("default", "s1"),
		Header: map[string][]string{acs.HdrMsgID: {"r:1"}}, Data: []byte(`{"a":"<b>"}`)}}}
	kept, err := store.SaveMsg(busy, out, 3)
	if err != nil {
		t.Fatal(err)
	}
	keptValue := bytes.Clone(kept.Msg.Data)
	for i, c := range []struct {
		sess *turnstate.Session
		out  *statestore.Outbox
	}{{busy, out}, {small, nil}, {busy, nil}, {small, out}, {busy, fixtureOutbox(busy)}, {small, &statestore.Outbox{}}} {
		w, err := store.SaveMsg(c.sess, c.out, 3)
		if err != nil {
			t.Fatal(err)
		}
		m := w.Msg
		rec, reason := sealer.Open(turnstate.KindSession, c.sess.Key(), m.Data)
		if want := framed(t, c.sess, c.out); reason != "" || !bytes.Equal(rec, want) {
			t.Fatalf("record %d (%s):\n got %q\nwant %q", i, reason, rec, want)
		}
		got, gotOut, err := store.OpenSession(c.sess.Key(), m.Data)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		sameJSON(t, "state", got, c.sess)
		sameOutbox(t, gotOut, c.out)
		w.Release()
		if m.Data != nil {
			t.Fatalf("record %d: a released message keeps its value", i)
		}
		w.Release() // twice is harmless
	}
	if !bytes.Equal(kept.Msg.Data, keptValue) {
		t.Fatal("a value not released was written over")
	}
}

// framed is the record of sess and out as the framed format describes it,
// spelled out here apart from the store's encoder.
func framed(t *testing.T, sess *turnstate.Session, out *statestore.Outbox) []byte {
	t.Helper()
	js, err := json.Marshal(struct {
		*turnstate.Session
		Outbox *statestore.Outbox `json:"outbox,omitempty"`
	}{sess, out})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(js, []byte(`"data"`)) {
		t.Fatalf("the JSON holds a body: %s", js)
	}
	rec := fmt.Appendf(nil, "#%d:%s,", len(js), js)
	if out != nil {
		for _, m := range out.Msgs {
			rec = fmt.Appendf(rec, "%d:%s,", len(m.Data), m.Data)
		}
	}
	return rec
}
