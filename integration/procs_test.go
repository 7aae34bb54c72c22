package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/testwait"
	"github.com/turnguard/turnguard/pkg/client"
)

// proc is a child process whose output is kept for failure messages.
type proc struct {
	cmd *exec.Cmd
	// out is stdout and stderr interleaved; stdout alone, for output a
	// test parses.
	out, stdout *syncBuffer
	done        chan struct{}
	err         error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func start(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	sourcesNoted.Do(func() {
		if err := noteSources(".."); err != nil {
			t.Fatal(err)
		}
	})
	p := &proc{cmd: exec.Command(filepath.Join(bin, name), args...), out: &syncBuffer{}, stdout: &syncBuffer{}, done: make(chan struct{})}
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

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// natsServer starts a single JetStream nats-server process on loopback.
func natsServer(t *testing.T, storeDir string) (url string, p *proc) {
	t.Helper()
	port := freePort(t)
	p = start(t, "nats-server", "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-js", "-sd", storeDir)
	url = fmt.Sprintf("nats://127.0.0.1:%d", port)
	connect(t, url).Close()
	return url, p
}

// newJetStream is jetstream.New for a test's setup: an error fails t.
func newJetStream(t testing.TB, nc *nats.Conn, opts ...jetstream.JetStreamOpt) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return js
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
