// Package traffic generates realistic, deterministic ACS traffic for load
// tests: many sessions, each a sequence of valid envelopes with the decision
// and alerts turnguard's default rule pack must give every one of them and
// the counters the session's state must show afterwards.
//
// A session is built from its index alone (seeded PRNG, envelope times from
// a base time, no wall clock), so a load generator can publish millions of
// sessions holding only the ones in flight, and a reconciler can rebuild any
// session's expectations later from its index.
//
// The expectations come from a small model of the default pack that the
// generator runs while it emits envelopes (taint windows of TG-TAINT-001,
// auto-continuation runs of TG-CONT-001); the package's tests hold that
// model to the real decision core.
package traffic

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"time"

	"github.com/turnguard/turnguard/internal/core/acs"
)

// Rule ids of the default pack that generated traffic triggers on purpose.
const (
	RuleTaint           = "TG-TAINT-001"
	RuleTaintFailClosed = "TG-TAINT-002"
	RuleTaintActing     = "TG-TAINT-004"
	RuleContinuation    = "TG-CONT-001"
)

// The default pack's limits the model follows (rules/default.yaml).
const (
	taintTurns    = 2
	taintDuration = 30 * time.Minute
	maxAutoRun    = 5
)

// DefaultBase is the time of session 0's first envelope when Config.Base is
// zero.
var defaultBase = time.Date(2026, 10, 1, 9, 0, 0, 0, time.UTC)

// Config chooses the traffic.
type Config struct {
	// Seed and Tenant together determine every byte generated: the same
	// pair gives the same sessions, ids included. Ids depend on the tenant
	// so that runs with the same seed under different tenants never share
	// a Nats-Msg-Id.
	Seed   uint64
	Tenant string
	// Base is the envelope time of session 0's first envelope; session i
	// starts i seconds later (modulo a day). Default 2026-10-01T09:00:00Z.
	Base time.Time
	// Agents is how many distinct agent ids the sessions spread over
	// (default 64).
	Agents int
}

// Generator builds sessions by index. It is safe for concurrent use.
type Generator struct {
	cfg Config
	key uint64
}

// New returns a generator for cfg.
func New(cfg Config) (*Generator, error) {
	if cfg.Tenant == "" {
		return nil, errors.New("traffic: a tenant is required")
	}
	if err := acs.CheckTenant(cfg.Tenant); err != nil {
		return nil, fmt.Errorf("traffic: %w", err)
	}
	if cfg.Base.IsZero() {
		cfg.Base = defaultBase
	}
	if cfg.Agents <= 0 {
		cfg.Agents = 64
	}
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], cfg.Seed)
	h.Write(b[:])
	h.Write([]byte(cfg.Tenant))
	return &Generator{cfg: cfg, key: h.Sum64()}, nil
}

// Tenant is the tenant every session is published under.
func (g *Generator) Tenant() string { return g.cfg.Tenant }

// Kind is what a session was generated to exercise.
type Kind string

// Session kinds.
const (
	// Clean sessions never see untrusted content; their consequential
	// calls are allowed.
	Clean Kind = "clean"
	// Taint sessions take in untrusted content in one turn and make a
	// consequential call 0–5 turns later: denied within the window, allowed
	// after it.
	Taint Kind = "taint"
	// TaintExpired sessions make the call 1–2 turns after the taint but
	// more than 30 minutes (envelope time) later: allowed.
	TaintExpired Kind = "taint_expired"
	// Runaway sessions run six auto-continuation turns in a row; the sixth
	// turnStart is denied (TG-CONT-001).
	Runaway Kind = "runaway"
)

// Envelope is one generated envelope with what it must get.
type Envelope struct {
	// Subject is the inbound subject (acs.hooks.<tenant>.<session>.<hook>).
	Subject string
	Hook    string
	Data    []byte
	// RequestID is params.request_id; MsgID the publisher's Nats-Msg-Id
	// (<session_id>:<request_id>, pkg/client's convention).
	RequestID string
	MsgID     string
	// Decision is the decision the default pack gives; Alerts the rule ids
	// of the alerts it raises, in rule order.
	Decision acs.Disposition
	Alerts   []string

	// turnsStarted and openTurns are the session's counters after this
	// envelope.
	turnsStarted int
	openTurns    int
}

// Session is one generated session.
type Session struct {
	Index     int64
	Tenant    string
	ID        string
	AgentID   string
	Kind      Kind
	Envelopes []Envelope
	// Provenance says whether the session's envelopes carry ACS provenance
	// (taint then comes from untrusted origins) or none at all (taint comes
	// from the tool catalog's untrusted_source tools).
	Provenance bool
	// Gap is, in taint sessions, how many turns after the tainting turn the
	// consequential call was planned (nested turns may widen the distance
	// the rules count); -1 otherwise.
	Gap int
}

// Key is the session's key in the ACS_TURNSTATE bucket.
func (s *Session) Key() string { return acs.SessionKey(s.Tenant, s.ID) }

// Session builds session i.
func (g *Generator) Session(i int64) *Session {
	rng := rand.New(rand.NewPCG(g.key, uint64(i)))
	b := &builder{
		rng: rng,
		now: g.cfg.Base.Add(time.Duration(i%86400) * time.Second),
		s:   &Session{Index: i, Tenant: g.cfg.Tenant, Gap: -1},
	}
	b.s.ID = b.uuid()
	b.s.AgentID = fmt.Sprintf("loadgen-agent-%03d", rng.IntN(g.cfg.Agents))
	b.s.Provenance = rng.IntN(2) == 0
	b.plan()
	return b.s
}

// uuid returns a version-4-shaped UUID from the session's PRNG.
func (b *builder) uuid() string {
	var u [16]byte
	binary.BigEndian.PutUint64(u[:8], b.rng.Uint64())
	binary.BigEndian.PutUint64(u[8:], b.rng.Uint64())
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	h := hex.EncodeToString(u[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
