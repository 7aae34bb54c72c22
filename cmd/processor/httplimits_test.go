package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// serveTest serves a handler that reads the whole body, as the gateway
// does, within limits on loopback.
func serveTest(t *testing.T, limits httpLimits) string {
	t.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "read %d", len(b))
	})
	addr, stop, err := serveHTTP(context.Background(), "127.0.0.1:0", nil, h, limits, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return addr.String()
}

func testLimits() httpLimits {
	return httpLimits{readHeaderTimeout: 10 * time.Second, readTimeout: 10 * time.Second, writeTimeout: 10 * time.Second,
		idleTimeout: time.Minute, maxConns: 16}
}

// TestHTTPTrickleCutOff: a client that sends its request a byte at a time
// is cut off after the read timeouts, long before it has sent it all.
func TestHTTPTrickleCutOff(t *testing.T) {
	tests := []struct {
		name    string
		prefix  string // sent at once
		trickle string // then a byte every tick
	}{
		{"headers", "POST /acs HTTP/1.1\r\n", "Host: x\r\nX-Slow: " + strings.Repeat("a", 200) + "\r\n\r\n"},
		{"body", "POST /acs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n", strings.Repeat("a", 200)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := testLimits()
			l.readHeaderTimeout, l.readTimeout = 300*time.Millisecond, 300*time.Millisecond
			addr := serveTest(t, l)
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// Bounds the test whatever the server does.
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			closed := make(chan struct{})
			go func() {
				// Until the server answers and hangs up.
				_, _ = io.Copy(io.Discard, c)
				close(closed)
			}()
			if _, err := io.WriteString(c, tc.prefix); err != nil {
				t.Fatal(err)
			}
			start, sent := time.Now(), 0
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
		loop:
			for sent < len(tc.trickle) {
				select {
				case <-closed:
					break loop
				case <-tick.C:
					if _, err := io.WriteString(c, tc.trickle[sent:sent+1]); err != nil {
						break loop
					}
					sent++
				}
			}
			select {
			case <-closed:
			case <-time.After(5 * time.Second):
				t.Fatal("the connection is still open")
			}
			// 200 bytes at 20 a second take 10 s; the cut comes after
			// 300 ms (and a tick or so of slack).
			if sent >= len(tc.trickle) {
				t.Fatalf("the whole request went through in %v", time.Since(start))
			}
			t.Logf("cut off after %d bytes, %v", sent, time.Since(start))
		})
	}
}

// TestHTTPMaxConns: connections beyond --http-max-conns wait until one of
// the open ones closes; the ones admitted work as usual.
func TestHTTPMaxConns(t *testing.T) {
	l := testLimits()
	l.maxConns = 2
	addr := serveTest(t, l)
	// Two keep-alive connections, each after a normal request, idle.
	var held []net.Conn
	for range l.maxConns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, "POST /acs HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || string(b) != "read 2" {
			t.Fatalf("held connection: %d %q", resp.StatusCode, b)
		}
		held = append(held, c)
	}
	// A third waits...
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	done := make(chan error, 1)
	go func() {
		resp, err := client.Post("http://"+addr+"/acs", "application/json", strings.NewReader(`{"a":1}`))
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != "read 7" {
				err = fmt.Errorf("answer %d %q", resp.StatusCode, b)
			}
		}
		done <- err
	}()
	// A bounded wait, not a signal: the held-back connection sits in the
	// kernel's listen backlog, where the server does not see it, so
	// nothing tells "held back" from "slow to be served".
	select {
	case err := <-done:
		t.Fatalf("a third connection was served beyond the limit (%v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	// ...until one of the held ones closes.
	held[0].Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting connection was not served after a slot freed")
	}
}

func TestHTTPLimitsCheck(t *testing.T) {
	ok := testLimits()
	tests := []struct {
		name    string
		mod     func(*httpLimits)
		wantErr string
	}{
		{"valid", func(*httpLimits) {}, ""},
		{"write timeout at the decision timeout", func(l *httpLimits) { l.writeTimeout = 5 * time.Second }, "must exceed --decision-timeout"},
		{"no read timeout", func(l *httpLimits) { l.readTimeout = 0 }, "--http-read-timeout"},
		{"no header timeout", func(l *httpLimits) { l.readHeaderTimeout = 0 }, "--http-read-header-timeout"},
		{"no idle timeout", func(l *httpLimits) { l.idleTimeout = -1 }, "--http-idle-timeout"},
		{"no connection limit", func(l *httpLimits) { l.maxConns = 0 }, "--http-max-conns"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := ok
			tc.mod(&l)
			err := l.check(5 * time.Second)
			if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}
