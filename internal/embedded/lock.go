package embedded

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ErrDataDirInUse is returned by Start when another process (a
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
	// a moment later (see Start), so a busy lock is retried
	// briefly before it counts as another process's.
	for attempt := 1; ; attempt++ {
		if err = tryLock(f); err == nil || attempt == lockAttempts {
			break
		}
		time.Sleep(lockRetry)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s is locked by %s (%v)", ErrDataDirInUse, path, lockHolder(path), err)
	}
	// The holder's PID in the file is what the refusal above names: the
	// lock itself says only that someone holds it. Best effort: a lock
	// without it still locks.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() {
		_ = unlock(f)
		f.Close()
	}, nil
}

// lockHolder names the process holding a data directory's lock, from the
// PID it wrote into the lock file. Where the file cannot be read while
// locked (Windows locks are mandatory) or a turnguard from before PIDs
// were written holds it, it says so.
func lockHolder(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "another process (its PID is unreadable: " + err.Error() + ")"
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return "another process (no PID in the lock file)"
	}
	return fmt.Sprintf("process %d", pid)
}
