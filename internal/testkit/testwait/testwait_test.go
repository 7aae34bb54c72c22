package testwait

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestWait(t *testing.T) {
	tries := 0
	err := Wait(5*time.Second, time.Millisecond, func() error {
		if tries++; tries < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || tries != 3 {
		t.Fatalf("Wait: %v after %d tries, want nil after 3", err, tries)
	}
}

func TestWaitReturnsTheLastError(t *testing.T) {
	tries := 0
	last := errors.New("last")
	err := Wait(20*time.Millisecond, time.Millisecond, func() error {
		tries++
		return last
	})
	if !errors.Is(err, last) || tries < 2 {
		t.Fatalf("Wait: %v after %d tries, want %v after at least 2", err, tries, last)
	}
}

func TestWaitStopsAtErrStop(t *testing.T) {
	tries := 0
	err := Wait(time.Minute, time.Millisecond, func() error {
		tries++
		return fmt.Errorf("the process exited: %w", ErrStop)
	})
	if !errors.Is(err, ErrStop) || tries != 1 {
		t.Fatalf("Wait: %v after %d tries, want ErrStop after 1", err, tries)
	}
}
