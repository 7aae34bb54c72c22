// Package statestore keeps session and agent states in the JetStream KV
// bucket ACS_TURNSTATE: sealed values, compare-and-set on the revision, and
// the outbox a state write carries. It is the I/O side of internal/core/turnstate:
// the states and their transitions stay pure there (no NATS, so that the
// decision core, replay and the rule tests never link a client), and the
// sealing (turnstate.Sealer) stays there too, since it is plain crypto that
// the member records of internal/stream use as well; this package only moves
// sealed bytes in and out of the bucket.
package statestore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// ErrConflict is returned by Store.Save when the session's KV revision moved
// since it was read: another writer applied envelopes to the session, and
// the caller's copy is stale.
var ErrConflict = errors.New("turn state revision conflict")

// Store keeps session states in a JetStream KV bucket, one value per
// session under <tenant>.<session_id>, written with compare-and-set on the
// revision so that a stale writer can never overwrite a newer state. Every
// value is sealed (turnstate.Sealer): written with an HMAC over its key and
// record, and verified before it is decoded. A session's record is its
// JSON followed by its outbox's bodies as raw bytes (record.go); an
// agent's is its JSON.
type Store struct {
	kv     jetstream.KeyValue
	sealer *turnstate.Sealer
	// st, when set, is the bucket's stream, read so that delete and purge
	// markers are seen (WithMarkers).
	st jetstream.Stream
	// encoding holds *bytes.Buffer to encode values in: a record is
	// encoded there and sealed in place, its value lent to a write
	// (SaveMsg) or copied once into one allocation of its stored size.
	encoding sync.Pool
}

// NewStore returns a Store over the given bucket, sealing with sealer.
func NewStore(kv jetstream.KeyValue, sealer *turnstate.Sealer) *Store {
	return &Store{kv: kv, sealer: sealer}
}

// WithMarkers makes the store read values through the bucket's stream
// (KV_<bucket>), where a deleted or purged key shows as its marker, with a
// revision: the KV API reports such a key as absent, and a write expecting
// it absent would fail against the marker for ever. The processor reads
// this way; tools that only look may use the KV API alone.
func (s *Store) WithMarkers(bucketStream jetstream.Stream) *Store {
	s.st = bucketStream
	return s
}

// Publication is a message the processor publishes because of a state
// write: a decision, an alert, a dead letter. Its body is stored as raw
// bytes after the record's JSON (record.go), not in it.
type Publication struct {
	Subject string      `json:"subject"`
	Header  nats.Header `json:"header,omitempty"`
	Data    []byte      `json:"-"`
}

// Outbox is what the write of a session's state left to publish. The state
// is written first — its revision check is the fence between processor
// instances — and its publications after, so a holder that finds an
// outbox may not know whether it went out, and publishes it again.
type Outbox struct {
	// Written is the writer's wall clock: republishing is free of
	// duplicates only within the streams' duplicate window.
	Written time.Time     `json:"written"`
	Msgs    []Publication `json:"msgs"`
}

// record is a session's stored JSON: its fields and its outbox, the
// publications' bodies left out (they follow it, record.go). The encoder
// of encode.go writes it as encoding/json would; encoding/json reads it.
type record struct {
	*turnstate.Session
	Outbox *Outbox `json:"outbox,omitempty"`
}

// Load returns the session stored under key, the outbox of its last write
// and its revision; a session that does not exist (never written, or
// expired by the bucket's TTL) is (nil, nil, 0, nil). A value that does not
// verify, and a deleted or purged one (turnstate.ReasonDeleted), is an
// *IntegrityError, returned with its revision (the fence of the state that
// replaces it) and nothing of its contents.
func (s *Store) Load(ctx context.Context, key string) (*turnstate.Session, *Outbox, uint64, error) {
	rec, rev, err := s.open(ctx, turnstate.KindSession, key)
	if rec == nil || err != nil {
		return nil, nil, rev, err
	}
	sess, out, err := decodeSession(rec)
	if err != nil {
		return nil, nil, rev, undecoded(turnstate.KindSession, key, rev, err)
	}
	return sess, out, rev, nil
}

// Save writes the session if its stored revision is still rev (0: the key
// must not exist yet) and returns the new revision. A moved revision is
// ErrConflict.
func (s *Store) Save(ctx context.Context, sess *turnstate.Session, rev uint64) (uint64, error) {
	return s.SaveKeeping(ctx, sess, nil, rev)
}

// SaveKeeping is Save for a state changed by someone other than its
// session's worker: the value keeps out, the outbox Load returned with it,
// so that the publications of the session's last batch are still found
// there (and published after a crash) as if the worker had written it.
func (s *Store) SaveKeeping(ctx context.Context, sess *turnstate.Session, out *Outbox, rev uint64) (uint64, error) {
	key := sess.Key()
	val, err := s.sealSession(key, sess, out)
	if err != nil {
		return 0, err
	}
	return s.save(ctx, turnstate.KindSession, key, val, rev)
}

// LoadAgent returns an agent's shared state and its revision, or
// (nil, 0, nil) when there is none; a value that does not verify is an
// *IntegrityError with its revision, as Load's.
func (s *Store) LoadAgent(ctx context.Context, key string) (*turnstate.Agent, uint64, error) {
	rec, rev, err := s.open(ctx, turnstate.KindAgent, key)
	if rec == nil || err != nil {
		return nil, rev, err
	}
	var a turnstate.Agent
	if err := json.Unmarshal(rec, &a); err != nil {
		return nil, rev, undecoded(turnstate.KindAgent, key, rev, err)
	}
	return &a, rev, nil
}

// SaveAgent writes an agent's state with compare-and-set, as Save does.
func (s *Store) SaveAgent(ctx context.Context, a *turnstate.Agent, rev uint64) (uint64, error) {
	key := a.Key()
	val, err := s.sealAgent(key, a)
	if err != nil {
		return 0, err
	}
	return s.save(ctx, turnstate.KindAgent, key, val, rev)
}

// open reads key's value and returns its verified record (nil when there
// is none) and its revision.
func (s *Store) open(ctx context.Context, what, key string) (rec []byte, rev uint64, err error) {
	value, rev, deleted, err := s.get(ctx, key)
	switch {
	case err != nil:
		return nil, 0, fmt.Errorf("load %s %s: %w", what, key, err)
	case deleted:
		// The marker's revision is the fence the replacement is written
		// against; without it every write would expect the key absent,
		// fail, and wedge the partition.
		return nil, rev, &IntegrityError{Kind: what, Key: key, Revision: rev, Reason: turnstate.ReasonDeleted}
	case rev == 0:
		return nil, 0, nil
	}
	// Verified first, decoded after: nothing of a value that does not
	// verify is ever parsed into a state.
	rec, reason := s.sealer.Open(what, key, value)
	if reason != "" {
		return nil, rev, &IntegrityError{Kind: what, Key: key, Revision: rev, Reason: reason}
	}
	return rec, rev, nil
}

// undecoded is the error of a verified record that does not decode.
func undecoded(what, key string, rev uint64, err error) *IntegrityError {
	return &IntegrityError{Kind: what, Key: key, Revision: rev, Reason: turnstate.ReasonNotDecoded, Err: err}
}

// kvOperation is the header a KV delete or purge marker carries.
const kvOperation = "KV-Operation"

// get reads key's newest message: its value and revision, or a delete or
// purge marker (deleted, with the marker's revision), or nothing (rev 0).
func (s *Store) get(ctx context.Context, key string) (value []byte, rev uint64, deleted bool, err error) {
	if s.st == nil {
		e, err := s.kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			return nil, 0, false, nil
		}
		if err != nil {
			return nil, 0, false, err
		}
		return e.Value(), e.Revision(), false, nil
	}
	m, err := s.st.GetLastMsgForSubject(ctx, acs.KVSubject(s.kv.Bucket(), key))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, err
	}
	switch m.Header.Get(kvOperation) {
	case "DEL", "PURGE":
		return nil, m.Sequence, true, nil
	}
	return m.Data, m.Sequence, false, nil
}

// buffer returns a reused buffer to encode a record in; release gives it
// back.
func (s *Store) buffer() *bytes.Buffer {
	if buf, _ := s.encoding.Get().(*bytes.Buffer); buf != nil {
		return buf
	}
	return new(bytes.Buffer)
}

func (s *Store) release(buf *bytes.Buffer) {
	// A rare huge record is not kept for every later one.
	if buf.Cap() <= 1<<20 {
		buf.Reset()
		s.encoding.Put(buf)
	}
}

// sealSession returns the stored value of a session and its outbox: its
// framed record (record.go), sealed under key.
func (s *Store) sealSession(key string, sess *turnstate.Session, out *Outbox) ([]byte, error) {
	buf := s.buffer()
	defer s.release(buf)
	val, err := s.sealSessionInto(buf, key, sess, out)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(val), nil
}

// sealSessionInto encodes and seals the value of a session in buf and
// returns it (a slice of buf): room for the seal, the framed record right
// after it, the seal's closing byte.
func (s *Store) sealSessionInto(buf *bytes.Buffer, key string, sess *turnstate.Session, out *Outbox) ([]byte, error) {
	var room [turnstate.SealHeadLen]byte
	buf.Write(room[:])
	rec, err := appendRecord(buf, sess, out)
	if err != nil {
		return nil, fmt.Errorf("encode %s %s: %w", turnstate.KindSession, key, err)
	}
	// The record ends buf; its framing may start past the room's end.
	start := buf.Len() - len(rec) - turnstate.SealHeadLen
	buf.WriteByte(0)
	val := buf.Bytes()[start:]
	s.sealer.SealInPlace(turnstate.KindSession, key, val)
	return val, nil
}

// sealAgent returns the stored value of an agent: its JSON, sealed under
// key.
func (s *Store) sealAgent(key string, a *turnstate.Agent) ([]byte, error) {
	buf := s.buffer()
	defer s.release(buf)
	js, err := appendAgentJSON(buf.AvailableBuffer(), a)
	if err != nil {
		return nil, fmt.Errorf("encode %s %s: %w", turnstate.KindAgent, key, err)
	}
	// Written back so that the pooled buffer keeps the room it took.
	buf.Write(js)
	return s.sealer.Seal(turnstate.KindAgent, key, buf.Bytes()), nil
}

// save writes a sealed value with compare-and-set on rev.
func (s *Store) save(ctx context.Context, what, key string, val []byte, rev uint64) (uint64, error) {
	var next uint64
	var err error
	if rev == 0 {
		next, err = s.kv.Create(ctx, key, val)
	} else {
		next, err = s.kv.Update(ctx, key, val, rev)
	}
	switch {
	case rev == 0 && errors.Is(err, jetstream.ErrKeyExists),
		errors.Is(err, jetstream.ErrKeyRevisionMismatch):
		return 0, fmt.Errorf("save %s %s at revision %d: %w", what, key, rev, ErrConflict)
	case err != nil:
		return 0, fmt.Errorf("save %s %s: %w", what, key, err)
	}
	return next, nil
}

// SaveMsg returns the publication that writes the session and the outbox
// of this write (nil: none) if its stored revision is still rev (0: the key
// must not exist): a JetStream publish to the bucket's subject with the
// expected last sequence, as the KV API sends it. Many of them can be in
// flight at once; the publish acknowledgement's sequence is the new
// revision, and a refusal for which IsConflict holds means the revision
// moved. The value is lent from the store's buffers: Release gives it back.
func (s *Store) SaveMsg(sess *turnstate.Session, out *Outbox, rev uint64) (*Sealed, error) {
	key := sess.Key()
	buf := s.buffer()
	val, err := s.sealSessionInto(buf, key, sess, out)
	if err != nil {
		s.release(buf)
		return nil, err
	}
	m := nats.NewMsg(acs.KVSubject(s.kv.Bucket(), key))
	m.Data = val
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(rev, 10))
	return &Sealed{Msg: m, store: s, buf: buf}, nil
}

// Sealed is a session's write as SaveMsg prepares it: the compare-and-set
// message, its value encoded and sealed in a buffer of the store's, not
// copied out of it (a session's value is the largest thing the processor
// allocates per envelope).
type Sealed struct {
	Msg   *nats.Msg
	store *Store
	buf   *bytes.Buffer
}

// Release gives the message's buffer back to the store for later values
// and clears Msg.Data. Call it only once its publish is resolved —
// acknowledged or refused — or was never made: until then the client may
// send the bytes again (a retry), and they must not change. A write never
// released costs its allocation, nothing else.
func (w *Sealed) Release() {
	if w.buf == nil {
		return
	}
	w.Msg.Data = nil
	w.store.release(w.buf)
	w.buf = nil
}

// IsConflict reports whether a publish of SaveMsg's message was refused
// because the session's revision moved. Replicated buckets report it with
// a different error code than single-replica ones.
func IsConflict(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

// CreateIfAbsent writes a session only if its key does not exist. It
// reports whether it wrote; an existing key is left alone.
func (s *Store) CreateIfAbsent(ctx context.Context, sess *turnstate.Session) (bool, error) {
	_, err := s.Save(ctx, sess, 0)
	switch {
	case errors.Is(err, ErrConflict):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}
