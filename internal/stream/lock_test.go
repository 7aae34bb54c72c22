package stream

import (
	"errors"
	"testing"
)

func TestDataDirLock(t *testing.T) {
	dir := t.TempDir()
	release, err := lockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockDataDir(dir); !errors.Is(err, ErrDataDirInUse) {
		t.Fatalf("second lock: %v, want ErrDataDirInUse", err)
	}
	release()
	again, err := lockDataDir(dir)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	again()
}
