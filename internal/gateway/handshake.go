package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/schema"
)

// HandshakePolicy says whether steps over HTTP need a handshake first.
type HandshakePolicy string

// Handshake policies.
const (
	// HandshakeRequired refuses steps of a session that did not negotiate,
	// and methods it did not negotiate, with -32003 (ACS §4, as the Go
	// reference Guardian does).
	HandshakeRequired HandshakePolicy = "required"
	// HandshakeOptional decides steps without a handshake, for clients
	// that cannot send one; a session that did negotiate is still held to
	// its methods_evaluated.
	HandshakeOptional HandshakePolicy = "optional"
)

// ParseHandshakePolicy reads a --handshake value.
func ParseHandshakePolicy(s string) (HandshakePolicy, error) {
	switch p := HandshakePolicy(s); p {
	case HandshakeRequired, HandshakeOptional:
		return p, nil
	}
	return "", fmt.Errorf("handshake policy %q: want required or optional", s)
}

// negotiation is what a session's handshake settled, as stored.
type negotiation struct {
	// ClientHello is the canonical form of the ClientHello, KeyID and
	// AgentID who sent it: a second hello must match all three.
	ClientHello json.RawMessage `json:"client_hello,omitempty"`
	KeyID       string          `json:"key_id,omitempty"`
	AgentID     string          `json:"agent_id"`
	// Caller is the authenticated caller the session belongs to ("" on
	// an open endpoint): no other caller may use it. A record with a
	// caller and no ClientHello binds a session used without a handshake
	// (--handshake optional).
	Caller string `json:"caller,omitempty"`
	// ServerHello is the answer given, unsigned; it is signed anew for
	// every response that repeats it.
	ServerHello map[string]any `json:"server_hello"`
	Methods     []string       `json:"methods_evaluated"`
	// Continues is, for a Claude Code conversation begun by a /clear,
	// the session it goes on in (clear.go).
	Continues string `json:"continues,omitempty"`
	// At is when the negotiation was made or last found in use; rev is
	// the bucket revision it was read at.
	At  time.Time `json:"at"`
	rev uint64
}

func (n *negotiation) evaluates(method string) bool { return slices.Contains(n.Methods, method) }

// negotiated reports whether the session completed a handshake, rather
// than being only bound to its first caller.
func (n *negotiation) negotiated() bool { return len(n.ClientHello) > 0 }

// handshakes keeps negotiations in the KV bucket, with the ones in use in
// memory: a negotiation never changes once made.
//
// Every record is sealed with the state key (kind handshake, bound to its
// bucket key), as session and member records are: anyone who may write
// $KV.ACS_HANDSHAKES.> could otherwise bind a session to another caller —
// refusing its legitimate caller — or negotiate it in that caller's name.
// A record that does not verify is taken as absent (and reported): it
// neither admits nor refuses anyone, and the next negotiation of the
// session replaces it.
//
// The bucket is the processor's (topology): it creates the bucket when the
// HTTP endpoint is on and recreates it, alerted, when it is deleted. The
// endpoint only opens it, the first time it needs it, so that one place
// says how it is configured, and an endpoint started before the processor
// has ensured its assets answers -32603 handshake_unavailable meanwhile.
type handshakes struct {
	js     jetstream.JetStream
	sealer *turnstate.Sealer
	now    func() time.Time
	// invalid is told about every record that does not verify.
	invalid func(key, reason string)

	mu sync.Mutex
	// kv is the bucket once opened, nil before; a handle names the bucket,
	// so it keeps working when the bucket is recreated. ttl is the
	// bucket's own.
	kv    jetstream.KeyValue
	ttl   time.Duration
	cache map[string]*negotiation
}

// handshakeKind is the kind bound into a handshake record's MAC, so that
// no session or member record verifies as one.
const handshakeKind = "handshake"

// maxCachedHandshakes bounds the memory kept of negotiations; beyond it the
// cache starts over and reads from the bucket again.
const maxCachedHandshakes = 65536

func newHandshakes(js jetstream.JetStream, sealer *turnstate.Sealer, now func() time.Time, invalid func(key, reason string)) *handshakes {
	return &handshakes{js: js, sealer: sealer, now: now, invalid: invalid, cache: map[string]*negotiation{}}
}

// bucket returns the bucket and its TTL, opening it the first time.
func (h *handshakes) bucket(ctx context.Context) (jetstream.KeyValue, time.Duration, error) {
	h.mu.Lock()
	kv, ttl := h.kv, h.ttl
	h.mu.Unlock()
	if kv != nil {
		return kv, ttl, nil
	}
	kv, err := h.js.KeyValue(ctx, acs.HandshakeBucket)
	if err != nil {
		return nil, 0, fmt.Errorf("KV bucket %s (the processor creates it when the HTTP endpoint is on): %w", acs.HandshakeBucket, err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("KV bucket %s status: %w", acs.HandshakeBucket, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.kv, h.ttl = kv, st.TTL()
	return h.kv, h.ttl, nil
}

// read returns the negotiation stored under key: nil when there is none,
// and also when the record there does not verify, whose revision is then
// bad (0 otherwise) for the write that replaces it.
func (h *handshakes) read(ctx context.Context, key string) (n *negotiation, bad uint64, err error) {
	kv, _, err := h.bucket(ctx)
	if err != nil {
		return nil, 0, err
	}
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read the handshake of %s: %w", key, err)
	}
	record, reason := h.sealer.Open(handshakeKind, key, e.Value())
	if reason == "" {
		n = &negotiation{rev: e.Revision()}
		if err := json.Unmarshal(record, n); err != nil {
			// Sealed by a processor but unreadable: a bug, not an attack;
			// still nothing to trust.
			n, reason = nil, turnstate.ReasonNotDecoded
		} else if bytes.Equal(n.ClientHello, []byte("null")) {
			// A binding-only record as earlier versions stored it: read
			// back, its null would pass for a negotiation.
			n.ClientHello = nil
		}
	}
	if reason != "" {
		h.invalid(key, reason)
		return nil, e.Revision(), nil
	}
	return n, 0, nil
}

// get returns a session's negotiation, nil when it has none. A negotiation
// in use is written again once half its TTL has passed, so that it lasts
// as long as its session is active, as session states do: an adapter that
// cached its ServerHello would otherwise meet -32003 in a long session.
func (h *handshakes) get(ctx context.Context, key string) (*negotiation, error) {
	h.mu.Lock()
	n := h.cache[key]
	h.mu.Unlock()
	if n == nil {
		var err error
		if n, _, err = h.read(ctx, key); n == nil || err != nil {
			return nil, err
		}
		h.remember(key, n)
	}
	h.mu.Lock()
	ttl := h.ttl
	h.mu.Unlock()
	if ttl > 0 && h.now().Sub(n.At) > ttl/2 {
		h.refresh(ctx, key, n)
	}
	return n, nil
}

// load returns a session's negotiation as the bucket has it now, nil when
// it has none, and keeps it in memory. A hello reads this way rather than
// from memory: after the bucket was deleted (and recreated) the repeated
// hello is what stores the negotiation again.
func (h *handshakes) load(ctx context.Context, key string) (*negotiation, error) {
	n, _, err := h.read(ctx, key)
	if n == nil || err != nil {
		h.mu.Lock()
		delete(h.cache, key)
		h.mu.Unlock()
		return nil, err
	}
	h.remember(key, n)
	return n, nil
}

// seal is the stored form of a negotiation.
func (h *handshakes) seal(key string, n *negotiation) ([]byte, error) {
	raw, err := json.Marshal(n)
	if err != nil {
		return nil, err
	}
	return h.sealer.Seal(handshakeKind, key, raw), nil
}

// refresh writes a negotiation in use again, restarting its TTL. Losing
// the race to another gateway is fine: that one refreshed it.
func (h *handshakes) refresh(ctx context.Context, key string, n *negotiation) {
	fresh := *n
	fresh.At = h.now().UTC()
	raw, err := h.seal(key, &fresh)
	if err != nil {
		return
	}
	kv, _, err := h.bucket(ctx)
	if err != nil {
		return
	}
	rev, err := kv.Update(ctx, key, raw, n.rev)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		// Read it from the bucket next time.
		delete(h.cache, key)
		return
	}
	fresh.rev = rev
	h.cache[key] = &fresh
}

// maxPutAttempts bounds how often put replaces a record that does not
// verify only to find another one in its place: a writer racing the
// endpoint with junk costs it an error, not a loop.
const maxPutAttempts = 3

// put stores a new negotiation; when another one got there first it returns
// that one instead. A record there that does not verify is replaced.
func (h *handshakes) put(ctx context.Context, key string, n *negotiation) (*negotiation, error) {
	raw, err := h.seal(key, n)
	if err != nil {
		return nil, err
	}
	kv, _, err := h.bucket(ctx)
	if err != nil {
		return nil, err
	}
	for range maxPutAttempts {
		rev, err := kv.Create(ctx, key, raw)
		if err == nil {
			n.rev = rev
			h.remember(key, n)
			return n, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return nil, fmt.Errorf("store the handshake of %s: %w", key, err)
		}
		stored, bad, err := h.read(ctx, key)
		switch {
		case err != nil:
			return nil, err
		case stored != nil:
			h.remember(key, stored)
			return stored, nil
		case bad == 0:
			continue // gone again since: create it
		}
		rev, err = kv.Update(ctx, key, raw, bad)
		if err == nil {
			n.rev = rev
			h.remember(key, n)
			return n, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return nil, fmt.Errorf("store the handshake of %s: %w", key, err)
		}
	}
	return nil, fmt.Errorf("store the handshake of %s: the record keeps changing", key)
}

// upgrade replaces a session's binding-only record with its negotiation;
// when another gateway changed the record first it returns that one.
func (h *handshakes) upgrade(ctx context.Context, key string, old, n *negotiation) (*negotiation, error) {
	raw, err := h.seal(key, n)
	if err != nil {
		return nil, err
	}
	kv, _, err := h.bucket(ctx)
	if err != nil {
		return nil, err
	}
	rev, err := kv.Update(ctx, key, raw, old.rev)
	if err != nil {
		h.mu.Lock()
		delete(h.cache, key)
		h.mu.Unlock()
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return nil, fmt.Errorf("store the handshake of %s: %w", key, err)
		}
		stored, err := h.get(ctx, key)
		if stored != nil || err != nil {
			return stored, err
		}
		// Replaced since by a record that does not verify, or gone.
		return h.put(ctx, key, n)
	}
	n.rev = rev
	h.remember(key, n)
	return n, nil
}

func (h *handshakes) remember(key string, n *negotiation) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.cache) >= maxCachedHandshakes {
		clear(h.cache)
	}
	h.cache[key] = n
}

// clientHello is what the endpoint reads of a ClientHello.
type clientHello struct {
	Versions   []string `json:"acs_versions_supported"`
	Methods    []string `json:"methods_implemented"`
	Transports []string `json:"transports_supported"`
	Profiles   []string `json:"profiles_supported"`
}

// negotiate settles a ClientHello (ACS §4): the version, the methods both
// sides evaluate, the transport, and the rest of the ServerHello. tls says
// whether the request came over TLS.
func (g *Gateway) negotiate(hello clientHello, tls bool) (map[string]any, []string, *acs.Error) {
	if !slices.ContainsFunc(hello.Versions, func(v string) bool { return strings.HasPrefix(v, "0.") }) {
		return nil, nil, &acs.Error{Code: acs.CodeUnsupportedVersion, Reason: acs.ReasonVersion, SupportedVersions: []string{acs.Version},
			Message: fmt.Sprintf("no common version: this Guardian speaks %s", acs.Version)}
	}
	transport, ok := selectTransport(hello.Transports, tls)
	if !ok {
		return nil, nil, &acs.Error{Code: acs.CodeSessionRefused, Reason: acs.ReasonTransport,
			Message: fmt.Sprintf("this Guardian is reached over http(s); the client offers %s", strings.Join(hello.Transports, ", "))}
	}
	evaluated := []string{}
	for _, m := range hello.Methods {
		if acs.LookupMethod(m) != nil && !slices.Contains(evaluated, m) {
			evaluated = append(evaluated, m)
		}
	}
	sh := map[string]any{
		"negotiated_version": acs.Version,
		"methods_evaluated":  evaluated,
		"selected_transport": transport,
		// The client waits longer than the endpoint does, so that the
		// endpoint's own -32603 decision_timeout reaches it instead of the
		// two timeouts racing.
		"timeout_config":      map[string]any{"default_ms": (g.cfg.Timeout + clientTimeoutMargin).Milliseconds()},
		"on_decision_failure": g.cfg.OnDecisionFailure,
	}
	if g.cfg.Keys != nil {
		sh["signature_algorithms_supported"] = []string{acs.AlgHMACSHA256}
	}
	if g.cfg.SkewWindow > 0 {
		sh["skew_window_ms"] = g.cfg.SkewWindow.Milliseconds()
	}
	if slices.Contains(hello.Profiles, "acs-core") {
		sh["profiles_accepted"] = []string{"acs-core"}
	}
	return sh, evaluated, nil
}

// clientTimeoutMargin is how much longer than the endpoint's own wait the
// ServerHello tells clients to wait.
const clientTimeoutMargin = time.Second

// selectTransport picks the transport of this connection from those the
// client offers. A client offering only https on a plain connection is
// taken to be behind a TLS-terminating proxy.
func selectTransport(offered []string, tls bool) (string, bool) {
	switch {
	case tls && slices.Contains(offered, "https"):
		return "https", true
	case !tls && slices.Contains(offered, "http"):
		return "http", true
	case !tls && slices.Contains(offered, "https"):
		return "https", true
	}
	return "", false
}

// sameHello reports whether a second hello repeats the negotiated one.
func (n *negotiation) sameHello(canonical []byte, keyID, agentID string) bool {
	return bytes.Equal(n.ClientHello, canonical) && n.KeyID == keyID && n.AgentID == agentID
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
	p := &in.head
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
	key := acs.SessionKey(who.Tenant, p.SessionID)
	n := &negotiation{ClientHello: canonical, KeyID: in.keyID, AgentID: p.AgentID, Caller: who.Name,
		ServerHello: sh, Methods: methods, At: g.cfg.Now().UTC()}
	stored, err := g.handshakes.load(ctx, key)
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
		return g.reject(ctx, from, in, callerNotBound(p.SessionID, who.Name), false)
	case !stored.sameHello(canonical, in.keyID, p.AgentID):
		// v0.1 has no renegotiation; the Go reference answers the same.
		return g.reject(ctx, from, in, &acs.Error{Code: acs.CodeSessionRefused, Reason: acs.ReasonAlreadyNegotiated,
			Message: fmt.Sprintf("session %s already negotiated with another ClientHello", p.SessionID)}, false)
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
