package statestore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/internal/statestore"
)

// fixtureSealer is the state key the fixtures under testdata/ were sealed
// with.
func fixtureSealer(t testing.TB) *turnstate.Sealer {
	t.Helper()
	s, err := turnstate.NewSealer(bytes.Repeat([]byte{7}, turnstate.StateKeySize))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// fixtureOutbox is an outbox of every kind of publication: a dead letter
// whose original is not UTF-8, its refusal's alert, a decision with a
// receipt, and a publication without a body.
func fixtureOutbox(s *turnstate.Session) *statestore.Outbox {
	original := append([]byte(`{"jsonrpc":"2.0","method":"steps/toolCallRequest","params":{"x":"`), 0xff, 0x00, 0xfe, '"', '}', '}')
	return &statestore.Outbox{Written: time.Date(2026, 12, 3, 11, 0, 0, 123456789, time.UTC), Msgs: []statestore.Publication{
		{Subject: acs.DLQSubject(s.Tenant), Data: original,
			Header: map[string][]string{acs.HdrMsgID: {"dlq:401"}, acs.HdrErrorCode: {"-32602"}, acs.HdrOriginalSeq: {"401"}}},
		{Subject: "acs.alerts." + s.Tenant + ".high.TG-TAINT-001", Data: []byte(`{"class_uid":2004,"message":"<tainted>"}`),
			Header: map[string][]string{acs.HdrMsgID: {"alert:TG-TAINT-001:401"}, acs.HdrStreamSeq: {"401"}}},
		{Subject: acs.DecisionSubject(s.Tenant, s.SessionID), Data: []byte(`{"jsonrpc":"2.0","id":"r1","result":{"decision":"deny"}}`),
			Header: map[string][]string{acs.HdrMsgID: {"r1:401"}, acs.HdrStreamSeq: {"401"}, acs.HdrReceipt: {"KoFU8INBJFnL3RoegWDcLtvWD4uUOn5E+/=="}}},
		{Subject: acs.DecisionSubject(s.Tenant, s.SessionID), Header: map[string][]string{acs.HdrMsgID: {"empty:402"}}},
	}}
}

// TestLoadLegacyValue: a session's value as versions before the framed
// format stored it — the whole record JSON, the publications' bodies in
// base64 — still loads, state and outbox alike, so that states already in
// a bucket survive an upgrade. testdata/session-json-v1.value was written
// by SaveMsg before that change, of busySession with fixtureOutbox, under
// fixtureSealer's key.
func TestLoadLegacyValue(t *testing.T) {
	value, err := os.ReadFile(filepath.Join("testdata", "session-json-v1.value"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(value, []byte(`{"mac":"`)) || !bytes.Contains(value, []byte(`"data":"`)) {
		t.Fatalf("the fixture is not a JSON record with base64 bodies: %.80q", value)
	}
	ctx := context.Background()
	_, kv, st := testBucket(t, "LEGACY")
	want := busySession()
	wantOut := fixtureOutbox(want)
	if _, err := kv.Put(ctx, want.Key(), value); err != nil {
		t.Fatal(err)
	}
	for name, store := range map[string]*statestore.Store{
		"KV API":          statestore.NewStore(kv, fixtureSealer(t)),
		"bucket's stream": statestore.NewStore(kv, fixtureSealer(t)).WithMarkers(st),
	} {
		t.Run(name, func(t *testing.T) {
			got, gotOut, rev, err := store.Load(ctx, want.Key())
			if err != nil || got == nil || rev == 0 {
				t.Fatalf("Load: %v, %v, rev %d", got, err, rev)
			}
			sameJSON(t, "state", got, want)
			sameOutbox(t, gotOut, wantOut)
		})
	}
}

// sameJSON requires got and want to encode alike.
func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g, w) {
		t.Fatalf("%s:\n got %s\nwant %s", what, g, w)
	}
}

// sameOutbox requires got to hold want's publications, bodies byte for
// byte (an empty body and none are alike).
func sameOutbox(t *testing.T, got, want *statestore.Outbox) {
	t.Helper()
	if (got == nil) != (want == nil) {
		t.Fatalf("outbox %+v, want %+v", got, want)
	}
	if got == nil {
		return
	}
	if !got.Written.Equal(want.Written) || len(got.Msgs) != len(want.Msgs) {
		t.Fatalf("outbox written %v with %d publications, want %v with %d", got.Written, len(got.Msgs), want.Written, len(want.Msgs))
	}
	for i, m := range got.Msgs {
		w := want.Msgs[i]
		if m.Subject != w.Subject || !bytes.Equal(m.Data, w.Data) {
			t.Errorf("publication %d: %s %q, want %s %q", i, m.Subject, m.Data, w.Subject, w.Data)
		}
		sameJSON(t, "headers", m.Header, w.Header)
	}
}
