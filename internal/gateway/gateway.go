// Package gateway is turnguard's synchronous ACS Guardian over HTTP: the
// JSON-RPC 2.0 endpoint existing ACS adapters speak (POST /acs, answered
// with HTTP 200 and a JSON-RPC body, as the ACS Go reference Guardian does).
// It answers handshake/hello itself; every other method goes into the hooks
// stream and the answer is the processor's decision, so a synchronous
// caller gets the same durability as a publisher.
package gateway

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/acs"
	"github.com/turnguard/turnguard/internal/msghdr"
	"github.com/turnguard/turnguard/internal/opsalert"
	"github.com/turnguard/turnguard/internal/receipt"
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
	// Replicas and HandshakeTTL configure the ACS_HANDSHAKES bucket when
	// it is created (defaults 1 and 24h).
	Replicas     int
	HandshakeTTL time.Duration
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
}

// Gateway serves the endpoint.
type Gateway struct {
	cfg Config
	nc  *nats.Conn
	js  jetstream.JetStream
	// clients decide for each tenant a caller may belong to; fixed at New.
	clients    map[string]*client.Client
	validator  *schema.Validator
	handshakes *handshakes
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
}

// Stats returns the endpoint's counters.
func (g *Gateway) Stats() *Stats { return &g.stats }

// New returns a gateway deciding through nc. It opens (or creates) the
// ACS_HANDSHAKES bucket.
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
	if cfg.Replicas < 1 {
		cfg.Replicas = 1
	}
	if cfg.HandshakeTTL <= 0 {
		cfg.HandshakeTTL = 24 * time.Hour
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
	hs, err := openHandshakes(ctx, js, cfg.Replicas, cfg.HandshakeTTL)
	if err != nil {
		return nil, err
	}
	return &Gateway{cfg: cfg, nc: nc, js: js, clients: clients, validator: v, handshakes: hs,
		anonymous: &Caller{Tenant: cfg.Tenant}, log: log,
		unauthLog: log.Sample(&zerolog.BurstSampler{Burst: unauthLogBurst, Period: time.Second})}, nil
}

// AlertForgedDecision is the operational alert raised when the endpoint
// drops a forged message on a decision subject.
const AlertForgedDecision = "forged_decision_dropped"

// forgeryAlarm turns the forged decisions the endpoint drops into
// operational alerts: at most one a second, each saying how many were
// dropped in all, so that a forger can flood neither the alert stream nor
// the endpoint (the publish runs on its own goroutine).
type forgeryAlarm struct {
	js      jetstream.JetStream
	signer  *receipt.Signer
	log     zerolog.Logger
	dropped atomic.Uint64
	// last is when the last alert went out (Unix nanoseconds).
	last atomic.Int64
}

func (a *forgeryAlarm) drop(d client.Drop) {
	if !d.Forged() {
		return // a genuine decision of another envelope: no attack
	}
	n := a.dropped.Add(1)
	now := time.Now().UnixNano()
	last := a.last.Load()
	if now-last < int64(time.Second) || !a.last.CompareAndSwap(last, now) {
		return
	}
	al := opsalert.Alert{ID: AlertForgedDecision, Severity: "critical", Title: "Forged decision dropped",
		Message: fmt.Sprintf("a message on %s claiming to answer sequence %d is not turnguard's (%v); the HTTP endpoint dropped it (%d forged so far) and waits for the processor's answer",
			d.Subject, d.Seq, d.Reason, n),
		MsgID:   AlertForgedDecision + ":" + strconv.FormatInt(now, 10),
		Details: map[string]any{"subject": d.Subject, "claimed_seq": d.Seq, "request_id": d.RequestID, "reason": d.Reason.Error(), "dropped_total": n}}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := opsalert.Publish(ctx, a.js, a.signer, al); err != nil {
			a.log.Error().Err(err).Msg("publish the forged-decision alert")
		}
	}()
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
	opt := client.Options{Tenant: tenant, Timeout: cfg.Timeout, Posture: client.Deny,
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

// Handler routes POST /acs, GET /healthz, GET /readyz and GET /receipt-key.
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /acs", g.serveACS)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { writeText(w, http.StatusOK, "ok\n") })
	mux.HandleFunc("GET /readyz", g.serveReady)
	mux.HandleFunc("GET /receipt-key", g.serveReceiptKey)
	return mux
}

func (g *Gateway) serveReady(w http.ResponseWriter, _ *http.Request) {
	if !g.nc.IsConnected() {
		writeText(w, http.StatusServiceUnavailable, "not connected to NATS\n")
		return
	}
	if g.cfg.Ready != nil {
		if err := g.cfg.Ready(); err != nil {
			writeText(w, http.StatusServiceUnavailable, err.Error()+"\n")
			return
		}
	}
	writeText(w, http.StatusOK, "ready\n")
}

func (g *Gateway) serveReceiptKey(w http.ResponseWriter, _ *http.Request) {
	if g.cfg.Receipts == nil {
		writeText(w, http.StatusNotFound, "receipts are off\n")
		return
	}
	w.Header().Set(acs.HdrReceiptKey, g.cfg.Receipts.KeyID)
	w.Header().Set("Content-Type", "application/x-pem-file")
	_, _ = w.Write(g.cfg.Receipts.PublicPEM())
}

func writeText(w http.ResponseWriter, status int, s string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, s)
}

// serveACS answers one JSON-RPC request or a batch: HTTP 200 with a
// JSON-RPC body, except for a request of no known caller (401, its body
// unread) and one that does not say it is JSON (415), so that a browser's
// "simple request" — a form post or text/plain, which needs no CORS
// preflight — never reaches the Guardian.
func (g *Gateway) serveACS(w http.ResponseWriter, r *http.Request) {
	who, why := g.authenticate(r)
	if who == nil {
		g.unauthenticated(w, r, why)
		return
	}
	if r.URL.Query().Has(accessTokenParam) {
		// RFC 6750 §2.3: a response to a request with the token in its
		// URL must not be cached, lest the URL be replayed from a cache.
		w.Header().Set("Cache-Control", "no-store")
	}
	ctx := r.Context()
	from := origin{caller: who, remote: r.RemoteAddr, dl: &dlBudget{left: g.cfg.MaxDeadLetters}}
	if g.cfg.WriteTimeout > 0 {
		rc := http.NewResponseController(w)
		from.extend = func() { _ = rc.SetWriteDeadline(time.Now().Add(g.cfg.WriteTimeout)) }
	}
	defer g.summariseDeadLetters(ctx, from)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.cfg.MaxBodyBytes))
	var mbe *http.MaxBytesError
	tooLarge := errors.As(err, &mbe)
	if ct := r.Header.Get("Content-Type"); !isJSON(ct) {
		ref := &acs.Error{Code: acs.CodeInvalidRequest, Reason: acs.ReasonContentType,
			Message: fmt.Sprintf("Content-Type %q: POST /acs takes application/json", ct)}
		g.deadLetter(ctx, from, incoming{raw: body}, ref, tooLarge)
		g.write(w, http.StatusUnsupportedMediaType, g.refuse(incoming{}, ref))
		return
	}
	var rep reply
	switch {
	case tooLarge:
		rep = g.reject(ctx, from, incoming{raw: body}, &acs.Error{Code: acs.CodeInvalidRequest, Reason: acs.ReasonTooLarge,
			Message: fmt.Sprintf("request body exceeds %d bytes", g.cfg.MaxBodyBytes)}, true)
	case err != nil:
		rep = g.refuse(incoming{}, &acs.Error{Code: acs.CodeParseError, Reason: acs.ReasonParseError, Message: "cannot read the request body: " + err.Error()})
	default:
		rep = g.dispatch(ctx, from, body, r.TLS != nil)
	}
	g.write(w, http.StatusOK, rep)
}

// write sends a reply with its receipt headers.
func (g *Gateway) write(w http.ResponseWriter, status int, rep reply) {
	out := rep.raw
	if out == nil {
		var err error
		if out, err = json.Marshal(rep.doc); err != nil {
			out, _ = json.Marshal(g.refuse(incoming{}, &acs.Error{Code: acs.CodeInternalError, Reason: "internal_error", Message: err.Error()}).doc)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if rep.receipt != "" {
		w.Header().Set(acs.HdrReceipt, rep.receipt)
		w.Header().Set(acs.HdrReceiptKey, rep.receiptKey)
		if rep.seq != 0 {
			// What the receipt is bound to, for clients verifying it.
			w.Header().Set(acs.HdrStreamSeq, strconv.FormatUint(rep.seq, 10))
		}
	}
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

// isJSON reports whether a Content-Type is application/json, parameters
// (charset=utf-8) allowed.
func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// origin is who sent a request: the authenticated caller (the anonymous
// one of an open endpoint) and the client's address.
type origin struct {
	caller *Caller
	remote string
	// dl is what is left of the request's dead letters; nil: no bound.
	dl *dlBudget
	// extend, when set, renews the connection's write deadline before
	// each item of a batch.
	extend func()
}

// dlBudget counts one request's dead letters: the first ones are kept one
// by one, the rest only counted, by reason, for one summary record. The
// items of a batch are answered one after another, so it needs no lock.
type dlBudget struct {
	left    int
	omitted map[string]int
}

// reply is one JSON-RPC answer: raw, as the processor published it, or a
// document the endpoint made; with its Ed25519 receipt and, for a
// processor decision, the stream sequence the receipt is bound to.
type reply struct {
	raw        json.RawMessage
	doc        any
	receipt    string
	receiptKey string
	seq        uint64
}

func (r reply) MarshalJSON() ([]byte, error) {
	if r.raw != nil {
		return r.raw, nil
	}
	return json.Marshal(r.doc)
}

// dispatch answers a body: one request, or a batch in declared order.
func (g *Gateway) dispatch(ctx context.Context, from origin, body []byte, tls bool) reply {
	trimmed := bytes.TrimSpace(body)
	batch := len(trimmed) > 0 && trimmed[0] == '['
	// Before any decoding, as the processor does: a batch's array is one
	// level more than its items.
	limit := acs.MaxDepth
	if batch {
		limit++
	}
	if ref := acs.CheckDepth(trimmed, limit); ref != nil {
		return g.reject(ctx, from, incoming{raw: body}, ref, false)
	}
	if !batch {
		return g.one(ctx, from, trimmed, tls)
	}
	items, err := splitBatch(trimmed, g.cfg.MaxBatch)
	var tooMany *batchTooLargeError
	switch {
	case errors.As(err, &tooMany):
		return g.reject(ctx, from, incoming{raw: body}, &acs.Error{Code: acs.CodeInvalidRequest, Reason: acs.ReasonBatchTooLarge, Message: err.Error()}, false)
	case err != nil:
		return g.reject(ctx, from, incoming{raw: body}, &acs.Error{Code: acs.CodeParseError, Reason: acs.ReasonParseError, Message: err.Error()}, false)
	case len(items) == 0:
		return g.reject(ctx, from, incoming{raw: body}, &acs.Error{Code: acs.CodeInvalidRequest, Reason: acs.ReasonEnvelopeInvalid, Message: "an empty batch"}, false)
	}
	replies := make([]reply, len(items))
	for i, it := range items {
		if from.extend != nil {
			from.extend()
		}
		// Each item independently and in order (ACS §3: batches). A batch
		// has no per-item headers, so receipts stay in the stream.
		replies[i] = g.one(ctx, from, it, tls)
		replies[i].receipt = ""
	}
	return reply{doc: replies}
}

// request is what the gateway reads of an envelope before the processor
// sees it.
type request struct {
	JSONRPC string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	ID      json.RawMessage `json:"id"`
	Params  *struct {
		ACSVersion string `json:"acs_version"`
		RequestID  string `json:"request_id"`
		Timestamp  string `json:"timestamp"`
		Metadata   struct {
			SessionID string `json:"session_id"`
			AgentID   string `json:"agent_id"`
		} `json:"metadata"`
		Payload   json.RawMessage `json:"payload"`
		Signature *acs.Signature  `json:"signature"`
	} `json:"params"`
}

// incoming is one request as read: its raw bytes, decoded form, and what a
// response needs to be correlated and signed.
type incoming struct {
	raw       []byte
	req       request
	id        json.RawMessage
	sessionID string
	keyID     string
	// omitted, on a request's summary dead letter, is how many of its
	// refusals it stands for.
	omitted int
}

// one answers one JSON-RPC request.
func (g *Gateway) one(ctx context.Context, from origin, raw []byte, tls bool) reply {
	in := incoming{raw: raw}
	if err := json.Unmarshal(raw, &in.req); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return g.reject(ctx, from, in, &acs.Error{Code: acs.CodeInvalidRequest, Reason: acs.ReasonEnvelopeInvalid, Message: "a request is a JSON object: " + err.Error()}, false)
		}
		return g.reject(ctx, from, in, &acs.Error{Code: acs.CodeParseError, Reason: acs.ReasonParseError, Message: err.Error()}, false)
	}
	req := &in.req
	if validID(req.ID) {
		in.id = req.ID
	}
	if p := req.Params; p != nil {
		in.sessionID = p.Metadata.SessionID
		if p.Signature != nil {
			in.keyID = p.Signature.KeyID
		}
	}
	if req.Method != "" && !acs.Defined(req.Method) {
		// Refused here, as the processor would (-32601 before anything
		// else of the envelope), so that the dead letter names the caller.
		return g.reject(ctx, from, in, acs.MethodError(req.Method), false)
	}
	if who := from.caller; who.AgentID != "" && req.Params != nil && req.Params.Metadata.AgentID != who.AgentID {
		// A caller bound to an agent speaks for that agent only.
		return g.reject(ctx, from, in, &acs.Error{Code: acs.CodeSessionRefused, Reason: acs.ReasonAgentNotBound,
			Message: fmt.Sprintf("caller %s may only send for agent %q, not %q", who.Name, who.AgentID, req.Params.Metadata.AgentID)}, false)
	}
	if req.Method == acs.HandshakeMethod {
		return g.handshake(ctx, from, in, tls)
	}
	if req.Method == "" || req.Params == nil || req.Params.RequestID == "" || acs.CheckSession(req.Params.Metadata.SessionID) != nil {
		// Nowhere to route it: refused, and kept in the dead-letter stream.
		return g.reject(ctx, from, in, &acs.Error{Code: acs.CodeInvalidRequest, Reason: acs.ReasonEnvelopeInvalid,
			Message: "a request needs a method, params.request_id and params.metadata.session_id (a UUID)"}, false)
	}
	if ref := g.checkNegotiated(ctx, from.caller, in); ref != nil {
		if ref.Code == acs.CodeInternalError {
			return g.refuse(in, ref)
		}
		return g.reject(ctx, from, in, ref, false)
	}
	// Everything else — methods turnguard does not evaluate included — is
	// decided by the processor, which refuses, signs and dead-letters it
	// like any message on the stream.
	d, err := g.clients[from.caller.Tenant].Decide(ctx, raw)
	switch {
	case err != nil:
		return g.reject(ctx, from, in, &acs.Error{Code: acs.CodeInvalidRequest, Reason: acs.ReasonEnvelopeInvalid, Message: err.Error()}, false)
	case d.Replayed:
		return g.refuse(in, &acs.Error{Code: acs.CodeReplayDetected, Reason: acs.ReasonReplayed,
			Message: fmt.Sprintf("request %s of this session was already received", d.RequestID)})
	case d.FromPosture:
		// No decision: an error, so that the agent applies its own
		// on_decision_failure, as ACS §6.4 prescribes.
		return g.refuse(in, &acs.Error{Code: acs.CodeInternalError, Reason: "decision_timeout", Message: d.Failure.Error()})
	}
	// Only a verified decision gets here; its receipt headers are passed
	// on only when they are the ones that verified (never with receipts
	// off).
	rep := reply{raw: d.Response}
	if d.Verified {
		rep.receipt, rep.receiptKey, rep.seq = d.Receipt, d.ReceiptKey, d.Seq
	}
	return rep
}

// checkNegotiated holds a step to its session's handshake (ACS §4): with
// the handshake required, a session must have negotiated, and in any case
// a negotiated session may only send the methods it negotiated, signed
// with the key and from the agent that negotiated it, by the caller that
// negotiated it. With the handshake optional, an authenticated caller's
// first step of a session binds the session to it.
// system/ping is exempt, and so are methods turnguard does not evaluate,
// which the processor refuses with their own code.
func (g *Gateway) checkNegotiated(ctx context.Context, who *Caller, in incoming) *acs.Error {
	method := in.req.Method
	spec := acs.LookupMethod(method)
	if spec == nil || spec.Scope == acs.Liveness {
		return nil
	}
	key := acs.SessionKey(who.Tenant, in.sessionID)
	n, err := g.handshakes.get(ctx, key)
	if err == nil && n == nil && g.cfg.Handshake == HandshakeOptional && who.Name != "" {
		// First use without a handshake: bound to its caller from now on.
		// Whoever gets there first of two racing callers owns it.
		n, err = g.handshakes.put(ctx, key, &negotiation{Caller: who.Name, At: time.Now().UTC()})
	}
	switch {
	case err != nil:
		return &acs.Error{Code: acs.CodeInternalError, Reason: "handshake_unavailable", Message: err.Error()}
	case n == nil && g.cfg.Handshake == HandshakeRequired:
		return &acs.Error{Code: acs.CodeCapabilityNotNegotiated, Reason: acs.ReasonHandshakeRequired,
			Message: fmt.Sprintf("session %s has not completed handshake/hello", in.sessionID)}
	case n == nil:
		return nil
	case n.Caller != who.Name:
		return callerNotBound(in.sessionID, who.Name)
	case !n.negotiated() && g.cfg.Handshake == HandshakeRequired:
		return &acs.Error{Code: acs.CodeCapabilityNotNegotiated, Reason: acs.ReasonHandshakeRequired,
			Message: fmt.Sprintf("session %s has not completed handshake/hello", in.sessionID)}
	case !n.negotiated():
		return nil
	case !n.evaluates(method):
		return &acs.Error{Code: acs.CodeCapabilityNotNegotiated, Reason: acs.ReasonNotNegotiated,
			Message: fmt.Sprintf("method %s was not negotiated in this session's handshake", method)}
	case n.KeyID != "" && in.keyID != n.KeyID:
		// The session belongs to whoever negotiated it: with a key per
		// agent, another agent's valid signature must not reach into it
		// (the Go reference's key_not_bound).
		return &acs.Error{Code: acs.CodeSignatureInvalid, Reason: acs.ReasonKeyNotBound,
			Message: fmt.Sprintf("session %s was negotiated with key %q, not %q", in.sessionID, n.KeyID, in.keyID)}
	case in.req.Params.Metadata.AgentID != n.AgentID:
		return &acs.Error{Code: acs.CodeSessionRefused, Reason: acs.ReasonAgentNotBound,
			Message: fmt.Sprintf("session %s was negotiated by agent %q, not %q", in.sessionID, n.AgentID, in.req.Params.Metadata.AgentID)}
	}
	return nil
}

// handshake answers handshake/hello with a ServerHello (ACS §4), the same
// one again for a repeated identical hello from the same caller.
func (g *Gateway) handshake(ctx context.Context, from origin, in incoming, tls bool) reply {
	// Decoded as the schemas and signing inputs need it, numbers exact.
	decoded, err := schema.Decode(in.raw)
	if err != nil {
		return g.reject(ctx, from, in, &acs.Error{Code: acs.CodeParseError, Reason: acs.ReasonParseError, Message: err.Error()}, false)
	}
	// one read the body into a struct, so it is an object.
	doc := decoded.(map[string]any)
	if err := g.validator.ValidateRequest(doc); err != nil {
		return g.reject(ctx, from, in, asError(err), false)
	}
	p := in.req.Params
	if ref := acs.VerifyRequest(g.cfg.Keys, g.cfg.RequireSignatures, doc, p.Signature, in.sessionID); ref != nil {
		return g.reject(ctx, from, in, ref, false)
	}
	// The endpoint is not the deterministic core: the hello's arrival is
	// the clock's now.
	if ref := acs.CheckSkew(p.Timestamp, time.Now(), g.cfg.SkewWindow); ref != nil {
		return g.reject(ctx, from, in, ref, false)
	}
	payload := doc["params"].(map[string]any)["payload"]
	if err := g.validator.ValidatePayload(acs.HandshakeMethod, payload); err != nil {
		return g.reject(ctx, from, in, asError(err), false)
	}
	canonical, err := acs.Canonical(payload)
	if err != nil {
		return g.reject(ctx, from, in, &acs.Error{Code: acs.CodeInvalidParams, Reason: acs.ReasonPayloadInvalid, Message: err.Error()}, false)
	}
	var hello clientHello
	_ = json.Unmarshal(p.Payload, &hello)
	sh, methods, ref := g.negotiate(hello, tls)
	if ref != nil {
		return g.reject(ctx, from, in, ref, false)
	}
	who := from.caller
	key := acs.SessionKey(who.Tenant, p.Metadata.SessionID)
	n := &negotiation{ClientHello: canonical, KeyID: in.keyID, AgentID: p.Metadata.AgentID, Caller: who.Name,
		ServerHello: sh, Methods: methods, At: time.Now().UTC()}
	stored, err := g.handshakes.get(ctx, key)
	switch {
	case err == nil && stored == nil:
		stored, err = g.handshakes.put(ctx, key, n)
	case err == nil && !stored.negotiated() && stored.Caller == who.Name:
		// Used without a handshake (--handshake optional), now negotiated
		// by the caller it is bound to.
		stored, err = g.handshakes.upgrade(ctx, key, stored, n)
	}
	switch {
	case err != nil:
		return g.refuse(in, &acs.Error{Code: acs.CodeInternalError, Reason: "handshake_unavailable", Message: err.Error()})
	case stored.Caller != who.Name:
		return g.reject(ctx, from, in, callerNotBound(p.Metadata.SessionID, who.Name), false)
	case !stored.sameHello(canonical, in.keyID, p.Metadata.AgentID):
		// v0.1 has no renegotiation; the Go reference answers the same.
		return g.reject(ctx, from, in, &acs.Error{Code: acs.CodeSessionRefused, Reason: acs.ReasonAlreadyNegotiated,
			Message: fmt.Sprintf("session %s already negotiated with another ClientHello", p.Metadata.SessionID)}, false)
	}
	return g.seal(in, "result", maps.Clone(stored.ServerHello))
}

// callerNotBound refuses a caller reaching into another caller's session.
// The answer does not name the session's caller: the callers file is not
// every caller's business.
func callerNotBound(sessionID, caller string) *acs.Error {
	return &acs.Error{Code: acs.CodeSessionRefused, Reason: acs.ReasonCallerNotBound,
		Message: fmt.Sprintf("session %s belongs to another caller than %q", sessionID, caller)}
}

// refuse answers a request with a JSON-RPC error, signed.
func (g *Gateway) refuse(in incoming, ref *acs.Error) reply {
	return g.seal(in, "error", ref.RPC(in.req.Method))
}

// reject refuses a request and keeps it in the dead-letter stream, as the
// processor keeps what it refuses on NATS. truncated says the body read
// is only the first MaxBodyBytes of a larger one.
func (g *Gateway) reject(ctx context.Context, from origin, in incoming, ref *acs.Error, truncated bool) reply {
	g.deadLetter(ctx, from, in, ref, truncated)
	return g.refuse(in, ref)
}

// seal builds a response to in with body as its result or error member,
// signs it as ACS-Core asks of every response — with the key the request
// named when the keyring has it, else the default — and adds its receipt.
// Without a readable session id the signing key is derived with an empty
// HKDF info: there is nothing else to derive it from.
func (g *Gateway) seal(in incoming, member string, body any) reply {
	id := in.id
	if id == nil {
		id = acs.NullID
	}
	doc := &envelope{JSONRPC: "2.0", ID: id}
	if member == "result" {
		doc.Result = body
	} else {
		doc.Error = body
	}
	if kr := g.cfg.Keys; kr != nil {
		if keyID := kr.ResponseKey(in.keyID, in.sessionID); keyID != "" {
			if sig, err := g.sign(doc, keyID, in.sessionID); err != nil {
				g.log.Error().Err(err).Msg("sign a response")
			} else {
				switch b := body.(type) {
				case map[string]any:
					b["signature"] = sig
				case *acs.RPCError:
					b.Signature = sig
				}
			}
		}
	}
	rep := reply{doc: doc}
	if g.cfg.Receipts != nil {
		// Bound as the endpoint's own answer in the session: it can never
		// pass for a processor decision.
		rcpt, err := g.cfg.Receipts.Sign(receipt.Endpoint(g.cfg.Tenant, in.sessionID), doc)
		if err != nil {
			g.log.Error().Err(err).Msg("sign a receipt")
		}
		rep.receipt, rep.receiptKey = rcpt, g.cfg.Receipts.KeyID
	}
	return rep
}

// envelope is a response the endpoint makes itself, members in the order
// of ACS's examples.
type envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   any             `json:"error,omitempty"`
}

func (g *Gateway) sign(doc *envelope, keyID, sessionID string) (*acs.Signature, error) {
	input, err := acs.Canonical(doc)
	if err != nil {
		return nil, err
	}
	return g.cfg.Keys.Sign(keyID, sessionID, input)
}

// deadLetter keeps a request the endpoint refused itself, like the
// processor keeps what it refuses: the original bytes, the reason, the
// caller and the client's address in headers. A body too large for one
// NATS message keeps its beginning, and says so: over HTTP there is no
// other copy of it to point to.
func (g *Gateway) deadLetter(ctx context.Context, from origin, in incoming, ref *acs.Error, truncated bool) {
	if b := from.dl; b != nil {
		if b.left <= 0 {
			if b.omitted == nil {
				b.omitted = map[string]int{}
			}
			b.omitted[ref.Reason]++
			g.stats.DeadLettersOmitted.Add(1)
			return
		}
		b.left--
	}
	g.stats.DeadLettered.Add(1)
	m := nats.NewMsg(acs.DLQSubject(from.caller.Tenant))
	m.Data = in.raw
	m.Header.Set(acs.HdrErrorCode, strconv.Itoa(int(ref.Code)))
	m.Header.Set(acs.HdrErrorName, ref.Code.String())
	m.Header.Set(acs.HdrErrorReason, ref.Reason)
	m.Header.Set(acs.HdrErrorMessage, msghdr.Value(ref.Message))
	m.Header.Set(acs.HdrOriginalStream, "http")
	if from.caller.Name != "" {
		m.Header.Set(acs.HdrCaller, from.caller.Name)
	}
	if from.remote != "" {
		m.Header.Set(acs.HdrRemoteAddr, from.remote)
	}
	if p := in.req.Params; p != nil && p.RequestID != "" {
		m.Header.Set(acs.HdrRequestID, msghdr.Value(p.RequestID))
	}
	if in.omitted > 0 {
		m.Header.Set(acs.HdrDeadLettersOmitted, strconv.Itoa(in.omitted))
	}
	if truncated {
		m.Header.Set(acs.HdrBodyTruncated, fmt.Sprintf("the body exceeded %d bytes; the first %d are kept", g.cfg.MaxBodyBytes, len(m.Data)))
	}
	if limit := g.nc.MaxPayload(); limit > 0 && int64(len(m.Data)+msghdr.Size(m.Header)) > limit {
		keep := max(0, int(limit)-msghdr.Size(m.Header)-256)
		m.Header.Set(acs.HdrBodyTruncated, fmt.Sprintf("%d bytes do not fit the server's max_payload %d; the first %d are kept", len(m.Data), limit, keep))
		m.Data = m.Data[:keep]
	}
	g.log.Warn().Str("http_caller", from.caller.Name).Str("remote", from.remote).Int("code", int(ref.Code)).
		Str("reason", ref.Reason).Str("error", ref.Message).Msg("HTTP request refused and dead-lettered")
	// Kept even when the client hung up meanwhile.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deadLetterTimeout)
	defer cancel()
	if _, err := g.js.PublishMsg(ctx, m); err != nil {
		g.log.Warn().Err(err).Str("reason", ref.Reason).Msg("dead-letter a refused HTTP request")
	}
}

// summariseDeadLetters keeps, for a request whose refusals went beyond
// its dead-letter limit, one record counting the ones not kept, by reason.
func (g *Gateway) summariseDeadLetters(ctx context.Context, from origin) {
	b := from.dl
	if b == nil || len(b.omitted) == 0 {
		return
	}
	n := 0
	for _, c := range b.omitted {
		n += c
	}
	body, _ := json.Marshal(map[string]any{"dead_letters_omitted": n, "by_reason": b.omitted})
	from.dl = nil // the summary itself is kept whatever the budget
	g.deadLetter(ctx, from, incoming{raw: body, omitted: n}, &acs.Error{Code: acs.CodeInvalidRequest, Reason: acs.ReasonDeadLetterLimit,
		Message: fmt.Sprintf("%d more refusals of this request were not dead-lettered one by one (limit %d a request)", n, g.cfg.MaxDeadLetters)}, false)
}

// batchTooLargeError is a batch of more items than the endpoint takes.
type batchTooLargeError struct{ max int }

func (e *batchTooLargeError) Error() string {
	return fmt.Sprintf("a batch of more than %d requests", e.max)
}

// splitBatch splits a JSON array into its items, stopping as soon as there
// are more than max: a batch too large is refused without the rest of it
// being decoded.
func splitBatch(b []byte, max int) ([]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil { // '[', as dispatch checked
		return nil, err
	}
	var items []json.RawMessage
	for dec.More() {
		if len(items) == max {
			return nil, &batchTooLargeError{max: max}
		}
		var it json.RawMessage
		if err := dec.Decode(&it); err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	if _, err := dec.Token(); err != nil { // ']'
		return nil, err
	}
	if len(bytes.TrimSpace(b[dec.InputOffset():])) > 0 {
		return nil, errors.New("invalid character after the top-level value")
	}
	return items, nil
}

// deadLetterTimeout bounds the wait for ACS_DLQ to store a dead letter.
const deadLetterTimeout = 5 * time.Second

// validID reports a JSON-RPC id a response may echo: a string or a number.
// Anything else (an object, an array, true) cannot be echoed in a valid
// response; it is answered with a null id, as an unreadable one.
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	switch c := id[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return true
	}
	return false
}

func asError(err error) *acs.Error {
	var ae *acs.Error
	if errors.As(err, &ae) {
		return ae
	}
	return &acs.Error{Code: acs.CodeInvalidParams, Reason: acs.ReasonPayloadInvalid, Message: err.Error()}
}
