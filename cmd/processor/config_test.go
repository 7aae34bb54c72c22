package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
			return c.natsURL == "" && c.listen == "127.0.0.1:4222" && c.dataDir == "./data" &&
				c.processor.Topology.Partitions == 16 && c.processor.Topology.SessionTTL == 24*time.Hour && c.logFormat == "auto"
		}, ""},
		{"environment", map[string]string{"TURNGUARD_NATS_URL": "nats://n1:4222", "TURNGUARD_PARTITIONS": "8", "TURNGUARD_SESSION_TTL": "2h"}, nil,
			func(c config) bool {
				return c.natsURL == "nats://n1:4222" && c.processor.Topology.Partitions == 8 && c.processor.Topology.SessionTTL == 2*time.Hour
			}, ""},
		{"flag beats environment", map[string]string{"TURNGUARD_PARTITIONS": "8"}, []string{"--partitions", "4"},
			func(c config) bool { return c.processor.Topology.Partitions == 4 }, ""},
		{"state key in the data dir", nil, []string{"--data-dir", "/var/lib/tg"}, func(c config) bool { return c.stateKey == filepath.Join("/var/lib/tg", "state-key") }, ""},
		{"shared state key", map[string]string{"TURNGUARD_STATE_KEY": "/etc/turnguard/state-key"}, nil,
			func(c config) bool { return c.stateKey == "/etc/turnguard/state-key" }, ""},
		{"listen none", nil, []string{"--listen", "none"}, func(c config) bool { return c.listen == "" }, ""},
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
			func(c config) bool { return c.natsURL != "" }, ""},
		// The HTTP endpoint's security.
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
		// The HTTP endpoint's resource bounds.
		{"http limits by default", nil, nil, func(c config) bool {
			l := c.httpLimits
			return l.readHeaderTimeout == 10*time.Second && l.readTimeout == 30*time.Second && l.idleTimeout == 2*time.Minute &&
				l.maxConns == 1024 && l.writeTimeout == 15*time.Second
		}, ""},
		{"write timeout follows the decision timeout", nil, []string{"--decision-timeout", "20s"},
			func(c config) bool { return c.httpLimits.writeTimeout == 30*time.Second }, ""},
		{"write timeout within the decision timeout", nil, []string{"--http-write-timeout", "3s"}, nil, "must exceed --decision-timeout"},
		{"batch bounds by default", nil, nil, func(c config) bool { return c.httpMaxBatch == 100 && c.httpMaxDeadLetters == 10 }, ""},
		{"no batch limit", nil, []string{"--http-max-batch", "0"}, nil, "--http-max-batch must be positive"},
		{"no dead-letter limit", nil, []string{"--http-max-dead-letters", "-1"}, nil, "--http-max-dead-letters must be positive"},
		{"no connection limit", nil, []string{"--http-max-conns", "0"}, nil, "--http-max-conns must be positive"},
		{"a bad --http-tenant", nil, []string{"--http-tenant", "a.b"}, nil, "--http-tenant"},
		// The metrics and health listener.
		{"metrics off by default", nil, nil, func(c config) bool { return c.metricsAddr == "" }, ""},
		{"metrics on loopback", nil, []string{"--metrics", "127.0.0.1:9464"}, func(c config) bool { return c.metricsAddr == "127.0.0.1:9464" }, ""},
		{"metrics from the environment", map[string]string{"TURNGUARD_METRICS": "[::1]:9464"}, nil,
			func(c config) bool { return c.metricsAddr == "[::1]:9464" }, ""},
		{"metrics without --http or --auth none", nil, []string{"--metrics", "0.0.0.0:9464"}, func(c config) bool { return c.httpAddr == "" }, ""},
		{"metrics without a port", nil, []string{"--metrics", "127.0.0.1"}, nil, `--metrics "127.0.0.1"`},
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

func TestRunExitCodes(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"version"}, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "turnguard") {
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
