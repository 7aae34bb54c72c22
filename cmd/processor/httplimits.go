package main

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// httpLimits bound what one client of the HTTP endpoint can hold: the time
// it may take to send its headers and its body, the time the answer may
// take to go out, how long an idle keep-alive connection stays open, and
// how many connections are open at once.
type httpLimits struct {
	readHeaderTimeout time.Duration
	readTimeout       time.Duration
	writeTimeout      time.Duration
	idleTimeout       time.Duration
	maxConns          int
}

// Defaults of the HTTP limits. writeTimeout has none of its own: it
// follows --decision-timeout (see defaultWriteTimeout).
const (
	defaultHTTPReadHeaderTimeout = 10 * time.Second
	defaultHTTPReadTimeout       = 30 * time.Second
	defaultHTTPIdleTimeout       = 2 * time.Minute
	defaultHTTPMaxConns          = 1024
	// writeTimeoutMargin is what the write timeout leaves beyond the
	// decision timeout, so that a call whose decision times out still
	// gets its JSON-RPC error out (reading the body, dead-lettering).
	writeTimeoutMargin = 10 * time.Second
)

// defaultWriteTimeout is the write timeout when --http-write-timeout is 0.
func defaultWriteTimeout(decision time.Duration) time.Duration {
	return decision + writeTimeoutMargin
}

// check refuses limits that would leave a bound off or cut off answers
// the endpoint owes.
func (l httpLimits) check(decision time.Duration) error {
	switch {
	case l.readHeaderTimeout <= 0:
		return errors.New("--http-read-header-timeout must be positive")
	case l.readTimeout <= 0:
		return errors.New("--http-read-timeout must be positive")
	case l.idleTimeout <= 0:
		return errors.New("--http-idle-timeout must be positive")
	case l.maxConns <= 0:
		return errors.New("--http-max-conns must be positive")
	case l.writeTimeout <= decision:
		// net/http's write timeout runs from the end of the headers to the
		// end of the answer: shorter than the decision wait, it would cut
		// off the JSON-RPC error that tells the agent to apply its
		// on_decision_failure.
		return fmt.Errorf("--http-write-timeout %v must exceed --decision-timeout %v", l.writeTimeout, decision)
	}
	return nil
}

// limitListener accepts at most n connections at once: Accept waits for
// one to close before taking the next from the kernel's backlog, so that a
// flood of connections queues (and the kernel refuses it when the backlog
// is full) instead of each costing a goroutine and buffers.
type limitListener struct {
	net.Listener
	sem chan struct{}
	// done unblocks an Accept waiting for a slot when the listener closes.
	done      chan struct{}
	closeOnce sync.Once
}

func newLimitListener(l net.Listener, n int) *limitListener {
	return &limitListener{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// limitConn gives its slot back once, however often it is closed.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
