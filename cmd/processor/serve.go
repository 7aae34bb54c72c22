package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/alert"
	"github.com/turnguard/turnguard/internal/cliflag"
	"github.com/turnguard/turnguard/internal/gateway"
	"github.com/turnguard/turnguard/internal/guardian"
	"github.com/turnguard/turnguard/internal/logging"
	"github.com/turnguard/turnguard/internal/receipt"
	"github.com/turnguard/turnguard/internal/reload"
	"github.com/turnguard/turnguard/internal/rules"
	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/internal/turnstate"
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
	v, err := schema.New()
	if err != nil {
		return err
	}
	gcfg, err := cfg.core.GuardianConfig()
	if err != nil {
		return err
	}
	var signer *receipt.Signer
	if cfg.receiptKey == receiptKeyNone {
		log.Warn().Msg("decision receipts are off (--receipt-key none): decisions carry no Ed25519 receipt")
	} else {
		var created bool
		if signer, created, err = receipt.LoadOrCreate(cfg.receiptKey); err != nil {
			return err
		}
		gcfg.Receipts = signer
		cfg.processor.ReceiptKeyID = signer.KeyID
		log.Info().Str("file", cfg.receiptKey).Bool("created", created).Str("key_id", signer.KeyID).
			Str("public_key", base64.StdEncoding.EncodeToString(signer.Public())).Msg("decision receipts are signed with this Ed25519 key")
	}
	stateKey, created, err := turnstate.LoadOrCreateKey(cfg.stateKey)
	if err != nil {
		return err
	}
	cfg.processor.StateKey = stateKey
	// The key itself is never logged; processors sharing partitions must
	// all have this file.
	log.Info().Str("file", cfg.stateKey).Bool("created", created).Msg("state values are authenticated with this key")
	g := guardian.New(v, gcfg)
	rs, err := rules.LoadFiles(cfg.rules...)
	if err != nil {
		return fmt.Errorf("rules:\n%w", err)
	}
	source := stream.NewRuleSource(rs)
	log.Info().Str("ruleset", rs.Name).Str("revision", rs.Revision).Int("rules", len(rs.Rules)).Strs("files", rs.Files).Msg("rules loaded")

	var srv *server.Server
	opts := []nats.Option{nats.Name("turnguard-processor"), nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn().Err(err).Msg("NATS disconnected")
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info().Str("url", nc.ConnectedUrlRedacted()).Msg("NATS reconnected") }),
	}
	url := cfg.natsURL
	if url == "" {
		srv, err = stream.StartEmbedded(stream.EmbeddedConfig{DataDir: cfg.dataDir, Listen: cfg.listen, Logger: log})
		if err != nil {
			return err
		}
		defer func() {
			srv.Shutdown()
			srv.WaitForShutdown()
		}()
		opts = append(opts, nats.InProcessServer(srv))
		clientURL := "none (in-process only)"
		if cfg.listen != "" {
			clientURL = "nats://" + cfg.listen
		}
		log.Info().Str("data_dir", cfg.dataDir).Str("client_url", clientURL).Msg("embedded NATS JetStream server started")
	} else if cfg.natsCreds != "" {
		opts = append(opts, nats.UserCredentials(cfg.natsCreds))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return fmt.Errorf("connect to NATS %s: %w", url, err)
	}
	defer func() {
		if err := nc.Drain(); err != nil {
			log.Warn().Err(err).Msg("drain NATS connection")
		}
		for nc.IsDraining() {
			time.Sleep(10 * time.Millisecond)
		}
	}()
	p, err := stream.New(nc, g, source, cfg.processor, log)
	if err != nil {
		return err
	}
	if cfg.httpAddr != "" {
		gw, err := gateway.New(ctx, nc, v, gateway.Config{Tenant: cfg.httpTenant, Timeout: cfg.decisionTimeout, OnDecisionFailure: cfg.onDecisionFailure,
			Keys: gcfg.Keys, RequireSignatures: gcfg.RequireSignatures, SkewWindow: cfg.core.SkewWindow, Handshake: cfg.handshake,
			Replicas: cfg.processor.Topology.Replicas, HandshakeTTL: cfg.processor.Topology.SessionTTL, Receipts: signer, Ready: p.Ready}, log)
		if err != nil {
			return err
		}
		stopHTTP, err := serveHTTP(ctx, cfg.httpAddr, gw.Handler(), log)
		if err != nil {
			return err
		}
		defer stopHTTP()
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		err := reload.Run(ctx, reload.Config{Paths: cfg.rules, Source: source, Signals: hup, Log: log,
			Failed: func(err error) { reportReloadFailure(nc, cfg.rules, err, log) }})
		if err != nil {
			log.Error().Err(err).Msg("rule reloading is off")
		}
	}()
	where := nc.ConnectedUrlRedacted()
	if srv != nil {
		where = "embedded (in-process)"
	}
	log.Info().Str("version", cliflag.Version()).Str("nats", where).Msg("turnguard starting")
	if err := p.Run(ctx); err != nil {
		return err
	}
	st := p.Stats()
	log.Info().Uint64("processed", st.Processed.Load()).Uint64("dead_lettered", st.DeadLettered.Load()).Msg("turnguard stopped")
	return nil
}

// reportReloadFailure publishes an operational alert saying why a rule set
// was refused. It is best effort: the failure is logged either way.
func reportReloadFailure(nc *nats.Conn, files []string, err error, log zerolog.Logger) {
	subject, f := alert.Operational("rules_reload_failed", "high", "Rule reload refused",
		"the new rule set does not load; the last good one keeps running:\n"+err.Error(), time.Now(),
		map[string]any{"files": files, "error": err.Error()})
	data, merr := json.Marshal(f)
	if merr != nil {
		log.Error().Err(merr).Msg("encode reload alert")
		return
	}
	if perr := nc.Publish(subject, data); perr != nil {
		log.Error().Err(perr).Msg("publish reload alert")
	}
}

// serveHTTP serves the gateway until ctx ends; the returned stop waits for
// in-flight requests (bounded) before returning.
func serveHTTP(ctx context.Context, addr string, h http.Handler, log zerolog.Logger) (func(), error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--http %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("HTTP endpoint stopped")
		}
	}()
	log.Info().Str("url", "http://"+l.Addr().String()+"/acs").Msg("ACS JSON-RPC endpoint listening")
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}, nil
}
