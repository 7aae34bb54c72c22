package turnstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrConflict is returned by Store.Save when the session's KV revision moved
// since it was read: another writer applied envelopes to the session, and
// the caller's copy is stale.
var ErrConflict = errors.New("turn state revision conflict")

// Store keeps session states in a JetStream KV bucket, one JSON value per
// session under <tenant>.<session_id>, written with compare-and-set on the
// revision so that a stale writer can never overwrite a newer state.
type Store struct {
	kv jetstream.KeyValue
}

// NewStore returns a Store over the given bucket.
func NewStore(kv jetstream.KeyValue) *Store { return &Store{kv: kv} }

// Load returns the session stored under key and its revision; a session
// that does not exist (never written, or expired by the bucket's TTL) is
// (nil, 0, nil).
func (s *Store) Load(ctx context.Context, key string) (*Session, uint64, error) {
	e, err := s.kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		return nil, 0, nil
	case err != nil:
		return nil, 0, fmt.Errorf("load session %s: %w", key, err)
	}
	var sess Session
	if err := json.Unmarshal(e.Value(), &sess); err != nil {
		return nil, 0, fmt.Errorf("decode session %s at revision %d: %w", key, e.Revision(), err)
	}
	return &sess, e.Revision(), nil
}

// Save writes the session if its stored revision is still rev (0: the key
// must not exist yet) and returns the new revision. A moved revision is
// ErrConflict.
func (s *Store) Save(ctx context.Context, sess *Session, rev uint64) (uint64, error) {
	val, err := json.Marshal(sess)
	if err != nil {
		return 0, fmt.Errorf("encode session %s: %w", sess.Key(), err)
	}
	var next uint64
	if rev == 0 {
		next, err = s.kv.Create(ctx, sess.Key(), val)
	} else {
		next, err = s.kv.Update(ctx, sess.Key(), val, rev)
	}
	switch {
	case rev == 0 && errors.Is(err, jetstream.ErrKeyExists),
		errors.Is(err, jetstream.ErrKeyRevisionMismatch):
		return 0, fmt.Errorf("save session %s at revision %d: %w", sess.Key(), rev, ErrConflict)
	case err != nil:
		return 0, fmt.Errorf("save session %s: %w", sess.Key(), err)
	}
	return next, nil
}

// CreateIfAbsent writes a session only if its key does not exist. It
// reports whether it wrote; an existing key is left alone.
func (s *Store) CreateIfAbsent(ctx context.Context, sess *Session) (bool, error) {
	_, err := s.Save(ctx, sess, 0)
	switch {
	case errors.Is(err, ErrConflict):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}
