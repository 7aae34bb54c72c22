package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// This file holds what tests running Docker share: whether an engine
// answers, and running a command with a deadline.

// requireDockerEnv, set to 1, turns requireDocker's skip into a failure
// (.ci/run sets it: there Docker is part of the test environment).
const requireDockerEnv = "TURNGUARD_REQUIRE_DOCKER"

// dockerInfo runs `docker info` once per test binary.
var dockerInfo = sync.OnceValue(func() error {
	_, stderr, err := runCommand(30*time.Second, "", nil, "docker", "info", "--format", "{{.ServerVersion}}")
	if err != nil {
		return fmt.Errorf("docker info: %w%s", err, lastLine(stderr))
	}
	return nil
})

// dockerAvailable returns nil when a Docker engine answers `docker info`
// within 30 s, else why not (no docker CLI, no engine, no permission).
func dockerAvailable() error { return dockerInfo() }

// requireDocker skips t when no Docker engine answers, saying why, or fails
// it instead when TURNGUARD_REQUIRE_DOCKER=1.
func requireDocker(t testing.TB) {
	t.Helper()
	err := dockerAvailable()
	if err == nil {
		return
	}
	if os.Getenv(requireDockerEnv) == "1" {
		t.Fatalf("no Docker engine, and %s=1: %v", requireDockerEnv, err)
	}
	t.Skipf("no Docker engine (set %s=1 to fail instead): %v", requireDockerEnv, err)
}

// runCommand runs name with args in dir ("": the current directory), its
// environment the test's plus env ("KEY=value"), and kills it — its whole
// process group, so that what it started (go build, docker build) dies
// too — once timeout has passed. It returns stdout and stderr; err is nil
// when it exited 0, and says so when it was killed for the timeout.
func runCommand(timeout time.Duration, dir string, env []string, name string, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	ownProcessGroup(cmd)
	// Children that outlive a kill could hold the pipes open; stop
	// waiting for them a little later.
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("%s: killed after %s: %w", name, timeout, err)
	}
	return out.String(), errOut.String(), err
}

// docker runs the docker CLI with args, bounded by timeout, and returns its
// stdout without surrounding white space; a failure fails t, with stderr.
func docker(t testing.TB, timeout time.Duration, args ...string) string {
	t.Helper()
	stdout, stderr, err := runCommand(timeout, "", nil, "docker", args...)
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return strings.TrimSpace(stdout)
}

// lastLine is ": " and the last non-empty line of s, or "" for none.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return ": " + l
	}
	return ""
}
