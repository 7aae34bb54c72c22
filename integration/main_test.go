// Package integration runs turnguard as its users do: the processor binary
// against real nats-server processes (built from the module versions pinned
// in go.mod), or with its embedded server on a real TCP port.
package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// bin holds the binaries TestMain builds: processor, replay, loadgen and
// nats-server.
var bin string

func TestMain(m *testing.M) {
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
	for _, pkg := range []string{"github.com/turnguard/turnguard/cmd/processor", "github.com/turnguard/turnguard/cmd/replay", "github.com/turnguard/turnguard/cmd/loadgen", "github.com/nats-io/nats-server/v2"} {
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
	return m.Run()
}
