package statestore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// A session's record — the bytes turnstate.Sealer seals — is framed:
//
//	'#' netstring(JSON) netstring(body 1) … netstring(body n)
//	netstring(x) = len(x) in decimal ':' x ','
//
// JSON is the session's fields and its outbox (record), the publications'
// subjects and headers without their bodies; body i is publication i's,
// raw. Earlier versions stored the whole record as JSON, each body in
// base64 inside it: encoded on every write and scanned twice on every load
// (a dead letter carries its original envelope, hundreds of KiB). Such a
// record starts with '{', as every JSON record encoding/json writes for a
// struct, so the first byte tells the formats apart (decodeSession), and
// values stored by earlier versions still load.
//
// Netstrings rather than binary lengths keep a value printable as far as
// its bodies are (`nats kv get` shows JSON, lengths and the bodies); the
// decimal lengths cost nothing measurable. The MAC covers every byte of
// the record, framing included, so a value someone without the key edited
// fails before any of this is parsed; the parser still takes nothing on
// trust (FuzzDecodeSession).
const (
	// framedTag starts a framed record: any byte but '{' would do, and
	// '#' keeps the value printable.
	framedTag = '#'
	// maxLenDigits bounds a frame's length: nine digits hold any value
	// NATS can store (its max_payload is at most 64 MiB) and cannot
	// overflow an int, even of 32 bits.
	maxLenDigits = 9
)

// appendRecord encodes the framed record of sess and out at the end of buf
// and returns it (a slice of buf's bytes, valid until buf is next written).
func appendRecord(buf *bytes.Buffer, sess *turnstate.Session, out *Outbox) ([]byte, error) {
	// The JSON's length is known only once it is written: room for the tag
	// and the longest length is kept before it, and they are written
	// right-aligned into it, so nothing is copied.
	var room [1 + maxLenDigits + 1]byte
	start := buf.Len()
	buf.Write(room[:])
	// The JSON is appended to buf's spare room and written back into the
	// same bytes (unless it outgrew them).
	js, err := appendRecordJSON(buf.AvailableBuffer(), sess, out)
	if err != nil {
		return nil, err
	}
	buf.Write(js)
	n := len(js)
	head := strconv.AppendInt(append(room[:0], framedTag), int64(n), 10)
	head = append(head, ':')
	if len(head) > len(room) {
		return nil, fmt.Errorf("record of %d bytes: longer than a value can be", n)
	}
	b := buf.Bytes()
	first := start + len(room) - len(head)
	copy(b[first:], head)
	buf.WriteByte(',')
	if out != nil {
		for _, m := range out.Msgs {
			appendNetstring(buf, m.Data)
		}
	}
	return buf.Bytes()[first:], nil
}

// appendNetstring writes x to buf as a netstring.
func appendNetstring(buf *bytes.Buffer, x []byte) {
	var digits [20]byte
	buf.Write(strconv.AppendInt(digits[:0], int64(len(x)), 10))
	buf.WriteByte(':')
	buf.Write(x)
	buf.WriteByte(',')
}

// decodeSession decodes a session's verified record, framed or as JSON of
// an earlier version. The bodies of a framed record's publications are
// slices of rec (capacity capped at their length): rec must not change
// while the outbox is used.
func decodeSession(rec []byte) (*turnstate.Session, *Outbox, error) {
	if len(rec) == 0 {
		return nil, nil, errors.New("empty record")
	}
	switch rec[0] {
	case framedTag:
		return decodeFramed(rec[1:])
	case '{':
		return decodeJSONRecord(rec)
	}
	return nil, nil, fmt.Errorf("record of an unknown format (first byte %#02x)", rec[0])
}

// decodeFramed decodes a framed record after its tag.
func decodeFramed(b []byte) (*turnstate.Session, *Outbox, error) {
	js, b, err := netstring(b)
	if err != nil {
		return nil, nil, fmt.Errorf("record's JSON: %w", err)
	}
	if len(js) == 0 || js[0] != '{' {
		// null would decode into nothing but an empty session.
		return nil, nil, errors.New("record's JSON is not an object")
	}
	r := record{Session: &turnstate.Session{}}
	if err := json.Unmarshal(js, &r); err != nil {
		return nil, nil, err
	}
	var msgs []Publication
	if r.Outbox != nil {
		msgs = r.Outbox.Msgs
	}
	for i := range msgs {
		var body []byte
		if body, b, err = netstring(b); err != nil {
			return nil, nil, fmt.Errorf("body of publication %d of %d: %w", i+1, len(msgs), err)
		}
		// An empty body loads as none, as from a JSON record.
		if len(body) > 0 {
			msgs[i].Data = body
		}
	}
	if len(b) > 0 {
		return nil, nil, fmt.Errorf("%d bytes after the bodies of %d publications", len(b), len(msgs))
	}
	return r.Session, r.Outbox, nil
}

// netstring splits the netstring at the start of b into its contents and
// what follows it.
func netstring(b []byte) (x, rest []byte, err error) {
	colon := bytes.IndexByte(b[:min(len(b), maxLenDigits+1)], ':')
	switch {
	case colon < 0 && len(b) <= maxLenDigits:
		return nil, nil, errors.New("truncated: no ':' after its length")
	case colon < 0:
		return nil, nil, fmt.Errorf("no length of at most %d digits and ':'", maxLenDigits)
	case colon == 0:
		return nil, nil, errors.New("no length")
	case colon > 1 && b[0] == '0':
		return nil, nil, errors.New("length with a leading zero")
	}
	n := 0
	for _, c := range b[:colon] {
		if c < '0' || c > '9' {
			return nil, nil, fmt.Errorf("length %q is not a number", b[:colon])
		}
		n = n*10 + int(c-'0')
	}
	b = b[colon+1:]
	switch {
	case n >= len(b):
		return nil, nil, fmt.Errorf("frame of %d bytes and ',', only %d bytes left", n, len(b))
	case b[n] != ',':
		return nil, nil, fmt.Errorf("frame of %d bytes not followed by ','", n)
	}
	return b[:n:n], b[n+1:], nil
}

// jsonRecord is a session's record as earlier versions stored it: all
// JSON, each publication's body in base64 in it.
type jsonRecord struct {
	*turnstate.Session
	Outbox *struct {
		Written time.Time `json:"written"`
		Msgs    []struct {
			Subject string      `json:"subject"`
			Header  nats.Header `json:"header,omitempty"`
			Data    []byte      `json:"data,omitempty"`
		} `json:"msgs"`
	} `json:"outbox,omitempty"`
}

func decodeJSONRecord(rec []byte) (*turnstate.Session, *Outbox, error) {
	r := jsonRecord{Session: &turnstate.Session{}}
	if err := json.Unmarshal(rec, &r); err != nil {
		return nil, nil, err
	}
	if r.Outbox == nil {
		return r.Session, nil, nil
	}
	out := &Outbox{Written: r.Outbox.Written}
	if r.Outbox.Msgs != nil {
		out.Msgs = make([]Publication, len(r.Outbox.Msgs))
	}
	for i, m := range r.Outbox.Msgs {
		out.Msgs[i] = Publication{Subject: m.Subject, Header: m.Header, Data: m.Data}
	}
	return r.Session, out, nil
}

// RecordJSON returns the JSON of a stored value's record without verifying
// its MAC: a session's or an agent's fields, and a session's outbox (its
// bodies left out, unless an earlier version stored the value). For readers
// that hold no state key and only look — loadgen's reconciliation, the
// watermark of a recreated ACS_HOOKS, tests — never for deciding anything.
// A value without a seal is taken as a record, as turnstate.RecordOf does.
func RecordJSON(value []byte) ([]byte, error) {
	rec := turnstate.RecordOf(value)
	if len(rec) == 0 || rec[0] != framedTag {
		return rec, nil
	}
	js, _, err := netstring(rec[1:])
	if err != nil {
		return nil, fmt.Errorf("record's JSON: %w", err)
	}
	return js, nil
}
