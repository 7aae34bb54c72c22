package gateway_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/connlimit"
	"github.com/turnguard/turnguard/internal/gateway"
)

// TestAuthenticatedConnectionLeavesTheUnprovenBudget: a request with a
// caller's credential takes its connection out of the listener's budget of
// unauthenticated connections (issue 23, finding 7); a refused one does
// not.
func TestAuthenticatedConnectionLeavesTheUnprovenBudget(t *testing.T) {
	e := startAuth(t, gateway.Config{Handshake: gateway.HandshakeOptional}, nil)
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := connlimit.New(raw, connlimit.Config{MaxConns: 8, MaxUnproven: 4, MaxPerSource: 4, UnprovenTimeout: time.Minute})
	hs := httptest.NewUnstartedServer(e.gw.Handler())
	hs.Listener.Close()
	hs.Listener = l
	hs.Config.ConnContext = l.ConnContext
	hs.Start()
	t.Cleanup(hs.Close)
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	post := func(token string) int {
		req, _ := http.NewRequest(http.MethodPost, hs.URL+"/acs", bytes.NewReader(mustJSON(sessionStartOf(uuid(901), "a1", 9010))))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post("tgt_nobody"); got != http.StatusUnauthorized || l.Stats().Authenticated.Load() != 0 {
		t.Fatalf("a stranger: HTTP %d, %d promoted", got, l.Stats().Authenticated.Load())
	}
	if got := post(tokenAlice); got != http.StatusOK || l.Stats().Authenticated.Load() != 1 {
		t.Fatalf("a caller: HTTP %d, %d promoted", got, l.Stats().Authenticated.Load())
	}
}
