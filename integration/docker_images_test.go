package integration

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDockerImages builds both images with scripts/build-images.sh, under
// tags of this run's own, and runs them: the processor image reports the
// version it was built as and becomes healthy with its embedded NATS; the
// nats image reports the version go.mod pins and, with -js, becomes
// healthy. Containers and images are removed at the end.
func TestDockerImages(t *testing.T) {
	requireDocker(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	built := buildImages(t)
	image, natsImage, version := built.turnguard, built.nats, built.version

	natsVersion, stderr, err := runCommand(time.Minute, root, nil, "go", "list", "-m", "-f", "{{.Version}}", "github.com/nats-io/nats-server/v2")
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr)
	}
	natsVersion = strings.TrimSpace(natsVersion)

	if got, want := docker(t, time.Minute, "run", "--rm", image, "version"), "processor "+version+" "; !strings.HasPrefix(got, want) {
		t.Errorf("processor version = %q, want it to begin %q", got, want)
	}
	if got, want := docker(t, time.Minute, "run", "--rm", natsImage, "--version"), "nats-server: "+natsVersion; got != want {
		t.Errorf("nats-server --version = %q, want %q", got, want)
	}
	for _, c := range []struct{ image, format, want string }{
		{image, "{{.Config.User}}", "65532:65532"},
		{natsImage, "{{.Config.User}}", "65532:65532"},
		{image, `{{index .Config.Labels "org.opencontainers.image.version"}}`, version},
		{natsImage, `{{index .Config.Labels "org.opencontainers.image.version"}}`, natsVersion},
	} {
		if got := docker(t, time.Minute, "image", "inspect", "--format", c.format, c.image); got != c.want {
			t.Errorf("%s: %s = %q, want %q", c.image, c.format, got, c.want)
		}
	}
	rev := docker(t, time.Minute, "image", "inspect", "--format", `{{index .Config.Labels "org.opencontainers.image.revision"}}`, image)
	if !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(rev) {
		t.Errorf("revision label %q, want a commit id", rev)
	}

	// Both servers start together; each must become healthy on its own.
	processor := runContainer(t, image)
	nats := runContainer(t, natsImage, "-js")
	awaitHealthy(t, processor, 90*time.Second)
	awaitHealthy(t, nats, 60*time.Second)
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestDockerfileNATSVersion keeps the Dockerfile's default NATS_VERSION
// (the label of the registry path's nats image) the one go.mod pins.
func TestDockerfileNATSVersion(t *testing.T) {
	dockerfile, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	pinned := regexp.MustCompile(`(?m)^\s*github\.com/nats-io/nats-server/v2 (\S+)`).FindSubmatch(gomod)
	if pinned == nil {
		t.Fatal("go.mod requires no github.com/nats-io/nats-server/v2")
	}
	defaults := regexp.MustCompile(`(?m)^ARG NATS_VERSION=(\S+)$`).FindAllSubmatch(dockerfile, -1)
	if len(defaults) == 0 {
		t.Fatal("Dockerfile: no ARG NATS_VERSION=")
	}
	for _, d := range defaults {
		if string(d[1]) != string(pinned[1]) {
			t.Errorf("Dockerfile: ARG NATS_VERSION=%s, go.mod pins %s", d[1], pinned[1])
		}
	}
}
