package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/turnguard/turnguard/internal/guardian"
	"github.com/turnguard/turnguard/internal/logging"
	"github.com/turnguard/turnguard/internal/stream"
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
	g := guardian.New(v, guardian.Config{MaxEnvelopeBytes: cfg.maxBytes})

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
	p, err := stream.New(nc, g, cfg.processor, log)
	if err != nil {
		return err
	}
	where := nc.ConnectedUrlRedacted()
	if srv != nil {
		where = "embedded (in-process)"
	}
	log.Info().Str("version", version()).Str("nats", where).Msg("turnguard starting")
	if err := p.Run(ctx); err != nil {
		return err
	}
	st := p.Stats()
	log.Info().Uint64("processed", st.Processed.Load()).Uint64("dead_lettered", st.DeadLettered.Load()).Msg("turnguard stopped")
	return nil
}
