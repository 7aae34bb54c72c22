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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/acs"
	"github.com/turnguard/turnguard/internal/receipt"
	"github.com/turnguard/turnguard/pkg/client"
	"github.com/turnguard/turnguard/schema"
)

// DefaultMaxBodyBytes bounds a request body (a batch included).
const DefaultMaxBodyBytes = 1 << 20

// Config configures the gateway.
type Config struct {
	// Tenant is the tenant the endpoint's envelopes belong to.
	Tenant string
	// Timeout is how long a call waits for its decision; it is advertised
	// as timeout_config.default_ms. Without a decision in time the answer
	// is a JSON-RPC error, so the agent applies its on_decision_failure.
	Timeout time.Duration
	// OnDecisionFailure is the posture advertised in the ServerHello:
	// proceed or deny.
	OnDecisionFailure string
	// Signing is true when requests are verified and responses signed
	// (HMAC-SHA256); SkewWindow is the advertised skew_window_ms.
	Signing    bool
	SkewWindow time.Duration
	// Receipts, when set, is served at GET /receipt-key.
	Receipts     *receipt.Signer
	MaxBodyBytes int64
	// Ready reports whether the processor is running (GET /readyz).
	Ready func() error
}

// Gateway serves the endpoint.
type Gateway struct {
	cfg       Config
	nc        *nats.Conn
	client    *client.Client
	validator *schema.Validator
	log       zerolog.Logger
}

// New returns a gateway deciding through nc.
func New(nc *nats.Conn, v *schema.Validator, cfg Config, log zerolog.Logger) (*Gateway, error) {
	if cfg.Tenant == "" {
		cfg.Tenant = "default"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.OnDecisionFailure == "" {
		cfg.OnDecisionFailure = "deny"
	}
	c, err := client.New(nc, client.Options{Tenant: cfg.Tenant, Timeout: cfg.Timeout})
	if err != nil {
		return nil, err
	}
	return &Gateway{cfg: cfg, nc: nc, client: c, validator: v, log: log}, nil
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
	w.Header().Set("Acs-Receipt-Key", g.cfg.Receipts.KeyID)
	w.Header().Set("Content-Type", "application/x-pem-file")
	_, _ = w.Write(g.cfg.Receipts.PublicPEM())
}

func writeText(w http.ResponseWriter, status int, s string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, s)
}

// serveACS answers one JSON-RPC request or a batch, always with HTTP 200.
func (g *Gateway) serveACS(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.cfg.MaxBodyBytes))
	var reply any
	var rcpt string
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		reply = rpcError(nil, acs.CodeInvalidRequest, "envelope_too_large", fmt.Sprintf("request body exceeds %d bytes", g.cfg.MaxBodyBytes), nil)
	case err != nil:
		reply = rpcError(nil, acs.CodeParseError, acs.ReasonParseError, "cannot read the request body: "+err.Error(), nil)
	default:
		reply, rcpt = g.dispatch(r.Context(), body)
	}
	out, err := json.Marshal(reply)
	if err != nil {
		out, _ = json.Marshal(rpcError(nil, acs.CodeInternalError, "internal_error", err.Error(), nil))
	}
	w.Header().Set("Content-Type", "application/json")
	if rcpt != "" {
		w.Header().Set("Acs-Receipt", rcpt)
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}

// dispatch answers a body: one request, or a batch in declared order.
func (g *Gateway) dispatch(ctx context.Context, body []byte) (any, string) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return g.one(ctx, trimmed)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(trimmed, &items); err != nil {
		return rpcError(nil, acs.CodeParseError, acs.ReasonParseError, err.Error(), nil), ""
	}
	if len(items) == 0 {
		return rpcError(nil, acs.CodeInvalidRequest, acs.ReasonEnvelopeInvalid, "an empty batch", nil), ""
	}
	replies := make([]any, len(items))
	for i, it := range items {
		// Each item independently and in order (ACS §3: batches).
		replies[i], _ = g.one(ctx, it)
	}
	return replies, ""
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
		Metadata   struct {
			SessionID string `json:"session_id"`
		} `json:"metadata"`
		Payload json.RawMessage `json:"payload"`
	} `json:"params"`
}

// one answers one JSON-RPC request; the second result is its receipt.
func (g *Gateway) one(ctx context.Context, raw []byte) (any, string) {
	var req request
	if err := json.Unmarshal(raw, &req); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return rpcError(nil, acs.CodeInvalidRequest, acs.ReasonEnvelopeInvalid, "a request is a JSON object: "+err.Error(), nil), ""
		}
		return rpcError(nil, acs.CodeParseError, acs.ReasonParseError, err.Error(), nil), ""
	}
	id := req.ID
	if len(id) == 0 {
		id = nil
	}
	switch {
	case req.Method == schema.HandshakeMethod:
		return g.handshake(id, req), ""
	case acs.LookupMethod(req.Method) == nil:
		return rpcError(id, acs.CodeCapabilityNotNegotiated, acs.ReasonUnknownMethod,
			fmt.Sprintf("method %q is not evaluated by this Guardian", req.Method), &acs.RPCErrData{Method: req.Method}), ""
	case req.Params == nil || req.Params.RequestID == "" || acs.CheckSession(req.Params.Metadata.SessionID) != nil:
		// Nowhere to route it: it is kept in the dead-letter stream by way
		// of the unrouted subject, and refused here.
		if err := g.nc.Publish(acs.InboundPrefix+"."+g.cfg.Tenant+".unrouted", raw); err != nil {
			g.log.Warn().Err(err).Msg("keep an unroutable request")
		}
		return rpcError(id, acs.CodeInvalidRequest, acs.ReasonEnvelopeInvalid,
			"a request needs params.request_id and params.metadata.session_id", nil), ""
	}
	d, err := g.client.Decide(ctx, raw)
	switch {
	case err != nil:
		return rpcError(id, acs.CodeInvalidRequest, acs.ReasonEnvelopeInvalid, err.Error(), nil), ""
	case d.Replayed:
		return rpcError(id, acs.CodeReplayDetected, "request_replayed",
			fmt.Sprintf("request %s of this session was already received", d.RequestID), nil), ""
	case d.FromPosture:
		// No decision: an error, so that the agent applies its own
		// on_decision_failure, as ACS §6.4 prescribes.
		return rpcError(id, acs.CodeInternalError, "decision_timeout", d.Failure.Error(), nil), ""
	}
	return json.RawMessage(d.Response), d.Receipt
}

// handshake answers handshake/hello with a ServerHello (ACS §4).
func (g *Gateway) handshake(id json.RawMessage, req request) any {
	if req.Params == nil {
		return rpcError(id, acs.CodeInvalidRequest, acs.ReasonEnvelopeInvalid, "handshake/hello needs params", nil)
	}
	var payload any
	if len(req.Params.Payload) > 0 {
		var err error
		if payload, err = schema.Decode(req.Params.Payload); err != nil {
			return rpcError(id, acs.CodeParseError, acs.ReasonParseError, err.Error(), nil)
		}
	}
	if err := g.validator.ValidatePayload(schema.HandshakeMethod, payload); err != nil {
		var ae *acs.Error
		if errors.As(err, &ae) {
			return &acs.Response{JSONRPC: "2.0", ID: orNull(id), Error: ae.RPC(schema.HandshakeMethod)}
		}
		return rpcError(id, acs.CodeInvalidParams, acs.ReasonPayloadInvalid, err.Error(), nil)
	}
	var hello struct {
		Versions         []string `json:"acs_versions_supported"`
		Methods          []string `json:"methods_implemented"`
		Transports       []string `json:"transports_supported"`
		ProfilesOffered  []string `json:"profiles_supported"`
		ProvenanceSource string   `json:"provenance_producer"`
	}
	_ = json.Unmarshal(req.Params.Payload, &hello)
	if !slices.ContainsFunc(hello.Versions, func(v string) bool { return strings.HasPrefix(v, "0.") }) {
		return rpcError(id, acs.CodeUnsupportedVersion, acs.ReasonVersion,
			fmt.Sprintf("no common version: this Guardian speaks %s", acs.Version), &acs.RPCErrData{SupportedVersions: []string{acs.Version}})
	}
	var evaluated []string
	for _, m := range hello.Methods {
		if acs.LookupMethod(m) != nil {
			evaluated = append(evaluated, m)
		}
	}
	transport := "http"
	if slices.Contains(hello.Transports, "https") && !slices.Contains(hello.Transports, "http") {
		transport = "https"
	}
	sh := map[string]any{
		"negotiated_version":  acs.Version,
		"methods_evaluated":   orEmpty(evaluated),
		"selected_transport":  transport,
		"timeout_config":      map[string]any{"default_ms": g.cfg.Timeout.Milliseconds()},
		"on_decision_failure": g.cfg.OnDecisionFailure,
	}
	if g.cfg.Signing {
		sh["signature_algorithms_supported"] = []string{acs.AlgHMACSHA256}
		if g.cfg.SkewWindow > 0 {
			sh["skew_window_ms"] = g.cfg.SkewWindow.Milliseconds()
		}
	}
	if slices.Contains(hello.ProfilesOffered, "acs-core") {
		sh["profiles_accepted"] = []string{"acs-core"}
	}
	return map[string]any{"jsonrpc": "2.0", "id": orNull(id), "result": sh}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func orNull(id json.RawMessage) json.RawMessage {
	if id == nil {
		return acs.NullID
	}
	return id
}

func rpcError(id json.RawMessage, code acs.Code, reason, msg string, data *acs.RPCErrData) *acs.Response {
	if data == nil {
		data = &acs.RPCErrData{}
	}
	data.Reason = reason
	return &acs.Response{JSONRPC: "2.0", ID: orNull(id), Error: &acs.RPCError{Code: int(code), Message: msg, Data: data}}
}
