package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/internal/hosthook"
)

// A Claude Code /clear starts the conversation over under a new session
// id, and keeps running what the old one started in the background: a
// Monitor still feeds its lines, a background shell's output is still
// read with TaskOutput, a background subagent still reports. A new
// session would know none of them, and what they bring would meet no
// window. So when the cleared session still has any of them, the new
// conversation goes on in it: the SessionEnd of the /clear ends only the
// open turn and leaves a record for the caller and working directory
// (clearedKey), and the SessionStart of the new conversation (source
// "clear") from the same caller and directory takes it, and records on its
// own session's negotiation that it continues the old one
// (negotiation.Continues): every later event of the new id is sent in the
// old session, with what it holds. A cleared session that feeds nothing
// ends as before, and the new conversation starts clean.

// clearedKind is the kind bound into a /clear record's MAC, and
// clearStartKind into the record of a new conversation's SessionStart that
// found none (its SessionEnd came later).
const (
	clearedKind    = "cleared"
	clearStartKind = "clear-start"
)

// maxClearGap is how long after a /clear's SessionEnd its SessionStart may
// come and take the record: Claude Code sends the two back to back.
const maxClearGap = 2 * time.Minute

// cleared is the record a /clear leaves: the session the new conversation
// goes on in, and when.
type cleared struct {
	Session string    `json:"session"`
	At      time.Time `json:"at"`
}

// clearedKey is the ACS_HANDSHAKES key of a record of kind: the caller
// and the working directory of the conversation, hashed (a key holds no
// path), apart from the session keys (tenant.session).
func clearedKey(kind, tenant, caller, cwd string) string {
	sum := sha256.Sum256([]byte(tenant + "\x00" + caller + "\x00" + cwd))
	return kind + "." + hex.EncodeToString(sum[:20])
}

// putCleared leaves a record of kind naming session: of a /clear, the
// session its conversation goes on in; of a SessionStart that found none,
// the new conversation's.
func (h *handshakes) putCleared(ctx context.Context, kind, key, session string) error {
	raw, err := json.Marshal(cleared{Session: session, At: h.now().UTC()})
	if err != nil {
		return err
	}
	kv, _, err := h.bucket(ctx)
	if err != nil {
		return err
	}
	if _, err := kv.Put(ctx, key, h.sealer.Seal(kind, key, raw)); err != nil {
		return fmt.Errorf("store the /clear record: %w", err)
	}
	return nil
}

// takeCleared returns the session a record of kind names, "" when there is
// none, it does not verify, it is older than maxClearGap, or (consume)
// another event took it first; consume deletes it. A /clear's record is
// not consumed: two terminals of one caller in one directory clearing
// together cannot tell whose new conversation is whose, so each goes on in
// the session that still feeds (a deny too many rather than a window
// missed), and no one holding the caller's token can take the record away
// from the conversation it is for.
func (h *handshakes) takeCleared(ctx context.Context, kind, key string, consume bool) (string, error) {
	kv, _, err := h.bucket(ctx)
	if err != nil {
		return "", err
	}
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the /clear record: %w", err)
	}
	if consume {
		if err := kv.Delete(ctx, key, jetstream.LastRevision(e.Revision())); err != nil {
			if errors.Is(err, jetstream.ErrKeyExists) {
				return "", nil // taken or replaced since
			}
			return "", fmt.Errorf("take the /clear record: %w", err)
		}
	}
	record, reason := h.sealer.Open(kind, key, e.Value())
	if reason != "" {
		h.invalid(key, reason)
		return "", nil
	}
	var c cleared
	if err := json.Unmarshal(record, &c); err != nil || c.Session == "" {
		h.invalid(key, turnstate.ReasonNotDecoded)
		return "", nil
	}
	if age := h.now().Sub(c.At); age < 0 || age > maxClearGap {
		return "", nil
	}
	return c.Session, nil
}

// goesOn reports whether a Claude Code conversation cleared now goes on in
// its session (hosthook.Session.GoesOn): the event is the main agent's
// SessionEnd of a /clear, with a working directory to find the new
// conversation by, and the session still has a held source, a background
// task, or a subagent at work.
func goesOn(load func(key string) (*turnstate.Session, error), tenant string, ev *hosthook.Event, sess *turnstate.Session) bool {
	if ev.Host != hosthook.ClaudeCode || ev.Name != hosthook.SessionEnd || ev.Reason != hosthook.ClearReason ||
		ev.SubagentSession() != "" || ev.Cwd == "" || sess == nil || sess.Status == turnstate.StatusClosed {
		return false
	}
	if len(sess.Held) > 0 || len(sess.Tasks) > 0 {
		return true
	}
	for _, c := range sess.Subagents {
		cs, err := load(acs.SessionKey(tenant, c))
		if err != nil {
			return true // unreadable: it may be at work (fail closed)
		}
		if cs != nil && len(cs.OpenTurns) > 0 && cs.Status != turnstate.StatusClosed {
			return true
		}
	}
	return false
}

// continuation points a Claude Code event at the session its conversation
// goes on in: the one its session's negotiation says it continues; or, for
// the first events of a conversation a /clear began — its SessionStart
// (source "clear"), or a background subagent's event that came before it —
// the session a /clear record of the caller and directory names (recorded
// on the new session's negotiation for its later events). A SessionStart
// that finds no record leaves one of its own, which the /clear's SessionEnd
// takes when it comes second (clearing).
func (g *Gateway) continuation(ctx context.Context, who *Caller, ev *hosthook.Event) error {
	if ev.Host != hosthook.ClaudeCode {
		return nil
	}
	n, err := g.handshakes.get(ctx, acs.SessionKey(who.Tenant, ev.Session))
	if err != nil {
		return err
	}
	if n != nil && n.Continues != "" {
		if n.Caller != who.Name {
			return fmt.Errorf("session %s belongs to another caller", ev.Session)
		}
		ev.Session = n.Continues
		return nil
	}
	start := ev.Name == hosthook.SessionStart && ev.Source == hosthook.ClearReason
	if ev.Cwd == "" || !start && (ev.Subagent == "" || n != nil) {
		return nil
	}
	old, err := g.handshakes.takeCleared(ctx, clearedKind, clearedKey(clearedKind, who.Tenant, who.Name, ev.Cwd), false)
	if err != nil {
		return err
	}
	if old == "" || old == ev.Session {
		if start {
			return g.handshakes.putCleared(ctx, clearStartKind, clearedKey(clearStartKind, who.Tenant, who.Name, ev.Cwd), ev.Session)
		}
		return nil
	}
	if err := g.continues(ctx, who, ev, ev.Session, old); err != nil {
		return err
	}
	ev.Session = old
	return nil
}

// clearing leaves the record of a /clear whose conversation goes on in
// its session (hosthook.Session.GoesOn) — or, when the new conversation's
// SessionStart came first and left its own, points that conversation at
// this session at once.
func (g *Gateway) clearing(ctx context.Context, who *Caller, ev *hosthook.Event) error {
	fresh, err := g.handshakes.takeCleared(ctx, clearStartKind, clearedKey(clearStartKind, who.Tenant, who.Name, ev.Cwd), true)
	if err != nil {
		return err
	}
	if fresh != "" && fresh != ev.Session {
		return g.continues(ctx, who, ev, fresh, ev.Session)
	}
	return g.handshakes.putCleared(ctx, clearedKind, clearedKey(clearedKind, who.Tenant, who.Name, ev.Cwd), ev.Session)
}

// continues records on session fresh's negotiation that its conversation
// goes on in session old: a new one, or the one its first events made.
func (g *Gateway) continues(ctx context.Context, who *Caller, ev *hosthook.Event, fresh, old string) error {
	key := acs.SessionKey(who.Tenant, fresh)
	n, err := g.handshakes.get(ctx, key)
	if err != nil {
		return err
	}
	switch {
	case n == nil:
		agentID := who.AgentID
		if agentID == "" {
			agentID = ev.AgentID()
		}
		n, err = g.handshakes.put(ctx, key, &negotiation{ClientHello: nativeHello(ev.Host), AgentID: agentID, Caller: who.Name,
			ServerHello: map[string]any{"turnguard_native_hooks": string(ev.Host)}, Methods: hosthook.Methods(ev.Host),
			At: g.cfg.Now().UTC(), Continues: old})
	case n.Caller != who.Name:
		return fmt.Errorf("session %s belongs to another caller", fresh)
	case n.Continues == "":
		grown := *n
		grown.Continues = old
		n, err = g.handshakes.upgrade(ctx, key, n, &grown)
	}
	if err != nil {
		return err
	}
	if n.Continues != old || n.Caller != who.Name {
		return fmt.Errorf("session %s: its negotiation changed while it was pointed at the cleared session", fresh)
	}
	g.log.Info().Str("caller", who.Name).Str("session_id", fresh).Str("continues", old).
		Msg("claude-code /clear: the new conversation goes on in the cleared session, which still has background work feeding it")
	return nil
}
