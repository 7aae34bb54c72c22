package replay

import (
	"io"
	"time"
)

// SetHookWindow makes the sweep's ACS_HOOKS window tiny, so that a test
// with a few messages drives its restarts, evictions and message gets; it
// returns a function restoring the sizes.
func SetHookWindow(size int, advance uint64, restart int) (restore func()) {
	s, a, r := windowSize, maxAdvance, restartMin
	windowSize, maxAdvance, restartMin = size, advance, restart
	return func() { windowSize, maxAdvance, restartMin = s, a, r }
}

// NewProgressAt is a progress line written to w as if it were a terminal,
// reading the time from now.
func NewProgressAt(w io.Writer, from, to uint64, now func() time.Time) *Progress {
	p := NewProgress(w, from, to)
	p.on, p.now = true, now
	return p
}

// NewCountProgressAt is NewCountProgress written to w as if it were a
// terminal, reading the time from now.
func NewCountProgressAt(w io.Writer, total uint64, unit string, now func() time.Time) *Progress {
	p := NewCountProgress(w, total, unit)
	p.on, p.now = true, now
	return p
}
