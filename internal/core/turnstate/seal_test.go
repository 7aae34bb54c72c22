package turnstate_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/turnguard/turnguard/internal/core/turnstate"
)

func testSealer(t testing.TB, fill byte) *turnstate.Sealer {
	t.Helper()
	s, err := turnstate.NewSealer(bytes.Repeat([]byte{fill}, turnstate.StateKeySize))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSealRoundTrip(t *testing.T) {
	s := testSealer(t, 1)
	record := []byte(`{"tenant":"default","session_id":"s1","taints":{"untrusted_content":{"hits":1}}}`)
	value := s.Seal(turnstate.KindSession, "default.s1", record)
	got, reason := s.Open(turnstate.KindSession, "default.s1", value)
	if reason != "" || !bytes.Equal(got, record) {
		t.Fatalf("Open = %q, %q; want the record back", got, reason)
	}
	if !json.Valid(value) {
		t.Errorf("sealed value is not JSON: %s", value)
	}
	if r := turnstate.RecordOf(value); !bytes.Equal(r, record) {
		t.Errorf("RecordOf = %q", r)
	}
	if r := turnstate.RecordOf(record); !bytes.Equal(r, record) {
		t.Errorf("RecordOf of an unsealed value = %q, want it unchanged", r)
	}
}

// SealInPlace fills the room a caller left around a record, and nothing
// past it: the value is Seal's.
func TestSealInPlace(t *testing.T) {
	s := testSealer(t, 1)
	record := []byte(`{"tenant":"default","session_id":"s1"}`)
	buf := bytes.Repeat([]byte{'x'}, turnstate.SealHeadLen+len(record)+1+8)
	copy(buf[turnstate.SealHeadLen:], record)
	value := buf[:turnstate.SealHeadLen+len(record)+1]
	s.SealInPlace(turnstate.KindSession, "default.s1", value)
	if want := s.Seal(turnstate.KindSession, "default.s1", record); !bytes.Equal(value, want) {
		t.Fatalf("in place\n got %s\nwant %s", value, want)
	}
	if !bytes.Equal(buf[len(value):], []byte("xxxxxxxx")) {
		t.Fatalf("wrote past the value: %q", buf[len(value):])
	}
}

// TestOpenRefuses is every way a value can fail to be what a processor
// holding the key wrote for that key.
func TestOpenRefuses(t *testing.T) {
	s := testSealer(t, 1)
	record := []byte(`{"tenant":"default","session_id":"s1","taints":{"untrusted_content":{"hits":1}}}`)
	value := s.Seal(turnstate.KindSession, "default.s1", record)
	edited := bytes.Replace(value, []byte(`,"taints":{"untrusted_content":{"hits":1}}`), nil, 1)
	flipped := bytes.Clone(value)
	flipped[10] ^= 1 // inside the hex MAC
	for _, tc := range []struct {
		name   string
		kind   string
		key    string
		sealer *turnstate.Sealer
		value  []byte
		reason string
	}{
		{"unsealed record (earlier versions)", turnstate.KindSession, "default.s1", s, record, turnstate.ReasonNotSealed},
		{"taints removed", turnstate.KindSession, "default.s1", s, edited, turnstate.ReasonBadMAC},
		{"MAC bit flipped", turnstate.KindSession, "default.s1", s, flipped, turnstate.ReasonBadMAC},
		{"moved to another session's key", turnstate.KindSession, "default.s2", s, value, turnstate.ReasonBadMAC},
		{"moved to another tenant", turnstate.KindSession, "other.s1", s, value, turnstate.ReasonBadMAC},
		{"read as an agent state", turnstate.KindAgent, "default.s1", s, value, turnstate.ReasonBadMAC},
		{"sealed with another key", turnstate.KindSession, "default.s1", testSealer(t, 2), value, turnstate.ReasonBadMAC},
		{"MAC not hex", turnstate.KindSession, "default.s1", s, bytes.Replace(value, value[8:10], []byte("zz"), 1), turnstate.ReasonBadMAC},
		{"truncated inside the MAC", turnstate.KindSession, "default.s1", s, value[:40], turnstate.ReasonNotSealed},
		{"record cut short", turnstate.KindSession, "default.s1", s, value[:len(value)-1], turnstate.ReasonBadMAC},
		{"reformatted", turnstate.KindSession, "default.s1", s, bytes.Replace(value, []byte(`","record":`), []byte(`", "record": `), 1), turnstate.ReasonNotSealed},
		{"empty", turnstate.KindSession, "default.s1", s, nil, turnstate.ReasonNotSealed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := tc.sealer.Open(tc.kind, tc.key, tc.value)
			if reason != tc.reason || got != nil {
				t.Errorf("Open = %q, %q; want nil, %q", got, reason, tc.reason)
			}
		})
	}
}

func TestNewSealerRefusesShortKeys(t *testing.T) {
	if _, err := turnstate.NewSealer(make([]byte, turnstate.StateKeySize-1)); err == nil {
		t.Error("a 31-byte key was accepted")
	}
}

// FuzzOpen feeds the stored-value decoder what anyone with write access to
// the bucket could store: it never panics, accepts only values that are
// exactly what Seal makes of their record under that key, and never
// accepts anything under another key.
func FuzzOpen(f *testing.F) {
	s := testSealer(f, 1)
	other := testSealer(f, 2)
	good := s.Seal(turnstate.KindSession, "default.s1", []byte(`{"tenant":"default"}`))
	f.Add(good)
	f.Add([]byte(`{"tenant":"default","session_id":"s1"}`))
	f.Add([]byte(`{"mac":"","record":{}}`))
	f.Add(other.Seal(turnstate.KindSession, "default.s1", []byte(`{}`)))
	f.Add(bytes.Replace(good, []byte(`default`), []byte(`xefault`), 1))
	f.Fuzz(func(t *testing.T, value []byte) {
		record, reason := s.Open(turnstate.KindSession, "default.s1", value)
		if reason != "" {
			if record != nil {
				t.Fatalf("a refused value returned a record")
			}
			return
		}
		if !bytes.Equal(s.Seal(turnstate.KindSession, "default.s1", record), value) {
			t.Fatalf("accepted %q, which is not the sealed form of its record", value)
		}
		if _, r := s.Open(turnstate.KindSession, "default.s2", value); r == "" {
			t.Fatalf("accepted under another key: %q", value)
		}
		if _, r := other.Open(turnstate.KindSession, "default.s1", value); r == "" {
			t.Fatalf("accepted with another state key: %q", value)
		}
		if _, _, ok := turnstate.Unseal(value); !ok {
			t.Fatalf("Open accepted what Unseal refuses: %q", value)
		}
	})
}
