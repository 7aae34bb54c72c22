package acs

import (
	"fmt"
	"time"
)

// CheckSkew refuses a request whose timestamp is further than window from
// at, the time turnguard received it (ACS §10.3: a Guardian MUST, signed
// or not): -32006 with data.skew_window_ms. A window of 0 checks nothing.
func CheckSkew(timestamp string, at time.Time, window time.Duration) *Error {
	if window <= 0 {
		return nil
	}
	ts, err := time.Parse(time.RFC3339Nano, timestamp)
	if err == nil && ts.Sub(at).Abs() <= window {
		return nil
	}
	return &Error{Code: CodeTimestampOutOfWindow, Reason: ReasonSkew, SkewWindowMS: window.Milliseconds(),
		Message: fmt.Sprintf("timestamp %s is more than %s from the time turnguard received the envelope (%s)", timestamp, window, at.UTC().Format(time.RFC3339Nano))}
}
