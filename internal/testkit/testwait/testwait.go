// Package testwait holds the waits tests use instead of sleeps and
// hand-rolled deadline loops: CheckFor, in the style of nats-server's
// checkFor, and Eventually for a condition without an error to report.
//
// Only tests import it (internal/deps_test.go holds the module to that, for
// all of internal/testkit).
package testwait

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// ErrStop, wrapped in f's error, ends a Wait at once: what is awaited can
// no longer happen (a process exited).
var ErrStop = errors.New("stop waiting")

// Wait calls f until it returns nil, every interval, for at most total. It
// returns nil as soon as f does, else f's last error; an error wrapping
// ErrStop at once. f runs at least once, and once more after total has
// passed, so a slow last try still counts. Unlike CheckFor it may run
// outside the test's goroutine.
func Wait(total, interval time.Duration, f func() error) error {
	deadline := time.Now().Add(total)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if errors.Is(err, ErrStop) {
			return err
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("not within %s: %w", total, err)
		}
		time.Sleep(interval)
	}
}

// CheckFor calls f until it returns nil, every interval, and fails the test
// with f's last error if it has not after total, as nats-server's checkFor.
// f may itself fail the test (t.Fatal) to stop waiting on a state that
// cannot improve, as a process that exited.
func CheckFor(tb testing.TB, total, interval time.Duration, f func() error) {
	tb.Helper()
	if err := Wait(total, interval, f); err != nil {
		tb.Fatal(err)
	}
}

// Eventually is CheckFor for a condition: it fails the test with what if
// cond does not hold within total.
func Eventually(tb testing.TB, total, interval time.Duration, what string, cond func() bool) {
	tb.Helper()
	CheckFor(tb, total, interval, func() error {
		if cond() {
			return nil
		}
		return errors.New(what)
	})
}
