package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/turnguard/turnguard/internal/connlimit"
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
	// Connections that have not yet sent an authenticated request
	// (internal/connlimit): at most maxUnauthConns of them (0: a quarter
	// of maxConns), at most maxConnsPerIP from one address, each read
	// bounded by unauthTimeout.
	maxUnauthConns int
	maxConnsPerIP  int
	unauthTimeout  time.Duration
}

// Defaults of the HTTP limits. writeTimeout has none of its own: it
// follows --decision-timeout (see defaultWriteTimeout).
const (
	defaultHTTPReadHeaderTimeout = 10 * time.Second
	defaultHTTPReadTimeout       = 30 * time.Second
	defaultHTTPIdleTimeout       = 2 * time.Minute
	defaultHTTPMaxConns          = 1024
	defaultHTTPMaxConnsPerIP     = 32
	defaultHTTPUnauthTimeout     = 5 * time.Second
	// writeTimeoutMargin is what the write timeout leaves beyond the
	// decision timeout, so that a call whose decision times out still
	// gets its JSON-RPC error out (reading the body, dead-lettering).
	writeTimeoutMargin = 10 * time.Second
)

// defaultWriteTimeout is the write timeout when --http-write-timeout is 0.
func defaultWriteTimeout(decision time.Duration) time.Duration {
	return decision + writeTimeoutMargin
}

// conns is the connection bounds of the limits.
func (l httpLimits) conns() connlimit.Config {
	unauth := l.maxUnauthConns
	if unauth == 0 {
		unauth = max(1, l.maxConns/4)
	}
	return connlimit.Config{MaxConns: l.maxConns, MaxUnproven: unauth, MaxPerSource: l.maxConnsPerIP, UnprovenTimeout: l.unauthTimeout}
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
	case l.maxConns <= 1:
		return errors.New("--http-max-conns must be at least 2")
	case l.maxUnauthConns < 0 || l.maxUnauthConns >= l.maxConns:
		return fmt.Errorf("--http-max-unauth-conns %d must be below --http-max-conns %d (0: a quarter of it)", l.maxUnauthConns, l.maxConns)
	case l.maxConnsPerIP <= 0:
		return errors.New("--http-max-conns-per-ip must be positive")
	case l.unauthTimeout <= 0:
		return errors.New("--http-unauth-timeout must be positive")
	case l.writeTimeout <= decision:
		// net/http's write timeout runs from the end of the headers to the
		// end of the answer: shorter than the decision wait, it would cut
		// off the JSON-RPC error that tells the agent to apply its
		// on_decision_failure.
		return fmt.Errorf("--http-write-timeout %v must exceed --decision-timeout %v", l.writeTimeout, decision)
	}
	return nil
}
