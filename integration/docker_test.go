package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/testkit/testwait"
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

// runContainer starts image detached (docker run -d) with args and returns
// the container's name, unique to the test run; the container and its
// anonymous volumes are removed at the end, its last log lines logged if
// the test failed.
func runContainer(t testing.TB, image string, args ...string) string {
	t.Helper()
	name := fmt.Sprintf("turnguard-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() {
		if t.Failed() {
			if logs, stderr, _ := runCommand(time.Minute, "", nil, "docker", "logs", "--tail", "40", name); logs+stderr != "" {
				t.Logf("%s (%s) logs:\n%s%s", name, image, logs, stderr)
			}
		}
		if _, stderr, err := runCommand(time.Minute, "", nil, "docker", "rm", "-f", "-v", name); err != nil {
			t.Logf("docker rm %s: %v\n%s", name, err, stderr)
		}
	})
	docker(t, time.Minute, append([]string{"run", "-d", "--name", name, image}, args...)...)
	return name
}

// awaitHealthy waits until Docker reports the container (name or id)
// healthy, and fails t if it turns unhealthy, stops, or is not healthy
// within the time. The container's image must have a HEALTHCHECK.
func awaitHealthy(t testing.TB, container string, within time.Duration) {
	t.Helper()
	began := time.Now()
	err := testwait.Wait(within, 500*time.Millisecond, func() error {
		state := docker(t, time.Minute, "inspect", "--format", "{{.State.Status}} {{.State.Health.Status}}", container)
		switch state {
		case "running healthy":
			return nil
		case "running starting":
			return fmt.Errorf("%s: %s", container, state)
		}
		t.Fatalf("%s: %s; health log: %s", container, state, healthLog(t, container))
		return nil
	})
	if err != nil {
		t.Fatalf("healthy: %v; health log: %s", err, healthLog(t, container))
	}
	t.Logf("%s healthy after %s", container, time.Since(began).Round(100*time.Millisecond))
}

// healthLog is what the container's last health checks said.
func healthLog(t testing.TB, container string) string {
	return docker(t, time.Minute, "inspect", "--format", "{{json .State.Health.Log}}", container)
}

// lastLine is ": " and the last non-empty line of s, or "" for none.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return ": " + l
	}
	return ""
}

// testImages are the images scripts/build-images.sh built for this test
// binary, under tags of its own.
type testImages struct {
	turnguard, nats, version string
}

// images builds the test images once per test binary; removeImages, run
// by TestMain after the tests, removes them.
var images struct {
	once  sync.Once
	built testImages
	err   error
}

// buildImages returns the images of this test binary, building them with
// scripts/build-images.sh on first use (30 s warm, a few minutes cold).
func buildImages(t testing.TB) testImages {
	t.Helper()
	images.once.Do(func() {
		root, err := filepath.Abs("..")
		if err != nil {
			images.err = err
			return
		}
		if err := noteImageSources(root); err != nil {
			images.err = err
			return
		}
		run := fmt.Sprintf("test-%d-%d", os.Getpid(), time.Now().UnixNano())
		images.built = testImages{turnguard: "turnguard-test/turnguard:" + run, nats: "turnguard-test/nats:" + run, version: "v0.0.0-" + run}
		began := time.Now()
		stdout, stderr, err := runCommand(6*time.Minute, root,
			[]string{"TURNGUARD_IMAGE=" + images.built.turnguard, "TURNGUARD_NATS_IMAGE=" + images.built.nats, "TURNGUARD_VERSION=" + images.built.version},
			"scripts/build-images.sh")
		if err != nil {
			images.err = fmt.Errorf("scripts/build-images.sh: %w\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
			return
		}
		fmt.Fprintf(os.Stderr, "scripts/build-images.sh took %s:\n%s\n", time.Since(began).Round(time.Second), lastLines(stdout, 2))
	})
	if images.err != nil {
		t.Fatal(images.err)
	}
	return images.built
}

// removeImages removes the images buildImages built, if any (also after a
// half-done build: a tag that does not exist is no error worth reporting).
func removeImages() {
	if images.built.turnguard == "" {
		return
	}
	if _, stderr, err := runCommand(time.Minute, "", nil, "docker", "rmi", "-f", images.built.turnguard, images.built.nats); err != nil {
		fmt.Fprintf(os.Stderr, "docker rmi: %v\n%s", err, stderr)
	}
}

// noteImageSources records the images' inputs for go test's cache: the Go
// sources and the files that build the images, which the script, not this
// process, reads.
func noteImageSources(root string) error {
	var err error
	sourcesNoted.Do(func() { err = noteSources(root) })
	if err != nil {
		return err
	}
	for _, f := range []string{"Dockerfile", ".dockerignore", "scripts/build-images.sh", "docker-compose.yml", "deploy/compose/nats.conf"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			return err
		}
	}
	return nil
}
