package statestore

import "fmt"

// IntegrityError reports a stored value that does not verify. Its contents
// are never used: the caller rebuilds the state or resets it.
type IntegrityError struct {
	// Kind is "session" or "agent"; Key the KV key; Revision the value's.
	Kind     string
	Key      string
	Revision uint64
	// Reason is one of turnstate's Reason constants: ReasonNotSealed,
	// ReasonBadMAC, ReasonNotDecoded, ReasonDeleted (here) or
	// ReasonRolledBack (internal/stream).
	Reason string
	Err    error
}

func (e *IntegrityError) Error() string {
	msg := fmt.Sprintf("%s %s at revision %d does not verify (%s)", e.Kind, e.Key, e.Revision, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *IntegrityError) Unwrap() error { return e.Err }
