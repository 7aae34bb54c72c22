package natstest

import (
	"net"
	"sync"

	"github.com/nats-io/nats-server/v2/server"
)

// linkBuffer is how much each direction of a cut link holds before its
// writer blocks, as a TCP connection's socket buffers would: a partition
// does not stop a sender's first writes, only their delivery.
const linkBuffer = 1 << 20

// Link is an in-process connection to a server that a test can cut and
// heal, as a network partition would: while it is cut nothing passes in
// either direction and nothing is closed, so neither side notices until
// its own timeouts say so — writes are taken, up to a socket buffer's
// worth, and held; healed, what was held passes on. Connect with
// nats.InProcessServer(link).
type Link struct {
	srv  *server.Server
	mu   sync.Mutex
	cond *sync.Cond
	cut  bool
}

// NewLink returns a healed link to srv.
func NewLink(srv *server.Server) *Link {
	l := &Link{srv: srv}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// InProcessConn makes Link a nats.InProcessConnProvider: each connection
// gets a pipe whose ends are pumped to and from one in-process server
// connection, through the cut.
func (l *Link) InProcessConn() (net.Conn, error) {
	up, err := l.srv.InProcessConn()
	if err != nil {
		return nil, err
	}
	client, near := net.Pipe()
	l.pump(near, up)
	l.pump(up, near)
	return client, nil
}

// Cut stops everything on the link.
func (l *Link) Cut() {
	l.mu.Lock()
	l.cut = true
	l.mu.Unlock()
}

// Heal lets everything through again, what was held first.
func (l *Link) Heal() {
	l.mu.Lock()
	l.cut = false
	l.cond.Broadcast()
	l.mu.Unlock()
}

// pump moves what src says to dst: one goroutine reads into a buffer of
// at most linkBuffer bytes, another writes it out while the link is not
// cut. Once src ends, what it said still passes, then dst closes.
func (l *Link) pump(dst, src net.Conn) {
	var (
		held  []byte
		ended bool
	)
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			l.mu.Lock()
			for len(held) >= linkBuffer && !ended {
				l.cond.Wait()
			}
			held = append(held, buf[:n]...)
			if err != nil {
				ended = true
			}
			l.cond.Broadcast()
			l.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() {
		defer src.Close()
		defer dst.Close()
		for {
			l.mu.Lock()
			for (l.cut || len(held) == 0) && !(ended && len(held) == 0) {
				l.cond.Wait()
			}
			if len(held) == 0 {
				l.mu.Unlock()
				return
			}
			out := held
			held = nil
			l.cond.Broadcast()
			l.mu.Unlock()
			if _, err := dst.Write(out); err != nil {
				l.mu.Lock()
				ended = true
				l.cond.Broadcast()
				l.mu.Unlock()
				return
			}
		}
	}()
}
