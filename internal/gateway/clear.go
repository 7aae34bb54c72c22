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

// clearedKind is the kind bound into a /clear record's MAC.
const clearedKind = "cleared"

// maxClearGap is how long after a /clear's SessionEnd its SessionStart may
// come and take the record: Claude Code sends the two back to back.
const maxClearGap = 2 * time.Minute

// cleared is the record a /clear leaves: the session the new conversation
// goes on in, and when.
type cleared struct {
	Session string    `json:"session"`
	At      time.Time `json:"at"`
}

// clearedKey is the ACS_HANDSHAKES key of a /clear's record: the caller
// and the working directory of the conversation, hashed (a key holds no
// path), apart from the session keys (tenant.session).
func clearedKey(tenant, caller, cwd string) string {
	sum := sha256.Sum256([]byte(tenant + "\x00" + caller + "\x00" + cwd))
	return "cleared." + hex.EncodeToString(sum[:20])
}

// putCleared leaves the record of a /clear whose conversation goes on in
// session.
func (h *handshakes) putCleared(ctx context.Context, key, session string) error {
	raw, err := json.Marshal(cleared{Session: session, At: h.now().UTC()})
	if err != nil {
		return err
	}
	kv, _, err := h.bucket(ctx)
	if err != nil {
		return err
	}
	if _, err := kv.Put(ctx, key, h.sealer.Seal(clearedKind, key, raw)); err != nil {
		return fmt.Errorf("store the /clear record: %w", err)
	}
	return nil
}

// takeCleared returns the session a /clear's record names and deletes the
// record, "" when there is none, it does not verify, it is older than
// maxClearGap, or another SessionStart took it first.
func (h *handshakes) takeCleared(ctx context.Context, key string) (string, error) {
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
	if err := kv.Delete(ctx, key, jetstream.LastRevision(e.Revision())); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return "", nil // taken or replaced since
		}
		return "", fmt.Errorf("take the /clear record: %w", err)
	}
	record, reason := h.sealer.Open(clearedKind, key, e.Value())
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
// goes on in: the one its session's negotiation says it continues, or, for
// the SessionStart of a /clear from the caller and directory a /clear left
// a record for, that record's session (recorded on the new session's
// negotiation for its later events).
func (g *Gateway) continuation(ctx context.Context, who *Caller, ev *hosthook.Event) error {
	if ev.Host != hosthook.ClaudeCode {
		return nil
	}
	key := acs.SessionKey(who.Tenant, ev.Session)
	n, err := g.handshakes.get(ctx, key)
	if err != nil {
		return err
	}
	if n != nil {
		if n.Continues != "" {
			if n.Caller != who.Name {
				return fmt.Errorf("session %s belongs to another caller", ev.Session)
			}
			ev.Session = n.Continues
		}
		return nil
	}
	if ev.Name != hosthook.SessionStart || ev.Source != hosthook.ClearReason || ev.Cwd == "" {
		return nil
	}
	old, err := g.handshakes.takeCleared(ctx, clearedKey(who.Tenant, who.Name, ev.Cwd))
	if old == "" || err != nil {
		return err
	}
	agentID := who.AgentID
	if agentID == "" {
		agentID = ev.AgentID()
	}
	rec := &negotiation{ClientHello: nativeHello(ev.Host), AgentID: agentID, Caller: who.Name,
		ServerHello: map[string]any{"turnguard_native_hooks": string(ev.Host)}, Methods: hosthook.Methods(ev.Host),
		At: g.cfg.Now().UTC(), Continues: old}
	stored, err := g.handshakes.put(ctx, key, rec)
	if err != nil {
		return err
	}
	if stored.Continues != "" && stored.Caller == who.Name {
		ev.Session = stored.Continues
	}
	g.log.Info().Str("caller", who.Name).Str("session_id", key).Str("continues", stored.Continues).
		Msg("claude-code /clear: the new conversation goes on in the cleared session, which still has background work feeding it")
	return nil
}
