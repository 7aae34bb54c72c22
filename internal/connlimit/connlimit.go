// Package connlimit bounds the connections of an HTTP listener so that
// connections without a credential cannot starve the callers that have
// one. A connection is unproven from its accept until a request on it
// authenticates (the handler calls Authenticated); until then it
//
//   - has a short deadline for everything it reads — the TLS handshake, a
//     request's headers, the wait for the next request — instead of the
//     server's longer ones,
//   - counts against a budget of its own (MaxUnproven): when the budget is
//     full, the oldest unproven connection is closed to make room, so a
//     flood of idle connections cannot keep a new one out,
//   - counts against its source address's share: at most MaxPerSource
//     unproven connections of one address are open (a new one closes that
//     address's oldest), and an address closes at most MaxPerSource of
//     other addresses' connections per UnprovenTimeout to make room for
//     its own (beyond that, its new connections find room or are closed
//     at once), so that one address can neither take the whole budget nor
//     churn through it, closing others' connections before they can
//     present a credential.
//
// Authenticated connections are bounded only by MaxConns, less the
// unproven budget; a stranger can take none of their slots.
package connlimit

import (
	"container/list"
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Config bounds a listener's connections.
type Config struct {
	// MaxConns bounds all connections open at once.
	MaxConns int
	// MaxUnproven bounds the unproven connections among them; it must be
	// below MaxConns. Authenticated connections have the rest.
	MaxUnproven int
	// MaxPerSource bounds the unproven connections of one source address
	// open at once, and how many of other addresses' it may close per
	// UnprovenTimeout to make room for its own (a token bucket; a
	// connection that authenticates gives a token back).
	MaxPerSource int
	// UnprovenTimeout bounds each read of an unproven connection: the TLS
	// handshake, a request's headers, the wait between requests.
	UnprovenTimeout time.Duration
}

// Check refuses a configuration that would leave a bound off.
func (c Config) Check() error {
	switch {
	case c.MaxConns <= 0:
		return errors.New("the connection limit must be positive")
	case c.MaxUnproven <= 0 || c.MaxUnproven >= c.MaxConns:
		return errors.New("the unauthenticated connection limit must be positive and below the connection limit")
	case c.MaxPerSource <= 0:
		return errors.New("the per-address connection limit must be positive")
	case c.UnprovenTimeout <= 0:
		return errors.New("the unauthenticated connection timeout must be positive")
	}
	return nil
}

// Stats counts what a listener turned away.
type Stats struct {
	// Accepted counts connections taken from the kernel's backlog,
	// including those closed at once.
	Accepted atomic.Uint64
	// Evicted counts unproven connections closed to make room for a new
	// one; RefusedPerSource connections closed at accept because the
	// budget was full and their address had closed its share of others'
	// of late.
	Evicted          atomic.Uint64
	RefusedPerSource atomic.Uint64
	// Authenticated counts connections promoted by an authenticated
	// request.
	Authenticated atomic.Uint64
}

// Listener is a net.Listener within a Config. Serve it with
// http.Server{ConnContext: l.ConnContext} so that handlers can call
// Authenticated.
type Listener struct {
	net.Listener
	cfg   Config
	stats Stats

	mu       sync.Mutex
	unproven *list.List // of *Conn, oldest first
	sources  map[string]*source
	proven   int
}

// source is what the listener keeps of one address.
type source struct {
	// unproven is the number of its unproven connections open.
	unproven int
	// tokens (at most MaxPerSource) pay for closing other addresses'
	// connections; they refill at MaxPerSource per UnprovenTimeout from
	// refilled.
	tokens   float64
	refilled time.Time
}

// maxSources bounds the addresses kept without an open connection: past
// it, those are forgotten (their spent tokens with them).
func (l *Listener) maxSources() int { return 4 * l.cfg.MaxConns }

// sourceOf returns the record of an address, its tokens refilled to now;
// l.mu is held.
func (l *Listener) sourceOf(addr string, now time.Time) *source {
	src := l.sources[addr]
	if src == nil {
		if len(l.sources) >= l.maxSources() {
			for a, s := range l.sources {
				if s.unproven == 0 {
					delete(l.sources, a)
				}
			}
		}
		src = &source{tokens: float64(l.cfg.MaxPerSource), refilled: now}
		l.sources[addr] = src
		return src
	}
	rate := float64(l.cfg.MaxPerSource) / l.cfg.UnprovenTimeout.Seconds()
	src.tokens = min(float64(l.cfg.MaxPerSource), src.tokens+now.Sub(src.refilled).Seconds()*rate)
	src.refilled = now
	return src
}

// New returns l within cfg, which must pass Check.
func New(l net.Listener, cfg Config) *Listener {
	return &Listener{Listener: l, cfg: cfg, unproven: list.New(), sources: map[string]*source{}}
}

// Stats returns the listener's counters.
func (l *Listener) Stats() *Stats { return &l.stats }

// Unproven is the number of unproven connections open.
func (l *Listener) Unproven() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.unproven.Len()
}

// Accept returns the next connection, unproven. It does not wait for a
// slot: a connection over its address's share closes that address's
// oldest unproven connection, and one over the whole budget the oldest of
// all if its address has a token left, else its address's oldest; an
// address with neither has its connection closed at once.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		raw, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.stats.Accepted.Add(1)
		c := &Conn{Conn: raw, l: l, source: addrOf(raw.RemoteAddr())}
		var evict *Conn
		l.mu.Lock()
		src := l.sourceOf(c.source, time.Now())
		full := l.unproven.Len() >= l.cfg.MaxUnproven
		switch {
		case src.unproven >= l.cfg.MaxPerSource, full && src.tokens < 1 && src.unproven > 0:
			// Its own oldest makes room: that costs no one else.
			evict = l.oldestOf(c.source)
		case !full:
		case src.tokens >= 1:
			// Another address's oldest makes room, for a token.
			src.tokens--
			evict = l.unproven.Front().Value.(*Conn)
		default:
			l.mu.Unlock()
			l.stats.RefusedPerSource.Add(1)
			_ = raw.Close()
			continue
		}
		if evict != nil {
			l.forget(evict)
		}
		c.elem = l.unproven.PushBack(c)
		src.unproven++
		l.mu.Unlock()
		if evict != nil {
			l.stats.Evicted.Add(1)
			_ = evict.Close()
		}
		// Until net/http sets its own deadlines (clamped, see
		// SetReadDeadline): a connection that sends nothing is cut off.
		_ = raw.SetReadDeadline(time.Now().Add(l.cfg.UnprovenTimeout))
		return c, nil
	}
}

// oldestOf is the oldest unproven connection of an address; l.mu is held.
func (l *Listener) oldestOf(addr string) *Conn {
	for e := l.unproven.Front(); e != nil; e = e.Next() {
		if o := e.Value.(*Conn); o.source == addr {
			return o
		}
	}
	return nil
}

// forget takes an unproven connection out of the budget; l.mu is held.
func (l *Listener) forget(c *Conn) {
	if c.elem == nil {
		return
	}
	l.unproven.Remove(c.elem)
	c.elem = nil
	if src := l.sources[c.source]; src != nil {
		src.unproven--
	}
}

// addrOf is the address a connection comes from, without its port.
func addrOf(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// Conn is a connection of a Listener.
type Conn struct {
	net.Conn
	l      *Listener
	source string

	// Under l.mu: elem is the connection's place among the unproven (nil
	// once authenticated or closed); proven and closed say which.
	elem   *list.Element
	proven bool
	closed bool
	// wantRead is the last read deadline asked for, restored when the
	// connection is authenticated.
	wantRead time.Time

	closeOnce sync.Once
}

// Close closes the connection and gives its slot back, once.
func (c *Conn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() {
		c.l.mu.Lock()
		defer c.l.mu.Unlock()
		c.closed = true
		if c.proven {
			c.l.proven--
			return
		}
		c.l.forget(c)
	})
	return err
}

// SetReadDeadline sets the read deadline, at most UnprovenTimeout ahead
// while the connection is unproven (none stays none).
func (c *Conn) SetReadDeadline(t time.Time) error {
	return c.Conn.SetReadDeadline(c.clamp(t))
}

// SetDeadline sets both deadlines, the read one clamped as SetReadDeadline
// does.
func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.SetReadDeadline(t)
}

func (c *Conn) clamp(t time.Time) time.Time {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	c.wantRead = t
	if c.proven {
		return t
	}
	// No deadline (net/http's while a handler runs, reading in the
	// background only to notice a client going away) stays none: cutting
	// it would cancel the request of a caller whose connection found no
	// room among the authenticated ones. Every wait for a client to send
	// something — a handshake, headers, the next request — has one.
	if limit := time.Now().Add(c.l.cfg.UnprovenTimeout); !t.IsZero() && t.After(limit) {
		return limit
	}
	return t
}

// authenticate promotes the connection out of the unproven budget when the
// authenticated ones have room, and lifts its short read deadline.
func (c *Conn) authenticate() {
	c.l.mu.Lock()
	if c.proven || c.closed || c.l.proven >= c.l.cfg.MaxConns-c.l.cfg.MaxUnproven {
		// Already promoted, gone, or no room: it stays unproven (and is
		// served all the same).
		c.l.mu.Unlock()
		return
	}
	c.l.forget(c)
	c.proven = true
	c.l.proven++
	if src := c.l.sources[c.source]; src != nil {
		// A token back: a caller's own connections do not spend its
		// address's share.
		src.tokens = min(float64(c.l.cfg.MaxPerSource), src.tokens+1)
	}
	want := c.wantRead
	c.l.mu.Unlock()
	c.l.stats.Authenticated.Add(1)
	_ = c.Conn.SetReadDeadline(want)
}

// connKey is the context key of a request's connection.
type connKey struct{}

// ConnContext is http.Server.ConnContext: it makes the connection known to
// Authenticated. c is what Accept returned, or the TLS connection over it.
func (l *Listener) ConnContext(ctx context.Context, c net.Conn) context.Context {
	type netConner interface{ NetConn() net.Conn }
	for {
		if own, ok := c.(*Conn); ok && own.l == l {
			return context.WithValue(ctx, connKey{}, own)
		}
		nc, ok := c.(netConner)
		if !ok {
			return ctx
		}
		c = nc.NetConn()
	}
}

// Authenticated tells the listener that the connection of a request (its
// context) sent an authenticated request: it leaves the unproven budget
// and its short deadline. Without a connlimit connection in ctx it does
// nothing.
func Authenticated(ctx context.Context) {
	if c, ok := ctx.Value(connKey{}).(*Conn); ok {
		c.authenticate()
	}
}
