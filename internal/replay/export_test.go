package replay

// SetHookWindow makes the sweep's ACS_HOOKS window tiny, so that a test
// with a few messages drives its restarts, evictions and message gets; it
// returns a function restoring the sizes.
func SetHookWindow(size int, advance uint64, restart int) (restore func()) {
	s, a, r := windowSize, maxAdvance, restartMin
	windowSize, maxAdvance, restartMin = size, advance, restart
	return func() { windowSize, maxAdvance, restartMin = s, a, r }
}
