package natstest

import (
	"net"
	"sync"

	"github.com/nats-io/nats-server/v2/server"
)

// Link is an in-process connection to a server that a test can cut and
// heal, as a network partition would: while it is cut nothing passes in
// either direction and nothing is closed, so neither side notices until
// its own timeouts say so; healed, what was held passes on. Connect with
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
	go l.pump(near, up)
	go l.pump(up, near)
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

func (l *Link) pump(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			l.mu.Lock()
			for l.cut {
				l.cond.Wait()
			}
			l.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
