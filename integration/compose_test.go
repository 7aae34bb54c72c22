package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// composeRig is a docker-compose project of the repository's
// docker-compose.yml, on ports of its own.
type composeRig struct {
	t       *testing.T
	project string
	env     []string
	ports   map[string]int
	dir     string
}

// compose runs docker-compose on the project and returns its output.
func (c *composeRig) compose(within time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker-compose", append([]string{"-p", c.project, "-f", filepath.Join("..", "docker-compose.yml")}, args...)...)
	cmd.Env = append(os.Environ(), c.env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// mustCompose is compose failing the test on an error.
func (c *composeRig) mustCompose(within time.Duration, args ...string) string {
	c.t.Helper()
	out, err := c.compose(within, args...)
	if err != nil {
		c.t.Fatalf("docker-compose %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// container is the name docker-compose v1 gives a service's container.
func (c *composeRig) container(service string) string { return c.project + "_" + service + "_1" }

// health is a container's health status (healthy, unhealthy, starting).
func (c *composeRig) health(service string) string {
	out, err := exec.Command("docker", "inspect", "-f", "{{.State.Health.Status}}", c.container(service)).Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

func (c *composeRig) awaitHealthy(within time.Duration, services ...string) {
	c.t.Helper()
	for _, s := range services {
		poll(c.t, within, s+" healthy", func() bool { return c.health(s) == "healthy" })
	}
}

func (c *composeRig) natsURL() string {
	return fmt.Sprintf("nats://127.0.0.1:%d,nats://127.0.0.1:%d,nats://127.0.0.1:%d", c.ports["NATS1"], c.ports["NATS2"], c.ports["NATS3"])
}

// TestComposeCluster runs docker-compose.yml as an operator would — images
// built from this repository, three NATS nodes, two processors — then
// plays the README's taint session (the shell call is denied, the taint
// alert is raised) and runs loadgen against the cluster, whose
// reconciliation must find every envelope decided exactly once, as
// expected — through the faults it makes under the load: a NATS node
// killed and restarted, a processor killed and restarted, the other cut
// off the network and reconnected.
func TestComposeCluster(t *testing.T) {
	requireDocker(t)
	if _, err := exec.LookPath("docker-compose"); err != nil {
		if os.Getenv("TURNGUARD_REQUIRE_DOCKER") == "1" {
			t.Fatal("docker-compose is not installed (TURNGUARD_REQUIRE_DOCKER=1)")
		}
		t.Skip("docker-compose is not installed")
	}
	id := fmt.Sprintf("%d", time.Now().UnixNano()%1_000_000_000)
	images := buildImages(t)
	c := &composeRig{t: t, project: "tgcompose" + id, dir: t.TempDir(), ports: map[string]int{}}
	c.env = []string{"TURNGUARD_IMAGE=" + images.turnguard, "TURNGUARD_NATS_IMAGE=" + images.nats,
		// loadgen stamps its envelopes with synthetic times.
		"TURNGUARD_SKEW_WINDOW=0"}
	names := []string{"NATS1", "NATS2", "NATS3", "HTTP1", "HTTP2", "METRICS1", "METRICS2"}
	for i, port := range distinctPorts(t, len(names)) {
		c.ports[names[i]] = port
		c.env = append(c.env, fmt.Sprintf("TURNGUARD_%s_PORT=%d", names[i], port))
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := c.compose(time.Minute, "logs", "--no-color", "--tail", "60")
			t.Logf("docker-compose logs:\n%s", out)
			// The whole logs, for a failure to be read after the project
			// is gone.
			if path := os.Getenv("TURNGUARD_COMPOSE_LOGS"); path != "" {
				all, _ := c.compose(time.Minute, "logs", "--no-color")
				if err := os.WriteFile(path, []byte(all), 0o644); err != nil {
					t.Log(err)
				}
			}
		}
		if out, err := c.compose(3*time.Minute, "down", "-v", "--remove-orphans"); err != nil {
			t.Errorf("docker-compose down: %v\n%s", err, out)
		}
	})
	c.mustCompose(5*time.Minute, "up", "-d")
	c.awaitHealthy(3*time.Minute, "nats1", "nats2", "nats3", "processor1", "processor2")

	// What the init service laid out, for the host's clients.
	docker(t, time.Minute, "cp", c.container("init")+":/etc/turnguard/.", c.dir)
	creds := filepath.Join(c.dir, "creds")

	// The README's taint session, through the demo profile: the shell call
	// after the untrusted web page is denied, and the taint alert raised.
	security := connectAs(t, c.natsURL(), filepath.Join(creds, "security.creds"))
	alerts, err := security.SubscribeSync("acs.alerts.default.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := security.Flush(); err != nil {
		t.Fatal(err)
	}
	demo := c.mustCompose(3*time.Minute, "--profile", "demo", "run", "--rm", "demo")
	// Every step decided (the client's posture stands in for a missing
	// decision, and says so), the shell call denied.
	if strings.Contains(demo, "no decision") || strings.Contains(demo, "error") || !strings.Contains(demo, "toolCallRequest  deny") {
		t.Fatalf("the demo's taint session is not allow, …, deny:\n%s", demo)
	}
	t.Logf("demo:\n%s", demo)

	// Issue 23's findings 1 and 2 on the cluster: nothing an agent or the
	// security role names as a reply or deliver subject is stored on
	// turnguard's subjects.
	probeReplies(t, withTimeout(t, 2*time.Minute), connectAs(t, c.natsURL(), filepath.Join(creds, "agent.creds")), "default",
		security, connectAs(t, c.natsURL(), filepath.Join(creds, "processor.creds")))
	if m, err := alerts.NextMsg(30 * time.Second); err != nil {
		t.Fatalf("no taint alert: %v", err)
	} else {
		t.Logf("alert %s (%s)", m.Header.Get("Acs-Rule-Id"), m.Subject)
	}

	// The HTTP endpoint answers on the published port over TLS.
	checkHTTPS(t, c, c.ports["HTTP1"])

	// Load, and the faults under it.
	load := start(t, "loadgen", "run", "--nats-url", c.natsURL(), "--nats-creds", filepath.Join(creds, "admin.creds"),
		// Below the cluster's capacity (about 3,400/s on 2 cores), so the
		// faults, not a backlog, are what the run goes through.
		"--duration", "45s", "--rate", "1000", "--baseline=false", "--json")
	loadStart := time.Now()
	step := func(at time.Duration, what string, f func()) {
		time.Sleep(time.Until(loadStart.Add(at)))
		t.Logf("t+%s: %s", at, what)
		f()
	}
	// TURNGUARD_COMPOSE_FAULTS=0 runs the load without them, to tell a
	// fault's effect from the cluster's.
	if os.Getenv("TURNGUARD_COMPOSE_FAULTS") != "0" {
		c.faults(step)
	} else {
		t.Log("TURNGUARD_COMPOSE_FAULTS=0: the load runs without faults")
	}
	if code := load.wait(t, 5*time.Minute); code != 0 {
		t.Fatalf("loadgen: exit %d\n%s", code, load.out)
	}
	var report struct {
		EnvelopesPublished int     `json:"envelopes_published"`
		DecidedPerS        float64 `json:"decided_per_s"`
		Latency            struct {
			P99 float64 `json:"p99_ms"`
		} `json:"decision_latency"`
		Reconcile struct {
			OK         bool `json:"ok"`
			Duplicated int  `json:"decisions_duplicated"`
			Wrong      int  `json:"decisions_wrong"`
			Missing    int  `json:"decisions_missing"`
		} `json:"reconcile"`
	}
	if err := json.Unmarshal(bytes.TrimSpace([]byte(load.stdout.String())), &report); err != nil {
		t.Fatalf("loadgen --json: %v\n%s", err, load.out)
	}
	if !report.Reconcile.OK || report.Reconcile.Duplicated+report.Reconcile.Wrong+report.Reconcile.Missing > 0 {
		t.Fatalf("reconciliation failed: %+v\n%s", report.Reconcile, load.out)
	}
	t.Logf("loadgen: %d envelopes, %.0f decided/s, p99 %.0f ms, reconciled exactly", report.EnvelopesPublished, report.DecidedPerS, report.Latency.P99)
	// The cut-off instance is back and ready.
	c.awaitHealthy(2*time.Minute, "processor1", "processor2", "nats2")
}

// checkHTTPS asks the endpoint's /readyz over TLS, trusting the
// certificate init made.
func checkHTTPS(t *testing.T, c *composeRig, port int) {
	t.Helper()
	pem, err := os.ReadFile(filepath.Join(c.dir, "http-tls.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("http-tls.pem holds no certificate")
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	url := fmt.Sprintf("https://127.0.0.1:%d/readyz", port)
	poll(t, time.Minute, url+" 200", func() bool {
		resp, err := client.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// sampleAt reads one unlabelled sample from a Prometheus endpoint (-1: not
// there, or the endpoint did not answer: the instance may be restarting).
func sampleAt(url, name string) float64 {
	resp, err := http.Get(url)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil {
		return -1
	}
	for _, line := range strings.Split(body.String(), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err == nil {
				return f
			}
		}
	}
	return -1
}

// faults kills a NATS node, kills a processor and cuts the other off the
// network, each at its time into the load (step).
func (c *composeRig) faults(step func(time.Duration, string, func())) {
	t := c.t
	step(6*time.Second, "kill nats2", func() { docker(t, time.Minute, "kill", c.container("nats2")) })
	step(14*time.Second, "start nats2 again", func() { docker(t, time.Minute, "start", c.container("nats2")) })
	step(18*time.Second, "kill processor1", func() { docker(t, time.Minute, "kill", c.container("processor1")) })
	step(26*time.Second, "start processor1 again", func() { docker(t, time.Minute, "start", c.container("processor1")) })
	network := c.project + "_default"
	step(30*time.Second, "cut processor2 off the network", func() { docker(t, time.Minute, "network", "disconnect", network, c.container("processor2")) })
	step(31*time.Second, "processor1 takes processor2's partitions", func() {
		metrics := fmt.Sprintf("http://127.0.0.1:%d/metrics", c.ports["METRICS1"])
		// processor2's record outlives it by --member-ttl (5 s), plus the
		// server's expiry sweep, a tick and the workers' start: 8 s was met
		// in most CI runs and missed by about a second in one (all 16 owned
		// 9.5 s after the cut, with the takeover's batches under way).
		poll(t, 12*time.Second, "processor1 owning all 16 partitions", func() bool {
			return sampleAt(metrics, "turnguard_partitions_owned") == 16
		})
	})
	step(40*time.Second, "reconnect processor2", func() {
		docker(t, time.Minute, "network", "connect", "--alias", "processor2", network, c.container("processor2"))
	})
}
