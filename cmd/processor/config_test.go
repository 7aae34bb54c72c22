package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/topology"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		check   func(config) bool
		wantErr string
	}{
		{"defaults", nil, nil, func(c config) bool {
			return c.target.URL == "" && c.listen == "127.0.0.1:4222" && c.dataDir == "./data" &&
				c.processor.Topology.Partitions == 16 && c.processor.Topology.SessionTTL == 24*time.Hour && c.logFormat == "auto"
		}, ""},
		{"environment", map[string]string{"TURNGUARD_NATS_URL": "nats://n1:4222", "TURNGUARD_PARTITIONS": "8", "TURNGUARD_SESSION_TTL": "2h"}, nil,
			func(c config) bool {
				return c.target.URL == "nats://n1:4222" && c.processor.Topology.Partitions == 8 && c.processor.Topology.SessionTTL == 2*time.Hour
			}, ""},
		{"flag beats environment", map[string]string{"TURNGUARD_PARTITIONS": "8"}, []string{"--partitions", "4"},
			func(c config) bool { return c.processor.Topology.Partitions == 4 }, ""},
		{"state key in the data dir", nil, []string{"--data-dir", "/var/lib/tg"}, func(c config) bool { return c.stateKey == filepath.Join("/var/lib/tg", "state-key") }, ""},
		{"shared state key", map[string]string{"TURNGUARD_STATE_KEY": "/etc/turnguard/state-key"}, nil,
			func(c config) bool { return c.stateKey == "/etc/turnguard/state-key" }, ""},
		{"listen none", nil, []string{"--listen", "none"}, func(c config) bool { return c.listen == "" }, ""},
		{"batch receipts by default", nil, nil, func(c config) bool { return !c.processor.SingleReceipts }, ""},
		{"single receipts", map[string]string{"TURNGUARD_RECEIPT_FORMAT": "single"}, nil, func(c config) bool { return c.processor.SingleReceipts }, ""},
		{"unknown receipt format", nil, []string{"--receipt-format", "merkle"}, nil, `--receipt-format "merkle"`},
		{"bad environment value", map[string]string{"TURNGUARD_PARTITIONS": "many"}, nil, nil, "TURNGUARD_PARTITIONS"},
		{"zero partitions", nil, []string{"--partitions", "0"}, nil, "partitions must be 1..1024"},
		{"envelope limit above the stream limit", nil, []string{"--max-envelope-bytes", "2000000"}, nil, "--max-envelope-bytes"},
		{"stray argument", nil, []string{"serve"}, nil, `unexpected argument "serve"`},
		{"unknown flag", nil, []string{"--nats"}, nil, "flag provided but not defined"},
		{"authentication by default", nil, nil, func(c config) bool { return c.auth == authRequired }, ""},
		{"auth none on loopback", nil, []string{"--auth", "none"}, func(c config) bool { return c.auth == authNone }, ""},
		{"auth none on localhost", nil, []string{"--auth", "none", "--listen", "localhost:4333"}, func(c config) bool { return c.auth == authNone }, ""},
		{"auth none in-process", nil, []string{"--auth", "none", "--listen", "none"}, func(c config) bool { return c.listen == "" }, ""},
		{"auth none off loopback", nil, []string{"--auth", "none", "--listen", "0.0.0.0:4222"}, nil, "--auth none would open NATS to the network"},
		{"auth none on all interfaces", nil, []string{"--auth", "none", "--listen", ":4222"}, nil, "--auth none would open NATS to the network"},
		{"unknown auth mode", nil, []string{"--auth", "off"}, nil, `--auth "off"`},
		{"plaintext off loopback", nil, []string{"--listen", "10.0.0.5:4222"}, nil, "--listen-tls-cert"},
		{"TLS off loopback", nil, []string{"--listen", "10.0.0.5:4222", "--listen-tls-cert", "c.pem", "--listen-tls-key", "k.pem"},
			func(c config) bool { return c.listenTLSCert == "c.pem" }, ""},
		{"TLS cert without key", nil, []string{"--listen-tls-cert", "c.pem"}, nil, "go together"},
		{"external server: --listen is not used", nil, []string{"--nats-url", "nats://n1:4222", "--listen", "0.0.0.0:4222", "--auth", "none"},
			func(c config) bool { return c.target.URL != "" }, ""},
		// The HTTP endpoint's security.
		{"handshake bucket with --http", map[string]string{"TURNGUARD_SESSION_TTL": "2h"}, []string{"--http", "127.0.0.1:8787", "--auth", "none"},
			func(c config) bool { return c.processor.Topology.HandshakeTTL == 2*time.Hour }, ""},
		{"no handshake bucket without --http", nil, nil, func(c config) bool { return c.processor.Topology.HandshakeTTL == 0 }, ""},
		{"http without caller authentication", nil, []string{"--http", "127.0.0.1:8787"}, nil, "--http-tokens FILE"},
		{"http open with --auth none", nil, []string{"--http", "127.0.0.1:8787", "--auth", "none"},
			func(c config) bool { return c.auth == authNone }, ""},
		{"http open with --auth none off loopback", nil, []string{"--http", "0.0.0.0:8787", "--auth", "none"}, nil, "would open the endpoint to the network"},
		{"tokens on loopback", nil, []string{"--http", "127.0.0.1:8787", "--http-tokens", "callers.yaml"},
			func(c config) bool { return c.httpTokens == "callers.yaml" }, ""},
		{"tokens on IPv6 loopback", nil, []string{"--http", "[::1]:8787", "--http-tokens", "callers.yaml"}, nil, ""},
		{"tokens on localhost", nil, []string{"--http", "localhost:8787", "--http-tokens", "callers.yaml"}, nil, ""},
		{"tokens on every interface without TLS", nil, []string{"--http", ":8787", "--http-tokens", "callers.yaml"}, nil, "without TLS"},
		{"tokens on a public address without TLS", nil, []string{"--http", "192.0.2.10:8787", "--http-tokens", "callers.yaml"}, nil, "without TLS"},
		{"tokens on a host name without TLS", nil, []string{"--http", "guardian.internal:8787", "--http-tokens", "callers.yaml"}, nil, "without TLS"},
		{"tokens on a public address with TLS", nil, []string{"--http", "0.0.0.0:8443", "--http-tokens", "callers.yaml", "--http-tls-cert", "c.pem", "--http-tls-key", "k.pem"}, nil, ""},
		{"environment", map[string]string{"TURNGUARD_HTTP": "0.0.0.0:8443", "TURNGUARD_HTTP_TOKENS": "callers.yaml", "TURNGUARD_HTTP_TLS_CERT": "c.pem", "TURNGUARD_HTTP_TLS_KEY": "k.pem"}, nil,
			func(c config) bool { return c.httpTLSKey == "k.pem" }, ""},
		{"a certificate without its key", nil, []string{"--http-tls-cert", "c.pem"}, nil, "go together"},
		{"a client CA without TLS", nil, []string{"--http-client-ca", "ca.pem", "--http-tokens", "callers.yaml"}, nil, "needs TLS"},
		{"a client CA without callers", nil, []string{"--http-client-ca", "ca.pem", "--http-tls-cert", "c.pem", "--http-tls-key", "k.pem"}, nil, "needs --http-tokens"},
		// The streams' retention.
		{"retention by default", nil, nil, func(c config) bool {
			tp := c.processor.Topology
			for _, r := range []topology.Retention{tp.HooksRetention, tp.DecisionsRetention, tp.AlertsRetention, tp.DLQRetention} {
				if r.MaxAge != 7*24*time.Hour || r.MaxBytes != 0 {
					return false
				}
			}
			return true
		}, ""},
		{"retention flags", nil, []string{"--hooks-max-age", "720h", "--hooks-max-bytes", "10GiB", "--decisions-max-age", "0", "--decisions-max-bytes", "512MiB",
			"--alerts-max-age", "48h", "--alerts-max-bytes", "1GB", "--dlq-max-age", "24h", "--dlq-max-bytes", "2097152"}, func(c config) bool {
			tp := c.processor.Topology
			return tp.HooksRetention == topology.Retention{MaxAge: 720 * time.Hour, MaxBytes: 10 << 30} &&
				tp.DecisionsRetention == topology.Retention{MaxAge: 0, MaxBytes: 512 << 20} &&
				tp.AlertsRetention == topology.Retention{MaxAge: 48 * time.Hour, MaxBytes: 1e9} &&
				tp.DLQRetention == topology.Retention{MaxAge: 24 * time.Hour, MaxBytes: 2 << 20}
		}, ""},
		{"retention from the environment", map[string]string{"TURNGUARD_HOOKS_MAX_BYTES": "20GiB", "TURNGUARD_ALERTS_MAX_AGE": "2160h"}, nil, func(c config) bool {
			tp := c.processor.Topology
			return tp.HooksRetention.MaxBytes == 20<<30 && tp.AlertsRetention.MaxAge == 2160*time.Hour
		}, ""},
		{"state bound", nil, []string{"--max-state-bytes", "256KiB"}, func(c config) bool { return c.processor.MaxValueBytes == 256<<10 }, ""},
		{"state bound by default the server's", nil, nil, func(c config) bool { return c.processor.MaxValueBytes == 0 }, ""},
		{"state bound too small", nil, []string{"--max-state-bytes", "4KiB"}, nil, "--max-state-bytes 4096: at least 65536"},
		{"hooks age below the session TTL", nil, []string{"--hooks-max-age", "12h"}, nil, "shorter than the session TTL"},
		{"hooks age follows the session TTL", nil, []string{"--hooks-max-age", "12h", "--session-ttl", "6h"}, nil, ""},
		{"decisions age below the session TTL", nil, []string{"--decisions-max-age", "1h"}, nil, "ACS_DECISIONS max age 1h0m0s is shorter than the session TTL"},
		{"dlq age below its duplicate window", nil, []string{"--dlq-max-age", "12h"}, nil, "duplicate window 24h0m0s"},
		{"bad size", nil, []string{"--hooks-max-bytes", "10G"}, nil, "unknown unit"},
		{"size below one message", nil, []string{"--alerts-max-bytes", "64KiB"}, nil, "less than one largest message"},
		// The HTTP endpoint's resource bounds.
		{"http limits by default", nil, nil, func(c config) bool {
			l := c.httpLimits
			return l.readHeaderTimeout == 10*time.Second && l.readTimeout == 30*time.Second && l.idleTimeout == 2*time.Minute &&
				l.maxConns == 1024 && l.writeTimeout == 15*time.Second &&
				l.maxUnauthConns == 0 && l.conns().MaxUnproven == 256 && l.maxConnsPerIP == 32 && l.unauthTimeout == 5*time.Second
		}, ""},
		{"write timeout follows the decision timeout", nil, []string{"--decision-timeout", "20s"},
			func(c config) bool { return c.httpLimits.writeTimeout == 30*time.Second }, ""},
		{"write timeout within the decision timeout", nil, []string{"--http-write-timeout", "3s"}, nil, "must exceed --decision-timeout"},
		{"batch bounds by default", nil, nil, func(c config) bool { return c.httpMaxBatch == 100 && c.httpMaxDeadLetters == 10 }, ""},
		{"no batch limit", nil, []string{"--http-max-batch", "0"}, nil, "--http-max-batch must be positive"},
		{"no dead-letter limit", nil, []string{"--http-max-dead-letters", "-1"}, nil, "--http-max-dead-letters must be positive"},
		{"no connection limit", nil, []string{"--http-max-conns", "0"}, nil, "--http-max-conns must be at least 2"},
		{"unauthenticated budget is everything", nil, []string{"--http-max-conns", "100", "--http-max-unauth-conns", "100"}, nil, "--http-max-unauth-conns 100 must be below"},
		{"unauthenticated budget follows the connection limit", nil, []string{"--http-max-conns", "100"},
			func(c config) bool { return c.httpLimits.conns().MaxUnproven == 25 }, ""},
		{"no per-address share", nil, []string{"--http-max-conns-per-ip", "0"}, nil, "--http-max-conns-per-ip must be positive"},
		{"no unauthenticated deadline", nil, []string{"--http-unauth-timeout", "0s"}, nil, "--http-unauth-timeout must be positive"},
		{"a bad --http-tenant", nil, []string{"--http-tenant", "a.b"}, nil, "--http-tenant"},
		// The metrics and health listener.
		{"metrics off by default", nil, nil, func(c config) bool { return c.metricsAddr == "" }, ""},
		{"metrics on loopback", nil, []string{"--metrics", "127.0.0.1:9464"}, func(c config) bool { return c.metricsAddr == "127.0.0.1:9464" }, ""},
		{"metrics from the environment", map[string]string{"TURNGUARD_METRICS": "[::1]:9464"}, nil,
			func(c config) bool { return c.metricsAddr == "[::1]:9464" }, ""},
		{"metrics without --http or --auth none", nil, []string{"--metrics", "0.0.0.0:9464"}, func(c config) bool { return c.httpAddr == "" }, ""},
		{"metrics without a port", nil, []string{"--metrics", "127.0.0.1"}, nil, `--metrics "127.0.0.1"`},
		{"http without a port", nil, []string{"--http", "127.0.0.1", "--auth", "none"}, nil, `--http "127.0.0.1"`},
		{"http with a bad port", nil, []string{"--http", "127.0.0.1:http-ish", "--auth", "none"}, nil, `--http "127.0.0.1:http-ish"`},
		// The NATS connection (internal/natsconn resolves it).
		{"credentials for the embedded server", nil, []string{"--nats-creds", "x.creds"}, nil, "without one the embedded server is used"},
		{"a missing credentials file", nil, []string{"--nats-url", "nats://n1:4222", "--nats-creds", "/nonexistent/x.creds"}, nil, "/nonexistent/x.creds"},
		{"NATS_URL does not leave the embedded server", map[string]string{"NATS_URL": "nats://n1:4222"}, nil, func(c config) bool { return c.target.URL == "" }, ""},
		{"a missing context", map[string]string{"XDG_CONFIG_HOME": "/nonexistent"}, []string{"--nats-context", "nope"}, nil, `no nats context "nope"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			c, err := parseFlags(tc.args, &bytes.Buffer{})
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one mentioning %q", err, tc.wantErr)
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.check != nil && !tc.check(c):
				t.Fatalf("unexpected config %+v", c)
			}
		})
	}
}

// The help spells flags --flag and says how the NATS connection is found.
func TestHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d", code)
	}
	help := errOut.String()
	for _, want := range []string{"\n  --nats-context name", "\n  --http string", "NATS connection", "TURNGUARD_NATS_CONTEXT", "otherwise the embedded server"} {
		if !strings.Contains(help, want) {
			t.Fatalf("help lacks %q:\n%s", want, help)
		}
	}
	if strings.Contains(help, "\n  -nats") {
		t.Fatalf("single-dash flags in the help:\n%s", help)
	}
}

func TestRunExitCodes(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"version"}, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "processor ") {
		t.Fatalf("version: exit %d, output %q", code, out.String())
	}
	if code := run(context.Background(), []string{"--partitions", "x"}, &out, &errOut); code != 2 {
		t.Fatalf("bad flag: exit %d, want 2", code)
	}
	errOut.Reset()
	if code := run(context.Background(), []string{"--nats-url", "nats://127.0.0.1:1", "--log-format", "json", "--data-dir", t.TempDir()}, &out, &errOut); code != 1 ||
		!strings.Contains(errOut.String(), "connect to NATS nats://127.0.0.1:1") {
		t.Fatalf("unreachable server: exit %d, stderr %q", code, errOut.String())
	}
}
