package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/testkit/testwait"
)

// cluster is a three-node JetStream cluster of nats-server processes on
// loopback, each node with its own store that survives a kill.
type cluster struct {
	t     *testing.T
	confs []string
	names []string
	urls  []string
	nodes []*proc
}

func natsCluster(t *testing.T, n int) *cluster {
	t.Helper()
	// A node's ports are chosen before any node starts (each must know the
	// others' routes), so one can be taken in between — by another test's
	// client, whose source port comes from the same range. Such a node
	// exits at once; the cluster then starts again on other ports.
	for attempt := 1; ; attempt++ {
		c, taken := startCluster(t, n)
		if taken == "" {
			c.awaitJetStream()
			return c
		}
		if attempt == 3 {
			t.Fatalf("three clusters in a row lost a port before binding it; the last: %s", taken)
		}
		t.Logf("a node's port was taken before it bound it (%s); starting the cluster on other ports", taken)
	}
}

// startCluster starts n nodes on fresh ports and waits until each says it
// listens on both. When one exits first because a port was taken, it stops
// the others and reports what that node said.
func startCluster(t *testing.T, n int) (*cluster, string) {
	t.Helper()
	c := &cluster{t: t}
	ports := distinctPorts(t, 2*n)
	clients, routes := ports[:n], ports[n:]
	dir := t.TempDir()
	for i := range n {
		var rs []string
		for j := range n {
			if j != i {
				rs = append(rs, fmt.Sprintf("nats-route://127.0.0.1:%d", routes[j]))
			}
		}
		name := fmt.Sprintf("n%d", i+1)
		conf := filepath.Join(dir, name+".conf")
		body := fmt.Sprintf(`server_name: %s
listen: 127.0.0.1:%d
jetstream { store_dir: %q }
cluster {
  name: turnguard-test
  listen: 127.0.0.1:%d
  routes: [%s]
}
`, name, clients[i], filepath.Join(dir, name), routes[i], strings.Join(rs, ", "))
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		c.confs = append(c.confs, conf)
		c.names = append(c.names, name)
		c.urls = append(c.urls, fmt.Sprintf("nats://127.0.0.1:%d", clients[i]))
		c.nodes = append(c.nodes, nil)
	}
	for i := range n {
		c.restart(i)
	}
	taken := ""
	testwait.CheckFor(t, 60*time.Second, 50*time.Millisecond, func() error {
		for i, p := range c.nodes {
			out := p.out.String()
			select {
			case <-p.done:
				if !strings.Contains(out, "address already in use") {
					t.Fatalf("node %s exited at start: %v\n%s", c.names[i], p.err, out)
				}
				taken = c.names[i] + lastLine(out)
				return nil
			default:
			}
			// Bound both: the routes are listened on after the clients.
			if !strings.Contains(out, "Listening for client connections") || !strings.Contains(out, "Listening for route connections") {
				return fmt.Errorf("node %s is not listening yet", c.names[i])
			}
		}
		return nil
	})
	if taken != "" {
		for _, p := range c.nodes {
			p.kill()
		}
	}
	return c, taken
}

// url is every node's client URL, for a client that must survive a node.
func (c *cluster) url() string { return strings.Join(c.urls, ",") }

func (c *cluster) restart(i int) {
	c.nodes[i] = start(c.t, "nats-server", "-c", c.confs[i])
}

// kill sends SIGKILL to node i.
func (c *cluster) kill(i int) { c.nodes[i].kill() }

// awaitJetStream waits until the cluster has a JetStream meta leader.
func (c *cluster) awaitJetStream() {
	c.t.Helper()
	nc := connect(c.t, c.url())
	js, err := jetstream.New(nc)
	if err != nil {
		c.t.Fatal(err)
	}
	testwait.CheckFor(c.t, 60*time.Second, 200*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if _, err := js.AccountInfo(ctx); err != nil {
			return fmt.Errorf("the cluster has no JetStream: %w", err)
		}
		// A meta leader answers before every peer has joined it; until
		// they have, an R3 stream finds "no suitable peers for placement"
		// and the processor started next would exit on it. A probe stream
		// placed on all three says they have.
		probe := jetstream.StreamConfig{Name: "TG_CLUSTER_PROBE", Subjects: []string{"tg.cluster.probe"}, Replicas: 3, Storage: jetstream.MemoryStorage}
		if _, err := js.CreateOrUpdateStream(ctx, probe); err != nil {
			return fmt.Errorf("the cluster cannot place an R3 stream yet: %w", err)
		}
		if err := js.DeleteStream(ctx, probe.Name); err != nil {
			return fmt.Errorf("delete the probe stream: %w", err)
		}
		return nil
	})
}

// leaderOf returns the index of the node leading stream name.
func (c *cluster) leaderOf(js jetstream.JetStream, name string) int {
	c.t.Helper()
	leader := -1
	testwait.CheckFor(c.t, 30*time.Second, 200*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s, err := js.Stream(ctx, name)
		var node string
		if err == nil && s.CachedInfo().Cluster != nil {
			node = s.CachedInfo().Cluster.Leader
		}
		if i := slices.Index(c.names, node); i >= 0 {
			leader = i
			return nil
		}
		return fmt.Errorf("stream %s has no leader: %v", name, errors.Join(err))
	})
	return leader
}
