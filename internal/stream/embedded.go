package stream

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"
)

// EmbeddedMaxPayload is the embedded server's max_payload. It is above the
// ACS_HOOKS 1 MiB message limit so that a refused message of up to that size
// still fits, with its headers, into the dead-letter stream.
const EmbeddedMaxPayload = 2 << 20

// EmbeddedConfig configures the in-process NATS JetStream server.
type EmbeddedConfig struct {
	// DataDir holds the JetStream store (under DataDir/jetstream).
	DataDir string
	// Listen is the client address host:port; empty means no client
	// listener (in-process connections only).
	Listen string
	Logger zerolog.Logger
}

// StartEmbedded starts a single-node NATS JetStream server in this process
// and waits until it accepts connections.
func StartEmbedded(cfg EmbeddedConfig) (*server.Server, error) {
	opts := &server.Options{
		ServerName: "turnguard",
		JetStream:  true,
		StoreDir:   filepath.Join(cfg.DataDir, "jetstream"),
		MaxPayload: EmbeddedMaxPayload,
		// The processor owns signal handling and shuts the server down itself.
		NoSigs: true,
	}
	if cfg.Listen == "" {
		opts.DontListen = true
	} else {
		host, port, err := net.SplitHostPort(cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("embedded server listen address %q: %w", cfg.Listen, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return nil, fmt.Errorf("embedded server listen port %q: %w", port, err)
		}
		opts.Host, opts.Port = host, p
	}
	release, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	s, err := server.NewServer(opts)
	if err != nil {
		release()
		return nil, fmt.Errorf("embedded NATS server: %w", err)
	}
	// The lock lives as long as the server: released once it has shut
	// down, whoever shuts it down.
	go func() {
		s.WaitForShutdown()
		release()
	}()
	fatal := make(chan string, 1)
	s.SetLoggerV2(serverLogger{log: cfg.Logger.With().Str("component", "nats-server").Logger(), fatal: fatal}, false, false, false)
	go s.Start()
	ready := make(chan bool, 1)
	go func() { ready <- s.ReadyForConnections(30 * time.Second) }()
	select {
	case msg := <-fatal:
		// e.g. the client port is taken: without this the server would run
		// on in-process and the nats CLI would reach whatever holds the port.
		s.Shutdown()
		return nil, fmt.Errorf("embedded NATS server: %s (choose another --listen, or --listen none)", msg)
	case ok := <-ready:
		if !ok {
			s.Shutdown()
			return nil, fmt.Errorf("embedded NATS server did not become ready (store %s, listen %q)", opts.StoreDir, cfg.Listen)
		}
	}
	return s, nil
}

// serverLogger routes nats-server's log lines into zerolog. The server's
// notices are routine, so they go out at debug level; a fatal error is also
// handed to StartEmbedded.
type serverLogger struct {
	log   zerolog.Logger
	fatal chan<- string
}

func (l serverLogger) Noticef(format string, v ...any) { l.log.Debug().Msgf(format, v...) }
func (l serverLogger) Warnf(format string, v ...any)   { l.log.Warn().Msgf(format, v...) }
func (l serverLogger) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.log.Error().Msg(msg)
	select {
	case l.fatal <- msg:
	default:
	}
}
func (l serverLogger) Errorf(format string, v ...any) { l.log.Error().Msgf(format, v...) }
func (l serverLogger) Debugf(format string, v ...any) { l.log.Trace().Msgf(format, v...) }
func (l serverLogger) Tracef(format string, v ...any) { l.log.Trace().Msgf(format, v...) }
