package stream

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// ErrDataDirInUse is returned by StartEmbedded when another process (a
// processor or a replay) runs an embedded server on the same data
// directory. Two servers on one store would corrupt it.
var ErrDataDirInUse = errors.New("data directory in use by another turnguard process")

// LockFileName is the file in the data directory an embedded server holds
// an exclusive lock on while it runs.
const LockFileName = "turnguard.lock"

const (
	lockAttempts = 20
	lockRetry    = 50 * time.Millisecond
)

// lockDataDir takes the data directory's lock, without waiting. The lock
// goes with the process, so a crashed processor leaves none behind.
func lockDataDir(dir string) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	path := filepath.Join(dir, LockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("data directory lock: %w", err)
	}
	// A server of this process that has just shut down releases its lock
	// a moment later (see StartEmbedded), so a busy lock is retried
	// briefly before it counts as another process's.
	for attempt := 1; ; attempt++ {
		if err = tryLock(f); err == nil || attempt == lockAttempts {
			break
		}
		time.Sleep(lockRetry)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s is locked (%v)", ErrDataDirInUse, path, err)
	}
	return func() {
		_ = unlock(f)
		f.Close()
	}, nil
}
