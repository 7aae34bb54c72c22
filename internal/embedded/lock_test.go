package embedded

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
)

func TestDataDirLock(t *testing.T) {
	dir := t.TempDir()
	release, err := lockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = lockDataDir(dir)
	if !errors.Is(err, ErrDataDirInUse) {
		t.Fatalf("second lock: %v, want ErrDataDirInUse", err)
	}
	// The refusal names the holder, so that the user knows which process
	// to stop (flock is per open file, so this process's second open is
	// refused like another process's).
	if runtime.GOOS != "windows" && !strings.Contains(err.Error(), fmt.Sprintf("process %d", os.Getpid())) {
		t.Fatalf("second lock: %v, want the holder's PID %d", err, os.Getpid())
	}
	release()
	again, err := lockDataDir(dir)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	again()
}
