package statestore

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// seedRecords are records of every shape decodeSession knows: framed with
// and without an outbox, bodies empty, binary and framing-like, and the
// JSON record of testdata/session-json-v1.value.
func seedRecords(t testing.TB) [][]byte {
	t.Helper()
	s := turnstate.New("default", "s1")
	s.LastSeq, s.Envelopes = 3, 3
	out := &Outbox{Written: time.Date(2026, 12, 3, 11, 0, 0, 0, time.UTC), Msgs: []Publication{
		{Subject: acs.DLQSubject("default"), Header: map[string][]string{acs.HdrMsgID: {"dlq:3"}}, Data: []byte("3:abc,\x00\xff")},
		{Subject: acs.DecisionSubject("default", "s1"), Data: []byte(`{"jsonrpc":"2.0"}`)},
		{Subject: acs.DecisionSubject("default", "s1")},
	}}
	var seeds [][]byte
	for _, o := range []*Outbox{nil, {}, out} {
		rec, err := appendRecord(new(bytes.Buffer), s, o)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, rec)
	}
	value, err := os.ReadFile(filepath.Join("testdata", "session-json-v1.value"))
	if err != nil {
		t.Fatal(err)
	}
	return append(seeds, turnstate.RecordOf(value), []byte("#"), []byte("#2:{},1:x,"))
}

// FuzzDecodeSession: a record is parsed only once its MAC verified, but it
// comes from a bucket others can write, so the parser must hold on any
// bytes: no panic, and a record that decodes encodes again (framed) into
// one that decodes to the same session and outbox, bodies byte for byte.
func FuzzDecodeSession(f *testing.F) {
	for _, rec := range seedRecords(f) {
		f.Add(rec)
	}
	f.Fuzz(func(t *testing.T, rec []byte) {
		sess, out, err := decodeSession(rec)
		if err != nil {
			if sess != nil || out != nil {
				t.Fatalf("an error (%v) with a state", err)
			}
			return
		}
		again, err := appendRecord(new(bytes.Buffer), sess, out)
		if err != nil {
			// A state encoding/json decoded but cannot encode again (a
			// time out of RFC 3339's range): no processor writes one.
			t.Skipf("decoded, not encodable: %v", err)
		}
		sess2, out2, err := decodeSession(again)
		if err != nil {
			t.Fatalf("the record encoded again does not decode: %v\n%q", err, again)
		}
		sameRecord(t, sess2, out2, sess, out)
	})
}

// sameRecord requires got to be want: the state's and the outbox's JSON,
// and each body byte for byte.
func sameRecord(t *testing.T, got *turnstate.Session, gotOut *Outbox, want *turnstate.Session, wantOut *Outbox) {
	t.Helper()
	g, err := json.Marshal(record{got, gotOut})
	if err != nil {
		t.Fatal(err)
	}
	w, err := json.Marshal(record{want, wantOut})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g, w) {
		t.Fatalf("JSON:\n got %s\nwant %s", g, w)
	}
	if gotOut == nil {
		return
	}
	for i, m := range gotOut.Msgs {
		if !bytes.Equal(m.Data, wantOut.Msgs[i].Data) {
			t.Fatalf("body %d: %q, want %q", i, m.Data, wantOut.Msgs[i].Data)
		}
	}
}

// FuzzRecordRoundTrip: any bodies round trip through the framed record
// byte for byte (an empty body as none), with any subjects and headers.
func FuzzRecordRoundTrip(f *testing.F) {
	f.Add("s1", "acs.dlq.default", "dlq:1", []byte("3:abc,"), []byte{}, []byte("\x00\xff{"))
	f.Add("", "", "", []byte(nil), []byte(","), []byte("#1:{,"))
	f.Fuzz(func(t *testing.T, sid, subject, msgID string, a, b, c []byte) {
		if !utf8.ValidString(sid) || !utf8.ValidString(subject) || !utf8.ValidString(msgID) {
			// JSON strings are UTF-8 (encoding/json writes U+FFFD for
			// the rest): the JSON's business, not the framing's.
			t.Skip()
		}
		s := turnstate.New("default", sid)
		out := &Outbox{Msgs: []Publication{{Subject: subject, Header: map[string][]string{acs.HdrMsgID: {msgID}}, Data: a},
			{Subject: subject, Data: b}, {Data: c}}}
		rec, err := appendRecord(new(bytes.Buffer), s, out)
		if err != nil {
			t.Fatal(err)
		}
		got, gotOut, err := decodeSession(rec)
		if err != nil {
			t.Fatalf("%v\n%q", err, rec)
		}
		sameRecord(t, got, gotOut, s, out)
	})
}

// TestTruncatedRecords: every proper prefix of a framed record fails to
// decode (its last ',' at least is missing), none panics.
func TestTruncatedRecords(t *testing.T) {
	for _, rec := range seedRecords(t)[:3] {
		for n := range len(rec) {
			if _, _, err := decodeSession(rec[:n]); err == nil {
				t.Fatalf("the first %d of %d bytes decode: %q", n, len(rec), rec[:n])
			}
		}
	}
}
