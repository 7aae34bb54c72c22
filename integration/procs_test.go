package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/turnguard/turnguard/internal/testkit/syncbuf"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
	"github.com/turnguard/turnguard/pkg/client"
)

// proc is a child process whose output is kept for failure messages.
type proc struct {
	cmd *exec.Cmd
	// out is stdout and stderr interleaved; stdout alone, for output a
	// test parses.
	out, stdout *syncbuf.Buffer
	done        chan struct{}
	err         error
}

func start(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	sourcesNoted.Do(func() {
		if err := noteSources(".."); err != nil {
			t.Fatal(err)
		}
	})
	p := &proc{cmd: exec.Command(filepath.Join(bin, name), args...), out: &syncbuf.Buffer{}, stdout: &syncbuf.Buffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = io.MultiWriter(p.out, p.stdout), p.out
	// Relative defaults (./data) land in the test's own directory, never
	// in the source tree.
	p.cmd.Dir = t.TempDir()
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.out)
		}
	})
	return p
}

// kill sends SIGKILL: no cleanup, no flush, as a crash.
func (p *proc) kill() {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if p.err != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", p.err, p.out)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("no exit within 20s of SIGTERM\n%s", p.out)
	}
}

// wait waits for the process to exit on its own and returns its exit code.
func (p *proc) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(within):
		t.Fatalf("still running after %s\n%s", within, p.out)
		return -1
	}
}

// distinctPorts returns n loopback ports that were free a moment ago, all
// different: each is held until all are chosen, since one at a time the
// kernel can hand out the same port twice and the second server or
// container then cannot bind it. Another process may still take one before
// the test's does. Only the cluster, the compose test and the README's
// walkthrough use it, whose servers must know their ports before they
// start (a cluster node's routes, and the same ports again after a kill);
// everything else listens on a port its server picks and reports
// (natsServer, processorAddrs).
func distinctPorts(t *testing.T, n int) []int {
	t.Helper()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports
}

// natsServer starts a single JetStream nats-server process on loopback.
func natsServer(t *testing.T, storeDir string) (url string, p *proc) {
	t.Helper()
	url, p = natsServerWith(t, "-a", "127.0.0.1", "-js", "-sd", storeDir)
	connect(t, url).Close()
	return url, p
}

// natsServerWith starts a nats-server process with args on a port of its
// own choosing (-p -1) and returns its client URL, from the ports file the
// server writes once it listens.
func natsServerWith(t *testing.T, args ...string) (url string, p *proc) {
	t.Helper()
	dir := t.TempDir()
	p = start(t, "nats-server", append(args, "-p", "-1", "--ports_file_dir", dir)...)
	testwait.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		select {
		case <-p.done:
			t.Fatalf("nats-server exited: %v\n%s", p.err, p.out)
		default:
		}
		ports, err := filepath.Glob(filepath.Join(dir, "*.ports"))
		if err != nil || len(ports) == 0 {
			return fmt.Errorf("no ports file from nats-server (%v)\n%s", err, p.out)
		}
		raw, err := os.ReadFile(ports[0])
		if err != nil {
			return err
		}
		var pf struct {
			Nats []string `json:"nats"`
		}
		if err := json.Unmarshal(raw, &pf); err != nil || len(pf.Nats) == 0 {
			return fmt.Errorf("ports file %s: %q (%v)", ports[0], raw, err)
		}
		url = pf.Nats[0]
		return nil
	})
	return url, p
}

// The listeners a processor reports in its JSON log when started on port
// 0: its embedded NATS server (--listen), its ACS endpoint (--http) and its
// metrics (--metrics).
const (
	natsListener    = "embedded NATS JetStream server started"
	httpListener    = "ACS JSON-RPC endpoint listening"
	metricsListener = "metrics and health listening"
)

// addrOf waits for p to log the listener named by message and returns its
// host:port.
func addrOf(t *testing.T, p *proc, message string) string {
	t.Helper()
	var addr string
	testwait.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		for line := range strings.SplitSeq(p.out.String(), "\n") {
			var l struct {
				Message   string `json:"message"`
				ClientURL string `json:"client_url"`
				URL       string `json:"url"`
				Addr      string `json:"addr"`
			}
			if json.Unmarshal([]byte(line), &l) != nil || !strings.HasPrefix(l.Message, message) {
				continue
			}
			switch message {
			case natsListener:
				addr = strings.TrimPrefix(l.ClientURL, "nats://")
			case httpListener:
				u, err := url.Parse(l.URL)
				if err != nil {
					return err
				}
				addr = u.Host
			default:
				addr = l.Addr
			}
			return nil
		}
		return fmt.Errorf("no %q in the log\n%s", message, p.out)
	})
	return addr
}

// pinned returns args with the value of flag replaced by addr: a restart
// on the address a first start on port 0 reported, for clients that must
// find the processor where it was.
func pinned(args []string, flag, addr string) []string {
	out := slices.Clone(args)
	for i := 0; i+1 < len(out); i++ {
		if out[i] == flag {
			out[i+1] = addr
		}
	}
	return out
}

// connect retries until the server at url answers.
func connect(t *testing.T, url string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	var nc *nats.Conn
	testwait.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		var err error
		if nc, err = nats.Connect(url, append([]nats.Option{nats.Timeout(time.Second)}, opts...)...); err != nil {
			return fmt.Errorf("connect %s: %w", url, err)
		}
		return nil
	})
	t.Cleanup(nc.Close)
	return nc
}

// connectAs connects with a credentials file (waiting for the processor
// to write it), with the inbox prefix the credential is confined to.
func connectAs(t *testing.T, url, creds string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	poll(t, 20*time.Second, "credentials "+creds, func() bool {
		_, err := os.Stat(creds)
		return err == nil
	})
	co, err := client.CredentialsOptions(creds)
	if err != nil {
		t.Fatal(err)
	}
	return connect(t, url, append(co, opts...)...)
}

func withTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
