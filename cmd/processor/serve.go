package main

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/connlimit"
	"github.com/turnguard/turnguard/internal/core/alert"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/core/receipt"
	"github.com/turnguard/turnguard/internal/embedded"
	"github.com/turnguard/turnguard/internal/gateway"
	"github.com/turnguard/turnguard/internal/keyfile"
	"github.com/turnguard/turnguard/internal/logging"
	"github.com/turnguard/turnguard/internal/metrics"
	"github.com/turnguard/turnguard/internal/natsauth"
	"github.com/turnguard/turnguard/internal/opsalert"
	"github.com/turnguard/turnguard/internal/reload"
	"github.com/turnguard/turnguard/internal/secgate"
	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/internal/version"
	rulepack "github.com/turnguard/turnguard/rules"
	"github.com/turnguard/turnguard/schema"
)

// serve runs the processor until ctx ends, then shuts down in order: the
// workers finish their batches, the connection drains (flushing acks), and
// the embedded server, if any, stops last.
func serve(ctx context.Context, cfg config, stderr io.Writer) error {
	log, err := logging.New(stderr, cfg.logLevel, cfg.logFormat)
	if err != nil {
		return err
	}
	pre, err := preflight(cfg, log)
	if err != nil {
		return err
	}
	// The listeners are bound before NATS starts too: an address in use is
	// the likeliest mistake left. The metrics listener serves from the
	// start: /healthz answers while NATS starts, /readyz says "starting".
	var httpListener net.Listener
	if cfg.httpAddr != "" {
		if httpListener, err = net.Listen("tcp", cfg.httpAddr); err != nil {
			return fmt.Errorf("--http %s: %w", cfg.httpAddr, err)
		}
		defer httpListener.Close()
	}
	if cfg.target.URL == "" && cfg.listen != "" {
		// The embedded server binds its client port itself, after the
		// keys, credentials and store are written: try the address first,
		// so that a port in use leaves the data dir untouched.
		l, err := net.Listen("tcp", cfg.listen)
		if err != nil {
			return fmt.Errorf("--listen %s: %w (choose another --listen, or --listen none)", cfg.listen, err)
		}
		l.Close()
	}
	var mx *metrics.Metrics
	if cfg.metricsAddr != "" {
		l, err := listenMetrics(cfg.metricsAddr, log)
		if err != nil {
			return err
		}
		mx = metrics.New()
		defer serveMetrics(ctx, l, mx.Handler(), log)()
	}
	signer, err := receiptSigner(cfg, mx, log)
	if err != nil {
		return err
	}
	pre.guardian.Receipts = signer
	stateKey, created, err := keyfile.StateKey(cfg.stateKey)
	if err != nil {
		return err
	}
	cfg.processor.StateKey = stateKey
	// The key itself is never logged; processors sharing partitions must
	// all have this file.
	log.Info().Str("file", cfg.stateKey).Bool("created", created).Msg("state values are authenticated with this key")
	g := guardian.New(pre.validator, pre.guardian)
	source := policy.NewSource(pre.rules)
	log.Info().Str("ruleset", pre.rules.Name).Str("revision", pre.rules.Revision).Int("rules", len(pre.rules.Rules)).Strs("files", pre.rules.Files).Msg("rules loaded")

	nc, where, closeNATS, err := connectNATS(cfg, log)
	if err != nil {
		return err
	}
	defer closeNATS()
	// The security role creates its consumers through the processors
	// (docs/SECURITY-MODEL.md "Roles"); stopped before the connection drains.
	stopSecgate, err := secgate.Start(nc, log)
	if err != nil {
		return err
	}
	defer stopSecgate()
	if mx != nil {
		cfg.processor.Observer = mx.Observer()
	}
	p, err := stream.New(nc, g, source, cfg.processor, log)
	if err != nil {
		return err
	}
	if mx != nil {
		if err := mx.Attach(p, metrics.Options{Rules: source, Connected: nc.IsConnected}); err != nil {
			return err
		}
	}
	if cfg.httpAddr != "" {
		// The endpoint serves once its bucket, ACS_HANDSHAKES, exists: the
		// topology has it with --http, and Run ensures it again.
		if err := p.Ensure(ctx); err != nil {
			return err
		}
		stopHTTP, err := startGateway(ctx, cfg, pre, httpListener, nc, p, signer, mx, log)
		if err != nil {
			return err
		}
		defer stopHTTP()
	}
	defer startReload(ctx, cfg, source, nc, signer, mx, log)()
	// The pid is what kill -HUP (rule reload) needs; under go run it is
	// not go run's own.
	log.Info().Str("version", version.String("processor")).Int("pid", os.Getpid()).Str("nats", where).Msg("turnguard starting")
	if err := p.Run(ctx); err != nil {
		return err
	}
	st := p.Stats()
	log.Info().Uint64("processed", st.Processed.Load()).Uint64("dead_lettered", st.DeadLettered.Load()).Msg("turnguard stopped")
	return nil
}

// checked is what preflight read and checked.
type checked struct {
	validator *schema.Validator
	guardian  guardian.Config
	callers   *gateway.Callers
	tls       *tls.Config
	rules     *policy.Set
}

// preflight checks everything that can be checked before anything is
// created or started — keys, the data dir's authority and lock, NATS — so
// that a mistake stops the processor leaving no trace: the endpoint's
// callers file and certificates, the rules, the embedded server's TLS
// files, the key files that exist.
func preflight(cfg config, log zerolog.Logger) (checked, error) {
	var c checked
	var err error
	if c.validator, err = schema.New(); err != nil {
		return c, err
	}
	if c.guardian, err = cfg.core.GuardianConfig(); err != nil {
		return c, err
	}
	if c.callers, c.tls, err = httpSecurity(cfg, log); err != nil {
		return c, err
	}
	if c.rules, err = rulepack.Load(cfg.rules...); err != nil {
		return c, fmt.Errorf("rules:\n%w", err)
	}
	return c, checkFiles(cfg)
}

// receiptSigner loads or creates the receipt key (nil with --receipt-key
// none) and writes its public half next to it.
func receiptSigner(cfg config, mx *metrics.Metrics, log zerolog.Logger) (*receipt.Signer, error) {
	if cfg.receiptKey == receiptKeyNone {
		log.Warn().Msg("decision receipts are off (--receipt-key none): decisions carry no Ed25519 receipt")
		return nil, nil
	}
	signer, created, err := keyfile.ReceiptSigner(cfg.receiptKey)
	if err != nil {
		return nil, err
	}
	if mx != nil {
		signer = signer.WithObserver(time.Now, mx.ReceiptSigned)
	}
	log.Info().Str("file", cfg.receiptKey).Bool("created", created).Str("key_id", signer.KeyID).
		Str("public_key", base64.StdEncoding.EncodeToString(signer.Public())).Msg("decision receipts are signed with this Ed25519 key")
	// The public key next to the private one is what clients on this host
	// load to verify decisions (pkg/client.LoadReceiptKey). Not writing it
	// only costs them that file: GET /receipt-key and the log above still
	// give the key.
	pub := keyfile.ReceiptPublicPath(cfg.receiptKey)
	if err := keyfile.WriteReceiptPublic(pub, signer); err != nil {
		log.Warn().Err(err).Str("file", pub).Msg("write the receipt public key")
	} else {
		log.Info().Str("file", pub).Msg("receipt public key written for clients")
	}
	return signer, nil
}

// connectNATS starts the embedded server (no --nats-url) or connects to
// the configured one. It returns where it is connected, for the log, and
// a close that drains the connection and then stops the embedded server.
func connectNATS(cfg config, log zerolog.Logger) (*nats.Conn, string, func(), error) {
	opts := []nats.Option{nats.Name("turnguard-processor"), nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn().Err(err).Msg("NATS disconnected")
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info().Str("url", nc.ConnectedUrlRedacted()).Msg("NATS reconnected") }),
	}
	stopServer := func() {}
	url := cfg.target.URL
	if url == "" {
		srv, stop, err := startEmbedded(cfg, log)
		if err != nil {
			return nil, "", nil, err
		}
		stopServer = stop
		opts = append(opts, nats.InProcessServer(srv))
		if cfg.auth == authRequired {
			self, err := embeddedProcessorUser(cfg)
			if err != nil {
				stop()
				return nil, "", nil, err
			}
			opts = append(opts, self)
		}
	} else {
		if !cfg.target.Authenticated {
			log.Warn().Str("nats_url", url).Msg("connecting to NATS without credentials (--nats-creds): whoever can reach that server can forge and read everything")
		}
		opts = append(opts, cfg.target.Options...)
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		stopServer()
		return nil, "", nil, fmt.Errorf("connect to NATS %s (from %s): %w", url, cfg.target.Source, err)
	}
	where := nc.ConnectedUrlRedacted()
	if url == "" {
		where = "embedded (in-process)"
	}
	return nc, where, func() {
		if err := nc.Drain(); err != nil {
			log.Warn().Err(err).Msg("drain NATS connection")
		}
		for nc.IsDraining() {
			time.Sleep(10 * time.Millisecond)
		}
		stopServer()
	}, nil
}

// embeddedProcessorUser is the processor's own credential on the embedded
// server, minted from the data dir's authority.
func embeddedProcessorUser(cfg config) (nats.Option, error) {
	auth, err := natsauth.Load(filepath.Join(cfg.dataDir, "auth"))
	if err != nil {
		return nil, err
	}
	return embedded.User(auth, natsauth.User{Role: natsauth.RoleProcessor, Name: "processor-embedded"})
}

// startGateway serves the ACS JSON-RPC endpoint on l and returns its stop.
func startGateway(ctx context.Context, cfg config, pre checked, l net.Listener, nc *nats.Conn, p *stream.Processor, signer *receipt.Signer, mx *metrics.Metrics, log zerolog.Logger) (func(), error) {
	gw, err := gateway.New(ctx, nc, pre.validator, gateway.Config{Tenant: cfg.httpTenant, Callers: pre.callers, Timeout: cfg.decisionTimeout, OnDecisionFailure: cfg.onDecisionFailure,
		Keys: pre.guardian.Keys, RequireSignatures: pre.guardian.RequireSignatures, SkewWindow: cfg.core.SkewWindow, Handshake: cfg.handshake,
		Receipts: signer, Ready: p.Ready,
		MaxBatch: cfg.httpMaxBatch, MaxDeadLetters: cfg.httpMaxDeadLetters, WriteTimeout: cfg.httpLimits.writeTimeout,
		StateKey: cfg.processor.StateKey}, log)
	if err != nil {
		return nil, err
	}
	handler := gw.Handler()
	if mx != nil {
		if err := mx.AttachGateway(gw.Stats()); err != nil {
			return nil, err
		}
		handler = mx.InstrumentHTTP(handler)
	}
	stopHTTP := serveHTTPOn(ctx, l, pre.tls, handler, cfg.httpLimits, log)
	return func() {
		stopHTTP()
		st := gw.Stats()
		log.Info().Uint64("unauthenticated", st.Unauthenticated.Load()).Uint64("dead_lettered", st.DeadLettered.Load()).Msg("ACS JSON-RPC endpoint stopped")
	}, nil
}

// startReload reloads the rules on SIGHUP and file changes until ctx ends,
// reporting failures as alerts (and metrics); it returns what stops
// listening for SIGHUP.
func startReload(ctx context.Context, cfg config, source *policy.Source, nc *nats.Conn, signer *receipt.Signer, mx *metrics.Metrics, log zerolog.Logger) func() {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	rcfg := reload.Config{Paths: cfg.rules, Source: source, Signals: hup, Log: log,
		Failed: func(err error) { reportReloadFailure(nc, signer, cfg.rules, err, log) }}
	if mx != nil {
		rcfg.Failed = func(err error) {
			mx.ReloadResult(err)
			reportReloadFailure(nc, signer, cfg.rules, err, log)
		}
		rcfg.Loaded = func(*policy.Set) { mx.ReloadResult(nil) }
	}
	go func() {
		if err := reload.Run(ctx, rcfg); err != nil {
			log.Error().Err(err).Msg("rule reloading is off")
		}
	}()
	return func() { signal.Stop(hup) }
}

// startEmbedded starts the embedded NATS JetStream server: with
// authentication (the default), it first makes sure the data dir holds an
// authority and one credential per role for the operator to hand out.
func startEmbedded(cfg config, log zerolog.Logger) (*server.Server, func(), error) {
	ecfg := embedded.Config{DataDir: cfg.dataDir, Listen: cfg.listen, TLSCert: cfg.listenTLSCert, TLSKey: cfg.listenTLSKey, Logger: log}
	if cfg.auth == authNone {
		log.Warn().Msg("AUTHENTICATION IS OFF (--auth none): any local process can publish decisions, edit state and delete streams; development only")
	} else {
		auth, created, err := natsauth.LoadOrCreate(filepath.Join(cfg.dataDir, "auth"))
		if err != nil {
			return nil, nil, err
		}
		credsDir := filepath.Join(cfg.dataDir, "creds")
		written, err := writeRoleCreds(auth, credsDir, false)
		if err != nil {
			return nil, nil, err
		}
		log.Info().Bool("created", created).Str("account", auth.AccountPublicKey()).Str("creds_dir", credsDir).Strs("written", written).
			Msg("embedded NATS requires credentials: agent.creds (tenant default), security.creds, admin.creds; mint more with processor creds add")
		ecfg.Auth = auth
	}
	srv, err := embedded.Start(ecfg)
	if err != nil {
		return nil, nil, err
	}
	clientURL := "none (in-process only)"
	if cfg.listen != "" {
		clientURL = srv.ClientURL()
	}
	log.Info().Str("data_dir", cfg.dataDir).Str("client_url", clientURL).Msg("embedded NATS JetStream server started")
	return srv, func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	}, nil
}

// reportReloadFailure publishes an operational alert saying why a rule set
// was refused, with its receipt (signer nil: none), so that a forged
// "reload failed" on acs.alerts._system tells itself apart from a real
// one. It is best effort: the failure is logged either way.
func reportReloadFailure(nc *nats.Conn, signer *receipt.Signer, files []string, err error, log zerolog.Logger) {
	subject, f := alert.Operational("rules_reload_failed", "high", "Rule reload refused",
		"the new rule set does not load; the last good one keeps running:\n"+err.Error(), time.Now(),
		map[string]any{"files": files, "error": err.Error()})
	m, merr := opsalert.Msg(subject, f, signer)
	if merr != nil {
		log.Error().Err(merr).Msg("encode reload alert")
		return
	}
	if perr := nc.PublishMsg(m); perr != nil {
		log.Error().Err(perr).Msg("publish reload alert")
	}
}

// httpSecurity loads what authenticates the HTTP endpoint's callers and
// its TLS configuration (nil: plain HTTP). parseFlags has checked the
// flags' combinations; this checks the files.
func httpSecurity(cfg config, log zerolog.Logger) (*gateway.Callers, *tls.Config, error) {
	if cfg.httpAddr == "" {
		return nil, nil, nil
	}
	var callers *gateway.Callers
	if cfg.httpTokens != "" {
		var err error
		if callers, err = gateway.LoadCallers(cfg.httpTokens); err != nil {
			return nil, nil, fmt.Errorf("--http-tokens: %w", err)
		}
		switch {
		case callers.Len() == 0:
			return nil, nil, fmt.Errorf("--http-tokens %s lists no callers: add one with processor http-token add", cfg.httpTokens)
		case callers.HasCerts() && cfg.httpClientCA == "":
			return nil, nil, fmt.Errorf("--http-tokens %s has certificate callers: give --http-client-ca to verify their certificates", cfg.httpTokens)
		case cfg.httpClientCA != "" && !callers.HasCerts():
			log.Warn().Str("file", cfg.httpTokens).Msg("--http-client-ca is set but no caller has a cert_subject, cert_uri or cert_dns: client certificates authenticate nobody")
		}
		if fi, err := os.Stat(cfg.httpTokens); err == nil && fi.Mode().Perm()&0o022 != 0 {
			// The file holds no secret, but whoever can write it decides
			// who may call the Guardian, and as which tenant.
			log.Warn().Str("file", cfg.httpTokens).Str("mode", fi.Mode().Perm().String()).Msg("--http-tokens is writable by group or others: anyone who can write it can admit callers (chmod 600)")
		}
		log.Info().Str("file", cfg.httpTokens).Int("callers", callers.Len()).Strs("tenants", callers.Tenants()).Msg("HTTP callers loaded")
	} else {
		log.Warn().Str("http", cfg.httpAddr).Str("tenant", cfg.httpTenant).
			Msg("SECURITY: the ACS endpoint is OPEN (--auth none): anyone who reaches it can send envelopes as tenant " + cfg.httpTenant + "; give --http-tokens to authenticate callers")
	}
	if cfg.httpTLSCert == "" {
		return callers, nil, nil
	}
	tlsConfig, err := gateway.ServerTLS(gateway.TLSFiles{Cert: cfg.httpTLSCert, Key: cfg.httpTLSKey, ClientCA: cfg.httpClientCA,
		RequireClientCert: callers != nil && !callers.HasTokens()})
	if err != nil {
		return nil, nil, err
	}
	return callers, tlsConfig, nil
}

// serveHTTP serves the gateway, over TLS when tlsConfig is set, until ctx
// ends, within limits; the returned stop waits for in-flight requests
// (bounded) before returning.
func serveHTTP(ctx context.Context, addr string, tlsConfig *tls.Config, h http.Handler, limits httpLimits, log zerolog.Logger) (net.Addr, func(), error) {
	raw, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("--http %s: %w", addr, err)
	}
	return raw.Addr(), serveHTTPOn(ctx, raw, tlsConfig, h, limits, log), nil
}

// serveHTTPOn is serveHTTP on a listener bound already.
func serveHTTPOn(ctx context.Context, raw net.Listener, tlsConfig *tls.Config, h http.Handler, limits httpLimits, log zerolog.Logger) func() {
	scheme := "http"
	if tlsConfig != nil {
		scheme = "https"
	}
	stop := serveBounded(ctx, raw, tlsConfig, h, limits, "HTTP endpoint", 10*time.Second, log)
	c := limits.conns()
	log.Info().Str("url", scheme+"://"+raw.Addr().String()+"/acs").Int("max_conns", c.MaxConns).Int("max_unauth_conns", c.MaxUnproven).
		Int("max_conns_per_ip", c.MaxPerSource).Dur("unauth_timeout", c.UnprovenTimeout).Msg("ACS JSON-RPC endpoint listening")
	return stop
}

// checkFiles checks the files serve reads later, after it has created
// keys or started NATS: the embedded server's TLS pair, and key files
// that exist (missing ones are created, but only once everything else is
// known to be right).
func checkFiles(cfg config) error {
	if cfg.target.URL == "" && cfg.listenTLSCert != "" {
		if _, err := tls.LoadX509KeyPair(cfg.listenTLSCert, cfg.listenTLSKey); err != nil {
			return fmt.Errorf("--listen-tls-cert, --listen-tls-key: %w", err)
		}
	}
	keys := []struct{ flag, path string }{{"--state-key", cfg.stateKey}}
	if cfg.receiptKey != receiptKeyNone {
		keys = append(keys, struct{ flag, path string }{"--receipt-key", cfg.receiptKey})
	}
	for _, k := range keys {
		f, err := os.Open(k.path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", k.flag, err)
		}
		f.Close()
	}
	return nil
}

// serveBounded serves h on raw, over TLS when tlsConfig is set, within
// limits, until the returned stop: it waits up to grace for in-flight
// requests, then for the server to end. The ACS endpoint and the metrics
// listener both serve this way; what names the server in its log.
func serveBounded(ctx context.Context, raw net.Listener, tlsConfig *tls.Config, h http.Handler, limits httpLimits, what string, grace time.Duration, log zerolog.Logger) func() {
	// Counted before TLS, so that clients stalling in the handshake hold
	// a slot, and the short deadline of connections not yet authenticated,
	// as well.
	cl := connlimit.New(raw, limits.conns())
	var l net.Listener = cl
	if tlsConfig != nil {
		l = tls.NewListener(l, tlsConfig)
	}
	srv := &http.Server{Handler: h, TLSConfig: tlsConfig, ConnContext: cl.ConnContext,
		// A client that trickles its headers or its body is cut off: it
		// cannot hold a connection (and a slot of the connection limit)
		// for longer than these, however slowly it sends.
		ReadHeaderTimeout: limits.readHeaderTimeout, ReadTimeout: limits.readTimeout,
		WriteTimeout: limits.writeTimeout, IdleTimeout: limits.idleTimeout,
		// The server's own errors — TLS handshake failures, such as a
		// client without an acceptable certificate, among them — go to the
		// structured log (warn) instead of plain lines on stderr.
		ErrorLog: stdlog.New(serverLog{log}, "", 0)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg(what + " stopped")
		}
	}()
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-done
	}
}

// serverLog writes net/http's error log lines to zerolog.
type serverLog struct{ log zerolog.Logger }

func (s serverLog) Write(p []byte) (int, error) {
	s.log.Warn().Str("source", "http").Msg(strings.TrimSpace(string(p)))
	return len(p), nil
}
