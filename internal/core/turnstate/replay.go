package turnstate

import "slices"

// MaxRecentNonces is how many nonces a session remembers. ACS §10.3 asks
// Guardians to refuse a nonce seen "within a deployment-configured sliding
// window"; turnguard's window is the session's last MaxRecentNonces nonces,
// which the timestamp skew window complements: an older copy is refused for
// its timestamp.
const MaxRecentNonces = 128

// Replayed reports whether the session already saw a request id (within
// the last MaxRecentRequestIDs).
func (s *Session) Replayed(requestID string) bool {
	return slices.Contains(s.RecentRequestIDs, requestID)
}

// NonceSeen reports whether the session already saw a nonce.
func (s *Session) NonceSeen(nonce string) bool {
	return nonce != "" && slices.Contains(s.RecentNonces, nonce)
}

// RememberNonce records a nonce of an applied envelope.
func (s *Session) RememberNonce(nonce string) {
	if nonce != "" {
		s.RecentNonces = remember(s.RecentNonces, nonce, MaxRecentNonces)
	}
}
