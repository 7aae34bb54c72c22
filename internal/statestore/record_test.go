package statestore_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/internal/statestore"
)

// TestBadRecordIsIntegrityError: a value whose MAC verifies (sealed with
// the state key, as only a processor or a leaked key can) but whose record
// is not well framed loads as an *IntegrityError record_undecodable, as
// any value that does not verify, with its revision and none of its
// contents — never a panic, a slice out of range or a half-decoded state.
func TestBadRecordIsIntegrityError(t *testing.T) {
	ctx := context.Background()
	_, kv, st := testBucket(t, "BAD")
	sealer := fixtureSealer(t)
	store := statestore.NewStore(kv, sealer).WithMarkers(st)
	const key = "default.s1"
	session := `{"tenant":"default","session_id":"s1","open_turns":[]}`
	withOutbox := `{"tenant":"default","session_id":"s1","outbox":{"written":"2026-12-03T11:00:00Z","msgs":[{"subject":"acs.decisions.default.s1"},{"subject":"acs.dlq.default"}]}}`
	netstr := func(s string) string { return strings.Join([]string{strconv.Itoa(len(s)), ":", s, ","}, "") }
	for _, c := range []struct {
		name   string
		record string
		want   string // in the error
	}{
		{"unknown format", "[" + session[1:], "unknown format"},
		{"JSON record that does not decode", `{"tenant":`, "unexpected end of JSON"},
		{"tag alone", "#", "truncated"},
		{"length without ':'", "#12", "truncated"},
		{"length too long", "#1234567890:" + session + ",", "at most 9 digits"},
		{"no length", "#:" + session + ",", "no length"},
		{"length with a leading zero", "#0" + netstr(session), "leading zero"},
		{"length not a number", "#5x:{}}}},", "not a number"},
		{"negative length", "#-5:" + session + ",", "not a number"},
		{"JSON frame truncated", "#" + netstr(session)[:20], "only"},
		{"JSON frame longer than the record", "#999999999:" + session + ",", "frame of 999999999 bytes"},
		{"JSON frame without its ','", "#" + netstr(session)[:len(netstr(session))-1] + ";", "not followed by ','"},
		{"JSON frame empty", "#0:,", "not an object"},
		{"JSON null", "#" + netstr("null"), "not an object"},
		{"JSON frame not JSON", "#" + netstr("{tenant}"), "invalid character"},
		{"bytes after the JSON", "#" + netstr(session) + "x", "1 bytes after the bodies of 0"},
		{"a body too many", "#" + netstr(session) + netstr("{}"), "after the bodies of 0"},
		{"bodies missing", "#" + netstr(withOutbox), "body of publication 1 of 2: truncated"},
		{"a body missing", "#" + netstr(withOutbox) + netstr("{}"), "body of publication 2 of 2"},
		{"a body longer than the record", "#" + netstr(withOutbox) + netstr("{}") + "300000:{}", "frame of 300000 bytes"},
		{"a body without its ','", "#" + netstr(withOutbox) + netstr("{}") + "2:{}}", "not followed by ','"},
		{"a body too many after an outbox", "#" + netstr(withOutbox) + netstr("{}") + netstr("") + netstr(""), "after the bodies of 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rev, err := kv.Put(ctx, key, sealer.Seal(turnstate.KindSession, key, []byte(c.record)))
			if err != nil {
				t.Fatal(err)
			}
			s, out, gotRev, err := store.Load(ctx, key)
			var ie *statestore.IntegrityError
			if !errors.As(err, &ie) || ie.Reason != turnstate.ReasonNotDecoded || gotRev != rev || s != nil || out != nil {
				t.Fatalf("Load: %v, %v, rev %d (want %d), %v; want an IntegrityError %s", s, out, gotRev, rev, err, turnstate.ReasonNotDecoded)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
		})
	}
}

// TestRecordJSON: what readers without the key see of a stored value —
// the record's JSON — for a framed session, one stored by an earlier
// version, an agent, and a value without a seal; a framed record whose
// JSON frame is broken is an error.
func TestRecordJSON(t *testing.T) {
	sealer := fixtureSealer(t)
	js := `{"tenant":"default","session_id":"s1"}`
	for _, c := range []struct {
		name  string
		value []byte
		want  string
		err   bool
	}{
		{"framed", sealer.Seal(turnstate.KindSession, "default.s1", []byte("#"+strconv.Itoa(len(js))+":"+js+",2:{},")), js, false},
		{"JSON record", sealer.Seal(turnstate.KindSession, "default.s1", []byte(js)), js, false},
		{"agent", sealer.Seal(turnstate.KindAgent, "default.agent-x", []byte(`{"agent_id":"x"}`)), `{"agent_id":"x"}`, false},
		{"not sealed", []byte(js), js, false},
		{"framed, truncated", sealer.Seal(turnstate.KindSession, "default.s1", []byte("#40:{")), "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := statestore.RecordJSON(c.value)
			if (err != nil) != c.err || string(got) != c.want {
				t.Fatalf("RecordJSON = %s, %v; want %s (error: %v)", got, err, c.want, c.err)
			}
		})
	}
}
