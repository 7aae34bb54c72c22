package integration

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// bin holds the binaries TestMain builds: processor, replay, loadgen and
// nats-server.
var bin string

// sourcesNoted makes noteSources run once.
var sourcesNoted sync.Once

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// Before the build: -short is for a quick run of the unit tests.
		fmt.Println("integration tests skipped with -short")
		os.Exit(0)
	}
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "turnguard-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = dir
	for _, pkg := range []string{"github.com/turnguard/turnguard/cmd/processor", "github.com/turnguard/turnguard/cmd/replay", "github.com/turnguard/turnguard/cmd/loadgen", "github.com/turnguard/turnguard/cmd/turnguard", "github.com/nats-io/nats-server/v2"} {
		name := filepath.Base(pkg)
		if name == "v2" {
			name = "nats-server"
		}
		// A prebuilt nats-server (as .ci/run provides) saves a build.
		if name == "nats-server" {
			if pre := os.Getenv("TURNGUARD_NATS_SERVER_BIN"); pre != "" {
				if err := os.Symlink(pre, filepath.Join(dir, name)); err == nil {
					continue
				}
			}
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, name), pkg)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n", pkg, err)
			return 1
		}
	}
	defer removeImages()
	return m.Run()
}

// noteSources stats every source file of the module. The binaries are built
// by a child process, whose reads go test does not see; a stat by a test
// (not TestMain, which runs before go test starts listening) is recorded,
// so editing any source reruns these tests instead of reporting a cached
// result. start calls it once per test binary.
func noteSources(root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		switch filepath.Ext(path) {
		case ".go", ".yaml", ".json", ".tmpl", ".mod", ".sum":
			_, err := os.Stat(path)
			return err
		}
		return nil
	})
}
