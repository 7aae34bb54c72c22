package testwait

import (
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
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

// TestOnlyTestsImport fails if a non-test file of the module imports this
// package: its waits belong in tests, never in the product.
func TestOnlyTestsImport(t *testing.T) {
	const self = "github.com/turnguard/turnguard/internal/testkit/testwait"
	root := filepath.Join("..", "..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == self {
				t.Errorf("%s imports %s; only tests may", path, self)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
