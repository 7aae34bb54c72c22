package statestore

import (
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
