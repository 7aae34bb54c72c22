package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/rs/zerolog"
)

// metricsLimits bound the clients of the --metrics listener: scrapers and
// probes, which send small requests and read answers made in well under
// the write timeout (a scrape's consumer info requests are bounded by
// metrics.DefaultBacklogTimeout). Nothing authenticates there, so every
// connection stays in the unauthenticated budget: at most 16 from one
// address, the oldest closed when 63 are open.
var metricsLimits = httpLimits{
	readHeaderTimeout: 5 * time.Second,
	readTimeout:       10 * time.Second,
	writeTimeout:      30 * time.Second,
	idleTimeout:       defaultHTTPIdleTimeout,
	maxConns:          64,
	maxUnauthConns:    63,
	maxConnsPerIP:     16,
	unauthTimeout:     5 * time.Second,
}

// listenMetrics binds --metrics. It runs before NATS starts, so that a bad
// or taken address stops the processor at once.
func listenMetrics(addr string, log zerolog.Logger) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics %s: %w", addr, err)
	}
	if !loopback(addr) {
		log.Warn().Str("metrics", addr).Msg("the metrics and health listener is not on loopback: it has no authentication or TLS; whoever reaches it reads the metrics and readiness (no secrets, tenants or sessions)")
	}
	return l, nil
}

// serveMetrics serves h on l (from listenMetrics) until ctx ends, within
// metricsLimits; the returned stop waits for in-flight requests (bounded).
func serveMetrics(ctx context.Context, l net.Listener, h http.Handler, log zerolog.Logger) func() {
	stop := serveBounded(ctx, l, nil, h, metricsLimits, "metrics listener", 5*time.Second, log)
	log.Info().Str("addr", l.Addr().String()).Str("url", "http://"+l.Addr().String()+"/metrics").Msg("metrics and health listening (/metrics, /healthz, /readyz)")
	return stop
}
