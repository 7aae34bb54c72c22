package embedded

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/natsauth"
)

// MaxPayload is the embedded server's max_payload. It is above the
// ACS_HOOKS 1 MiB message limit so that a refused message of up to that size
// still fits, with its headers, into the dead-letter stream.
const MaxPayload = 2 << 20

// The embedded server's slow-consumer bounds. A client that does not read
// what it subscribed to — a subscriber on acs.> that never reads, say —
// is disconnected as a slow consumer once this much is waiting for it (the
// server stops queueing for it at once; the socket is closed when the
// blocked write gives up), or once a write to it has blocked this long,
// instead of the server holding ever more of its messages in memory. They are nats-server's own defaults,
// set here so that an upgrade cannot change them unnoticed: lower would
// risk cutting off the processor itself, whose partition workers pull up
// to --batch-size envelopes of up to 1 MiB at a time.
const (
	MaxPending           = 64 << 20
	DefaultWriteDeadline = 10 * time.Second
)

// Config configures the in-process NATS JetStream server.
type Config struct {
	// DataDir holds the JetStream store (under DataDir/jetstream).
	DataDir string
	// Listen is the client address host:port (port 0: any free port, see
	// the server's ClientURL); empty means no client listener (in-process
	// connections only).
	Listen string
	// Auth, when set, makes the server trust only credentials the
	// authority minted (operator mode); nil runs it open (--auth none).
	Auth *natsauth.Authority
	// TLSCert and TLSKey, when set, make the client port speak TLS only.
	TLSCert, TLSKey string
	Logger          zerolog.Logger
	// WriteDeadline is how long a write to a client may block before the
	// client is disconnected as a slow consumer; 0: DefaultWriteDeadline.
	WriteDeadline time.Duration
}

// Start starts a single-node NATS JetStream server in this process
// and waits until it accepts connections.
func Start(cfg Config) (*server.Server, error) {
	opts, err := serverOptions(cfg)
	if err != nil {
		return nil, err
	}
	release, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	if cfg.Auth != nil {
		if err := cfg.Auth.ConfigureServer(opts); err != nil {
			release()
			return nil, fmt.Errorf("embedded NATS server authentication: %w", err)
		}
		if err := adoptOpenStore(opts.StoreDir, cfg.Auth.AccountPublicKey(), cfg.Logger); err != nil {
			release()
			return nil, err
		}
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

// serverOptions are the server's options for cfg, authentication aside.
func serverOptions(cfg Config) (*server.Options, error) {
	opts := &server.Options{
		ServerName: "turnguard",
		JetStream:  true,
		StoreDir:   filepath.Join(cfg.DataDir, "jetstream"),
		MaxPayload: MaxPayload,
		MaxPending: MaxPending,
		// WriteTimeout's default policy: a client, not a route, is closed.
		WriteDeadline: DefaultWriteDeadline,
		// The processor owns signal handling and shuts the server down itself.
		NoSigs: true,
	}
	if cfg.WriteDeadline > 0 {
		opts.WriteDeadline = cfg.WriteDeadline
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
		if p == 0 {
			// Port 0 means the server's default (4222) to nats-server;
			// here it means any free port, as net.Listen has it.
			p = server.RANDOM_PORT
		}
		opts.Host, opts.Port = host, p
	}
	if cfg.TLSCert != "" {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: cfg.TLSCert, KeyFile: cfg.TLSKey})
		if err != nil {
			return nil, fmt.Errorf("embedded NATS server TLS: %w", err)
		}
		opts.TLSConfig, opts.TLS, opts.TLSTimeout = tc, true, 2
	}
	return opts, nil
}

// openAccountDir is where an open server (no accounts) keeps its streams.
const openAccountDir = "$G"

// adoptOpenStore moves the streams of a store written by an open server
// (earlier versions, or --auth none) into the account that holds them with
// authentication on, the first time authentication is on: the streams are
// the same, only the account that owns them changes. Once the account has
// a store of its own, an open store beside it is left alone (said loudly:
// its streams are not visible with authentication on).
func adoptOpenStore(storeDir, account string, log zerolog.Logger) error {
	// The server keeps each account's streams under <store>/jetstream.
	storeDir = filepath.Join(storeDir, server.JetStreamStoreDir)
	open := filepath.Join(storeDir, openAccountDir)
	if _, err := os.Stat(filepath.Join(open, "streams")); err != nil {
		return nil
	}
	dst := filepath.Join(storeDir, account)
	if _, err := os.Stat(dst); err == nil {
		log.Warn().Str("dir", open).Msg("this data dir also holds streams written with --auth none; they are not visible with authentication on")
		return nil
	}
	if err := os.Rename(open, dst); err != nil {
		return fmt.Errorf("move the open store %s into the authenticated account: %w", open, err)
	}
	log.Info().Str("from", open).Str("to", dst).Msg("streams written without authentication now belong to the turnguard account")
	return nil
}

// User is the connection option of an in-process client of an
// authenticated embedded server, minted for the role on the spot: the
// processor's own identity never has to lie in a file.
func User(auth *natsauth.Authority, u natsauth.User) (nats.Option, error) {
	j, seed, err := auth.Issue(u)
	if err != nil {
		return nil, err
	}
	return nats.UserJWTAndSeed(j, string(seed)), nil
}

// serverLogger routes nats-server's log lines into zerolog. The server's
// notices are routine, so they go out at debug level; a fatal error is also
// handed to Start.
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
