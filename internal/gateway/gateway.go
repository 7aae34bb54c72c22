// Package gateway is turnguard's synchronous ACS Guardian over HTTP: the
// JSON-RPC 2.0 endpoint existing ACS adapters speak (POST /acs, answered
// with HTTP 200 and a JSON-RPC body, as the ACS Go reference Guardian does).
// It answers handshake/hello itself; every other method goes into the hooks
// stream and the answer is the processor's decision, so a synchronous
// caller gets the same durability as a publisher.
package gateway

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/receipt"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/pkg/client"
	"github.com/turnguard/turnguard/schema"
)

// DefaultMaxBodyBytes bounds a request body (a batch included).
const DefaultMaxBodyBytes = 1 << 20

// DefaultMaxBatch bounds the items of a JSON-RPC batch, and
// DefaultMaxDeadLetters the dead letters one request can make.
const (
	DefaultMaxBatch       = 100
	DefaultMaxDeadLetters = 10
)

// Config configures the gateway.
type Config struct {
	// Tenant is the tenant of the envelopes of an open endpoint (Callers
	// nil); an authenticated caller's envelopes are its own tenant's.
	Tenant string
	// Callers, when set, authenticates every POST /acs by bearer token or
	// client certificate: a request of no caller is answered 401 without
	// its body being read. Nil leaves the endpoint open (--auth none).
	Callers *Callers
	// Timeout is how long a call waits for its decision. Without a decision
	// in time the answer is a JSON-RPC error, so the agent applies its
	// on_decision_failure; the ServerHello tells clients to wait a second
	// longer (timeout_config.default_ms), so that this error reaches them.
	Timeout time.Duration
	// OnDecisionFailure is the posture advertised in the ServerHello:
	// proceed or deny.
	OnDecisionFailure string
	// Keys, when set, verifies handshake signatures and signs every
	// response the endpoint makes itself (the processor signs its
	// decisions); RequireSignatures refuses an unsigned hello.
	Keys              *acs.Keyring
	RequireSignatures bool
	// SkewWindow is the advertised skew_window_ms, and the window a
	// hello's timestamp must fall in.
	SkewWindow time.Duration
	// Handshake says whether steps need a handshake (default required).
	Handshake HandshakePolicy
	// Receipts, when set, adds an Ed25519 receipt to the responses the
	// endpoint makes itself and is served at GET /receipt-key.
	Receipts     *receipt.Signer
	MaxBodyBytes int64
	// MaxBatch bounds the items of a batch: a larger one is refused as a
	// whole (-32600 batch_too_large, one dead letter), before any item is
	// decided, so that one request cannot queue thousands of decisions.
	MaxBatch int
	// MaxDeadLetters bounds the dead letters the endpoint itself keeps for
	// one request (a batch of invalid items); the rest are counted in one
	// summary record, so that one request cannot flood ACS_DLQ.
	MaxDeadLetters int
	// WriteTimeout is the HTTP server's write timeout, from the end of a
	// request's headers to the end of its answer. When set, each item of a
	// batch gets it afresh: the items are decided one after another, each
	// waiting up to Timeout, so a batch would otherwise be cut off whole
	// once its decisions together took longer. MaxBatch bounds how long a
	// batch can hold its connection.
	WriteTimeout time.Duration
	// Ready reports whether the processor is running (GET /readyz).
	Ready func() error
	// StateKey is the processor's state key (at least
	// turnstate.StateKeySize bytes). It seals the ACS_HANDSHAKES records
	// (a record the endpoint did not write for exactly its key is taken as
	// absent and alerted), and attests the caller of every envelope the
	// endpoint publishes, so that the processor can bind sessions to their
	// callers (attest.go).
	StateKey []byte
	// Now is the clock the ACS_HANDSHAKES records age by: when a
	// negotiation was made and when, in use, it is due to be written again
	// (nil: time.Now). Tests set it to age records without waiting.
	Now func() time.Time
}

// Gateway serves the endpoint.
type Gateway struct {
	cfg Config
	nc  *nats.Conn
	js  jetstream.JetStream
	// clients decide for each tenant a caller may belong to; fixed at New.
	clients    map[string]*client.Client
	attest     *attestor
	validator  *schema.Validator
	handshakes *handshakes
	// states reads session states for the native hook endpoints.
	states *sessionStates
	// anonymous is the caller of every request of an open endpoint.
	anonymous *Caller
	stats     Stats
	log       zerolog.Logger
	// unauthLog logs 401s, at most a burst a second: strangers choose how
	// many requests they send, not how much the Guardian logs. Stats
	// counts them all.
	unauthLog zerolog.Logger
}

// Stats counts what the endpoint turned away.
type Stats struct {
	// Unauthenticated counts 401 answers; DeadLettered the refusals the
	// endpoint itself kept in ACS_DLQ.
	Unauthenticated atomic.Uint64
	DeadLettered    atomic.Uint64
	// DeadLettersOmitted counts refusals beyond a request's dead-letter
	// limit, kept only as counts in its summary record.
	DeadLettersOmitted atomic.Uint64
	// HandshakesInvalid counts ACS_HANDSHAKES records read that did not
	// verify under the state key (taken as absent).
	HandshakesInvalid atomic.Uint64
}

// Stats returns the endpoint's counters.
func (g *Gateway) Stats() *Stats { return &g.stats }

// New returns a gateway deciding through nc. It opens the ACS_HANDSHAKES
// bucket when it first needs it; the processor creates it (its topology's
// HandshakeTTL).
func New(ctx context.Context, nc *nats.Conn, v *schema.Validator, cfg Config, log zerolog.Logger) (*Gateway, error) {
	if cfg.Tenant == "" {
		cfg.Tenant = "default"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = DefaultMaxBatch
	}
	if cfg.MaxDeadLetters <= 0 {
		cfg.MaxDeadLetters = DefaultMaxDeadLetters
	}
	if cfg.OnDecisionFailure == "" {
		cfg.OnDecisionFailure = "deny"
	}
	if cfg.Handshake == "" {
		cfg.Handshake = HandshakeRequired
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	tenants := []string{cfg.Tenant}
	if cfg.Callers != nil {
		tenants = cfg.Callers.Tenants()
	}
	if cfg.Receipts == nil {
		log.Warn().Msg("receipts are off: the HTTP endpoint takes any decision with the right stream sequence, so whoever may publish on acs.decisions.> can answer in turnguard's name")
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	alarm := &forgeryAlarm{js: js, signer: cfg.Receipts, log: log}
	clients := map[string]*client.Client{}
	for _, t := range tenants {
		if err := acs.CheckTenant(t); err != nil {
			return nil, fmt.Errorf("gateway: %w", err)
		}
		c, err := client.New(nc, decisionOptions(cfg, t, log, alarm.drop))
		if err != nil {
			return nil, fmt.Errorf("gateway: client of tenant %s: %w", t, err)
		}
		clients[t] = c
	}
	sealer, err := turnstate.NewSealer(cfg.StateKey)
	if err != nil {
		return nil, fmt.Errorf("gateway: handshake records: %w", err)
	}
	g := &Gateway{cfg: cfg, nc: nc, js: js, clients: clients, attest: &attestor{sealer: sealer}, validator: v,
		anonymous: &Caller{Tenant: cfg.Tenant}, log: log,
		unauthLog: log.Sample(&zerolog.BurstSampler{Burst: unauthLogBurst, Period: time.Second})}
	hsAlarm := &handshakeAlarm{js: js, signer: cfg.Receipts, log: log, count: &g.stats.HandshakesInvalid}
	g.handshakes = newHandshakes(js, sealer, cfg.Now, hsAlarm.invalid)
	g.states = &sessionStates{js: js, sealer: sealer}
	return g, nil
}

// unauthLogBurst is how many 401s a second are logged.
const unauthLogBurst = 20

// decisionOptions configure how the endpoint waits for decisions: it takes
// a message on the decision subject as the answer only when its receipt
// verifies with the processor's own key for the envelope it stored, and
// logs everything else. Without receipts (--receipt-key none) it can only
// trust NATS permissions, and says so.
func decisionOptions(cfg Config, tenant string, log zerolog.Logger, alarm func(client.Drop)) client.Options {
	// A forger can publish as fast as it likes: the warnings are sampled
	// (DecisionStats counts every drop), so it cannot flood the log.
	dropLog := log.Sample(&zerolog.BurstSampler{Burst: 20, Period: time.Second})
	// Unsigned: the endpoint attests its callers with a MAC instead
	// (attest.go); the processor's own NATS user is not one of them.
	opt := client.Options{Tenant: tenant, Timeout: cfg.Timeout, Posture: client.Deny, Unsigned: true,
		OnDrop: func(d client.Drop) {
			dropLog.Warn().Str("subject", d.Subject).Str("request_id", d.RequestID).Uint64("claimed_seq", d.Seq).Bool("forged", d.Forged()).
				Err(d.Reason).Msg("dropped a message on a decision subject that is not the answer to the envelope published")
			alarm(d)
		}}
	if cfg.Receipts != nil {
		opt.TrustedKeys = []ed25519.PublicKey{cfg.Receipts.Public()}
	} else {
		opt.InsecureAcceptUnsignedDecisions = true
	}
	return opt
}

// DecisionStats counts the decisions the endpoint took and the messages
// on decision subjects it dropped (forged, or answering other envelopes).
func (g *Gateway) DecisionStats() client.Stats {
	var sum client.Stats
	for _, c := range g.clients {
		st := c.Stats()
		sum.Accepted += st.Accepted
		sum.DroppedUnverified += st.DroppedUnverified
		sum.DroppedOtherEnvelope += st.DroppedOtherEnvelope
	}
	return sum
}
