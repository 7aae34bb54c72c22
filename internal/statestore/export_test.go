package statestore

import (
	"encoding/json"

	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// OpenSession verifies and decodes a session's stored value as Load does,
// without the bucket: for the codec's tests and benchmarks.
func (s *Store) OpenSession(key string, value []byte) (*turnstate.Session, *Outbox, error) {
	rec, reason := s.sealer.Open(turnstate.KindSession, key, value)
	if reason != "" {
		return nil, nil, &IntegrityError{Kind: turnstate.KindSession, Key: key, Reason: reason}
	}
	return decodeSession(rec)
}

// AppendRecordJSON is the encoder's JSON of a session's record, and
// MarshalRecord encoding/json's, which it replaced: for benchmarks.
func AppendRecordJSON(b []byte, sess *turnstate.Session, out *Outbox) ([]byte, error) {
	return appendRecordJSON(b, sess, out)
}

func MarshalRecord(sess *turnstate.Session, out *Outbox) ([]byte, error) {
	return json.Marshal(record{Session: sess, Outbox: out})
}
