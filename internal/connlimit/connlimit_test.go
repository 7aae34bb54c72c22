package connlimit_test

import (
	"bufio"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/connlimit"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
)

// serve runs a server on a loopback listener within cfg whose handler
// takes a request with "Authorization: ok" as authenticated (and answers
// 200 "hi") and refuses every other one 401, closing the connection, as
// the ACS endpoint does.
func serve(t *testing.T, cfg connlimit.Config, useTLS bool) (*connlimit.Listener, *httptest.Server) {
	t.Helper()
	if err := cfg.Check(); err != nil {
		t.Fatal(err)
	}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := connlimit.New(raw, cfg)
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "ok" {
			w.Header().Set("Connection", "close")
			http.Error(w, "who?", http.StatusUnauthorized)
			return
		}
		connlimit.Authenticated(r.Context())
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "hi")
	}))
	hs.Listener.Close()
	hs.Listener = l
	hs.Config.ConnContext = l.ConnContext
	hs.Config.ReadHeaderTimeout, hs.Config.ReadTimeout, hs.Config.IdleTimeout = time.Minute, time.Minute, time.Minute
	// The refused and cut-off connections are the point of these tests.
	hs.Config.ErrorLog = log.New(io.Discard, "", 0)
	if useTLS {
		hs.StartTLS()
	} else {
		hs.Start()
	}
	t.Cleanup(hs.Close)
	return l, hs
}

// dialFrom connects to addr from a loopback source address 127.0.0.n.
func dialFrom(t *testing.T, n int, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(n))}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedByServer reports, without waiting, whether the server has closed
// c: a read with a deadline in the past tells a timeout (open) from EOF or
// a reset (closed).
func closedByServer(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
	var b [1]byte
	_, err := c.Read(b[:])
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false
	}
	return err != nil
}

// waitClosed waits until the server has closed c.
func waitClosed(t *testing.T, c net.Conn) {
	t.Helper()
	testwait.Eventually(t, 10*time.Second, 5*time.Millisecond, "the server closes the connection", func() bool { return closedByServer(c) })
}

// authenticatedCall makes a request with a credential on a new connection.
func authenticatedCall(hs *httptest.Server) error {
	client := hs.Client()
	client.Timeout = 20 * time.Second
	client.Transport.(*http.Transport).DisableKeepAlives = true
	req, _ := http.NewRequest(http.MethodPost, hs.URL+"/acs", strings.NewReader("{}"))
	req.Header.Set("Authorization", "ok")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(b) != "hi" {
		return fmt.Errorf("answer %d %q", resp.StatusCode, b)
	}
	return nil
}

// TestFloodDoesNotStarveAuthenticated (issue 23, finding 7): many more
// connections without a credential than the limits allow — idle, half a
// request's headers, stalled in the TLS handshake — from 127.0.0.1 and
// other loopback addresses, held open, do not keep an authenticated call
// on a new connection out, nor close a caller's authenticated keep-alive
// connection. Before, connections past the limit waited in the listen
// backlog until one of the flood's closed.
func TestFloodDoesNotStarveAuthenticated(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", useTLS), func(t *testing.T) {
			// The deadline of unproven connections is far longer than the
			// test: what lets the call in is the budget, not the flood
			// timing out.
			cfg := connlimit.Config{MaxConns: 64, MaxUnproven: 16, MaxPerSource: 4, UnprovenTimeout: 5 * time.Minute}
			l, hs := serve(t, cfg, useTLS)
			addr := hs.Listener.Addr().String()

			// A caller's keep-alive connection, authenticated before the
			// flood.
			keep := hs.Client()
			keep.Timeout = 20 * time.Second
			call := func() error {
				req, _ := http.NewRequest(http.MethodGet, hs.URL+"/", nil)
				req.Header.Set("Authorization", "ok")
				resp, err := keep.Do(req)
				if err != nil {
					return err
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return nil
			}
			if err := call(); err != nil {
				t.Fatal(err)
			}

			// The flood: 20 addresses × 10 connections, 200 in all, more
			// than MaxConns, each idle or with half its headers (or its
			// TLS ClientHello) sent.
			const sources, perSource = 20, 10
			var flood []net.Conn
			for i := range sources * perSource {
				c := dialFrom(t, 1+i/perSource, addr)
				switch {
				case i%2 == 0:
				case useTLS:
					// The first bytes of a ClientHello: the handshake waits
					// for the rest.
					_, _ = c.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00})
				default:
					_, _ = io.WriteString(c, "POST /acs HTTP/1.1\r\nHost: x\r\n")
				}
				flood = append(flood, c)
			}
			// Every flood connection has been taken from the backlog: it
			// holds an unproven slot or was closed (its address's cap, room
			// for a newer one, a failed TLS handshake).
			testwait.Eventually(t, 20*time.Second, 10*time.Millisecond, "the flood accepted", func() bool {
				return l.Stats().Accepted.Load() >= 1+sources*perSource
			})
			// The later addresses found the budget full: each closed as
			// many of the others' as it has tokens, then its own.
			if got := l.Stats().RefusedPerSource.Load(); got != 0 {
				t.Fatalf("%d connections refused", got)
			}

			// While the flood is held: a new authenticated call is served,
			// and so is the next call on the caller's kept connection.
			for range 3 {
				if err := authenticatedCall(hs); err != nil {
					t.Fatalf("authenticated call under the flood: %v", err)
				}
			}
			if err := call(); err != nil {
				t.Fatalf("the kept connection under the flood: %v", err)
			}
			// At most the budget of the flood is open (the closes may
			// still be on their way).
			testwait.Eventually(t, 10*time.Second, 10*time.Millisecond, "the flood within its budget", func() bool {
				open := 0
				for _, c := range flood {
					if !closedByServer(c) {
						open++
					}
				}
				return open <= cfg.MaxUnproven
			})
		})
	}
}

// TestPerSourceCap: an address's unproven connections beyond MaxPerSource
// close its own oldest; other addresses' are unaffected.
func TestPerSourceCap(t *testing.T) {
	cfg := connlimit.Config{MaxConns: 64, MaxUnproven: 32, MaxPerSource: 3, UnprovenTimeout: 5 * time.Minute}
	l, hs := serve(t, cfg, false)
	addr := hs.Listener.Addr().String()
	var same []net.Conn
	for range 5 {
		same = append(same, dialFrom(t, 1, addr))
	}
	other := dialFrom(t, 2, addr)
	testwait.Eventually(t, 10*time.Second, 10*time.Millisecond, "all accepted", func() bool { return l.Stats().Accepted.Load() == 6 })
	waitClosed(t, same[0])
	waitClosed(t, same[1])
	if got := l.Stats().Evicted.Load(); got != 2 {
		t.Fatalf("%d evicted, want 2", got)
	}
	for i, c := range same[2:] {
		if closedByServer(c) {
			t.Fatalf("connection %d of one address closed", i+2)
		}
	}
	if closedByServer(other) {
		t.Fatal("the other address's connection was closed")
	}
}

// TestOldestUnprovenEvicted: with the unproven budget full, a new
// connection closes the oldest unproven one; an authenticated connection
// is never taken.
func TestOldestUnprovenEvicted(t *testing.T) {
	cfg := connlimit.Config{MaxConns: 8, MaxUnproven: 3, MaxPerSource: 8, UnprovenTimeout: 5 * time.Minute}
	l, hs := serve(t, cfg, false)
	addr := hs.Listener.Addr().String()
	// An authenticated keep-alive connection first.
	proven := dialFrom(t, 1, addr)
	br := bufio.NewReader(proven)
	request := func() {
		t.Helper()
		if _, err := io.WriteString(proven, "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: ok\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	request()
	testwait.Eventually(t, 10*time.Second, 10*time.Millisecond, "promoted", func() bool { return l.Stats().Authenticated.Load() == 1 })
	var idle []net.Conn
	for i := range 5 {
		idle = append(idle, dialFrom(t, 1, addr))
		if i < 3 {
			// Accepted in order: the listener has the first three before
			// the next arrives.
			want := i + 1
			testwait.Eventually(t, 10*time.Second, 5*time.Millisecond, "accepted", func() bool { return acceptedUnproven(l) >= want })
		}
	}
	testwait.Eventually(t, 10*time.Second, 10*time.Millisecond, "two evicted", func() bool { return l.Stats().Evicted.Load() == 2 })
	waitClosed(t, idle[0])
	waitClosed(t, idle[1])
	for i, c := range idle[2:] {
		if closedByServer(c) {
			t.Fatalf("idle connection %d closed", i+2)
		}
	}
	request() // the authenticated connection is still served
}

// acceptedUnproven is how many unproven connections the listener holds.
func acceptedUnproven(l *connlimit.Listener) int { return l.Unproven() }

// TestUnprovenDeadline: a connection that sends nothing, or trickles its
// headers, is cut off after UnprovenTimeout, long before the server's own
// header timeout; an authenticated connection idles as long as the
// server's idle timeout lets it.
func TestUnprovenDeadline(t *testing.T) {
	const short = 300 * time.Millisecond
	cfg := connlimit.Config{MaxConns: 8, MaxUnproven: 4, MaxPerSource: 4, UnprovenTimeout: short}
	_, hs := serve(t, cfg, false)
	addr := hs.Listener.Addr().String()
	silent := dialFrom(t, 1, addr)
	trickle := dialFrom(t, 1, addr)
	var wg sync.WaitGroup
	start := time.Now()
	for _, c := range []net.Conn{silent, trickle} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
			_, _ = io.Copy(io.Discard, c)
		}()
	}
	go func() {
		for _, b := range []byte("POST /acs HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa") {
			if _, err := trickle.Write([]byte{b}); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	wg.Wait()
	// The server's header timeout is a minute; the read deadline of the
	// test's own reads 20 s.
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("unproven connections lasted %v", took)
	}
	// An authenticated connection outlives the short deadline idle.
	c := dialFrom(t, 2, addr)
	br := bufio.NewReader(c)
	for i := range 2 {
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: ok\r\n\r\n"); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if i == 0 {
			// The time under test: idle past the unproven deadline.
			time.Sleep(3 * short)
		}
	}
}

func TestCheck(t *testing.T) {
	ok := connlimit.Config{MaxConns: 8, MaxUnproven: 2, MaxPerSource: 1, UnprovenTimeout: time.Second}
	tests := []struct {
		name string
		mod  func(*connlimit.Config)
		ok   bool
	}{
		{"valid", func(*connlimit.Config) {}, true},
		{"no limit", func(c *connlimit.Config) { c.MaxConns = 0 }, false},
		{"unproven budget is all", func(c *connlimit.Config) { c.MaxUnproven = 8 }, false},
		{"no unproven budget", func(c *connlimit.Config) { c.MaxUnproven = 0 }, false},
		{"no per-source cap", func(c *connlimit.Config) { c.MaxPerSource = 0 }, false},
		{"no deadline", func(c *connlimit.Config) { c.UnprovenTimeout = 0 }, false},
	}
	for _, tc := range tests {
		c := ok
		tc.mod(&c)
		if err := c.Check(); (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestChurnCannotEvictOthers: an address closes at most MaxPerSource of
// other addresses' connections per UnprovenTimeout; past that, with the
// budget full, its new connections are closed at once instead of closing
// more of others'.
func TestChurnCannotEvictOthers(t *testing.T) {
	cfg := connlimit.Config{MaxConns: 4, MaxUnproven: 2, MaxPerSource: 1, UnprovenTimeout: 5 * time.Minute}
	l, hs := serve(t, cfg, false)
	addr := hs.Listener.Addr().String()
	dial := func(source int) net.Conn {
		n := l.Stats().Accepted.Load()
		c := dialFrom(t, source, addr)
		testwait.Eventually(t, 10*time.Second, 5*time.Millisecond, "accepted", func() bool { return l.Stats().Accepted.Load() > n })
		return c
	}
	a, b := dial(1), dial(2) // the budget is full
	c := dial(3)             // 3's token closes 1's
	waitClosed(t, a)
	d := dial(4) // 4's token closes 2's
	waitClosed(t, b)
	if closedByServer(c) || closedByServer(d) {
		t.Fatal("a newer connection was closed")
	}
	e := dial(5) // 5's token closes 3's
	waitClosed(t, c)
	// 3 has no token left and no connection of its own to replace.
	again := dial(3)
	waitClosed(t, again)
	if closedByServer(d) || closedByServer(e) {
		t.Fatal("an address out of tokens closed another's connection")
	}
	if got := l.Stats().RefusedPerSource.Load(); got != 1 {
		t.Fatalf("%d refused, want 1", got)
	}
}

// TestOutOfTokensReplacesItsOwn: an address out of tokens, with the budget
// full, still gets a new connection in by closing its own oldest — a
// caller sharing an address with a flood is not shut out while the flood
// holds connections there — and never another address's.
func TestOutOfTokensReplacesItsOwn(t *testing.T) {
	cfg := connlimit.Config{MaxConns: 8, MaxUnproven: 3, MaxPerSource: 2, UnprovenTimeout: 5 * time.Minute}
	l, hs := serve(t, cfg, false)
	addr := hs.Listener.Addr().String()
	dial := func(source int) net.Conn {
		n := l.Stats().Accepted.Load()
		c := dialFrom(t, source, addr)
		testwait.Eventually(t, 10*time.Second, 5*time.Millisecond, "accepted", func() bool { return l.Stats().Accepted.Load() > n })
		return c
	}
	b2, b3, b4 := dial(2), dial(3), dial(4) // the budget is full
	a1 := dial(1)                           // 1's first token closes 2's
	waitClosed(t, b2)
	b5 := dial(5) // 5's token closes 3's
	waitClosed(t, b3)
	a2 := dial(1) // 1's second token closes 4's
	waitClosed(t, b4)
	b6 := dial(6) // 6's token closes 1's oldest
	waitClosed(t, a1)
	// 1 is out of tokens, below its share, and has a connection open.
	a3 := dial(1)
	waitClosed(t, a2)
	if closedByServer(b5) || closedByServer(b6) || closedByServer(a3) {
		t.Fatal("another address's connection, or the new one, was closed")
	}
	if got := l.Stats().RefusedPerSource.Load(); got != 0 {
		t.Fatalf("%d refused", got)
	}
}
