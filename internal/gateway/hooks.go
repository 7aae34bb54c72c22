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
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/internal/hosthook"
	"github.com/turnguard/turnguard/internal/statestore"
)

// Native hook endpoints: a host posts its own hook input (Claude Code's
// http hook) and reads its own answer, with no ACS adapter in between.
// The endpoint is the adapter: it turns the event into the ACS steps the
// host's ACS adapter sends (internal/hosthook), has each decided exactly
// as a POST /acs of it would be — the same caller, session binding,
// processor, chain, receipts and streams — and answers with the first
// decision that was not allow. Where the adapter keeps a session's open
// turn on disk, the endpoint reads the session's state.

// nativeHello is the ClientHello recorded for a session negotiated by a
// native hook endpoint: no ACS client sent one, and a handshake/hello
// later in the session must not pass for it (it differs from any real
// ClientHello).
func nativeHello(host hosthook.Host) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"turnguard_native_hooks":%q}`, host))
}

// sessionStates reads session states for the native endpoints, opening
// the state bucket the first time (the processor creates it).
type sessionStates struct {
	js     jetstream.JetStream
	sealer *turnstate.Sealer

	mu    sync.Mutex
	store *statestore.Store
	// held serialises the events of a session: a host running tool calls
	// in parallel would otherwise have two events read the same state and
	// both open the session, or a turn. An entry lives while its session
	// has an event in flight.
	held map[string]*sessionLock
}

type sessionLock struct {
	sync.Mutex
	waiters int
}

// lock holds the session's lock until the returned func is called.
func (s *sessionStates) lock(key string) func() {
	s.mu.Lock()
	if s.held == nil {
		s.held = map[string]*sessionLock{}
	}
	l := s.held[key]
	if l == nil {
		l = &sessionLock{}
		s.held[key] = l
	}
	l.waiters++
	s.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		s.mu.Lock()
		if l.waiters--; l.waiters == 0 {
			delete(s.held, key)
		}
		s.mu.Unlock()
	}
}

func (s *sessionStates) load(ctx context.Context, key string) (*turnstate.Session, error) {
	s.mu.Lock()
	store := s.store
	s.mu.Unlock()
	if store == nil {
		kv, err := s.js.KeyValue(ctx, acs.StateBucket)
		if err != nil {
			return nil, fmt.Errorf("KV bucket %s: %w", acs.StateBucket, err)
		}
		store = statestore.NewStore(kv, s.sealer)
		s.mu.Lock()
		s.store = store
		s.mu.Unlock()
	}
	sess, _, _, err := store.Load(ctx, key)
	return sess, err
}

// viewOf is what a plan needs of a session's state as load returned it.
func viewOf(sess *turnstate.Session, err error) (hosthook.Session, error) {
	var integrity *statestore.IntegrityError
	switch {
	case errors.As(err, &integrity):
		// A state that does not verify counts as a started session with
		// no open turn: the processor decides what its next step meets
		// (fail closed there), and the endpoint does not stall on it.
		return hosthook.Session{Started: true}, nil
	case err != nil:
		// Without the state the plan cannot know the session's turn: no
		// decision rather than a guess (fail closed).
		return hosthook.Session{}, fmt.Errorf("the session's state cannot be read: %w", err)
	}
	return hookView(sess), nil
}

// agentViews sets what the plan needs of the session's other agents: on
// the view of the event's session, or of its subagent's (child, nil for a
// main agent's event; childState its state), which subagents the event
// takes back from (takeBackOf) and which a subagent's message reaches
// (recipientsOf), as load reads their states. decideHook and the tests'
// harness both plan with it.
func agentViews(load func(key string) (*turnstate.Session, error), tenant string, ev *hosthook.Event, root, childState *turnstate.Session, view, child *hosthook.Session) error {
	ids, scope := ev.ReturnedAgents()
	var err error
	switch {
	case child == nil && scope != hosthook.ReturnsNone:
		view.TakeBack, err = takeBackOf(load, tenant, ev, root, root, ids, scope)
	case child != nil:
		if scope != hosthook.ReturnsNone {
			// A subagent taking back an agent it launched: that
			// agent's lock is not held, as a parent's stop does not
			// hold its subagent's (the processor waits for its state).
			if child.TakeBack, err = takeBackOf(load, tenant, ev, root, childState, ids, scope); err != nil {
				return err
			}
		}
		if ev.MessagesAgents() {
			child.Recipients, err = recipientsOf(load, tenant, ev, root)
		}
	}
	return err
}

// takeBackOf is the sessions of the subagents whose work an event brings
// back to the agent whose event it is (spawner: the root session's state,
// or a subagent's) and whose taint it takes back
// (hosthook.Session.TakeBack): of those it names (ids), the ones of the
// root's tree — in the root's or the spawner's Subagents, or by their own
// link to either (a subagent's nested agent is opened as the root's, a
// sibling whose taint its stop takes back: turnstate.Session.Spawned);
// when it names none, the spawner's own still at work (their newest turn
// open), or every one the two remember when the event reads all their
// work (scope), as load reads their states. A subagent whose state does
// not verify is taken back from (fail closed: its stop is sent, and the
// processor decides what it meets).
func takeBackOf(load func(key string) (*turnstate.Session, error), tenant string, ev *hosthook.Event, root, spawner *turnstate.Session, ids []string, scope hosthook.ReturnScope) ([]string, error) {
	if root == nil || scope == hosthook.ReturnsNone {
		return nil, nil
	}
	self := root.SessionID
	var own []string
	if spawner != root {
		self = ev.SubagentSession()
		if spawner != nil {
			own = spawner.Subagents
		}
	}
	var children []string
	switch {
	case scope == hosthook.ReturnsNamed:
		for _, id := range ids {
			children = append(children, ev.AgentSession(id))
		}
	case scope == hosthook.ReturnsAll || spawner == root:
		children = slices.Concat(root.Subagents, own)
	default:
		// A subagent's report naming no agent: only its own (a
		// sibling still at work did not report to it).
		children = own
	}
	var take []string
	for _, c := range children {
		if c == self || slices.Contains(take, c) {
			continue
		}
		cs, err := load(acs.SessionKey(tenant, c))
		var integrity *statestore.IntegrityError
		switch {
		case errors.As(err, &integrity):
		case err != nil:
			return nil, fmt.Errorf("subagent %s: the state cannot be read: %w", c, err)
		default:
			linked := slices.Contains(root.Subagents, c) || slices.Contains(own, c) ||
				cs != nil && cs.Parent != nil && (cs.Parent.SessionID == root.SessionID || cs.Parent.SessionID == self)
			running := cs != nil && len(cs.OpenTurns) > 0
			if !linked || scope == hosthook.ReturnsRunning && !running {
				continue
			}
		}
		take = append(take, c)
	}
	return take, nil
}

// recipientsOf is the root's other subagents still at work, with their
// open turns: a subagent's message (SendMessage to a teammate or a
// sibling by name, a task on the shared list) may reach any of them, so
// each takes the sender's taint back. One whose state does not verify is
// left out: a stop in it would be refused, and the message denied with it.
func recipientsOf(load func(key string) (*turnstate.Session, error), tenant string, ev *hosthook.Event, root *turnstate.Session) ([]hosthook.AgentTurn, error) {
	if root == nil {
		return nil, nil
	}
	self := ev.SubagentSession()
	var out []hosthook.AgentTurn
	for _, c := range root.Subagents {
		if c == self {
			continue
		}
		cs, err := load(acs.SessionKey(tenant, c))
		var integrity *statestore.IntegrityError
		switch {
		case errors.As(err, &integrity):
			continue
		case err != nil:
			return nil, fmt.Errorf("subagent %s: the state cannot be read: %w", c, err)
		}
		if cs == nil || len(cs.OpenTurns) == 0 || cs.Status == turnstate.StatusClosed {
			continue
		}
		out = append(out, hosthook.AgentTurn{Session: c, OpenTurn: cs.OpenTurns[len(cs.OpenTurns)-1].TurnID})
	}
	return out, nil
}

// hookView is what a plan needs of a session's state (nil: none yet).
func hookView(sess *turnstate.Session) hosthook.Session {
	if sess == nil {
		return hosthook.Session{}
	}
	v := hosthook.Session{Started: sess.Started, Closed: sess.Status == turnstate.StatusClosed, TurnEnded: sess.LastClosedTurn != nil}
	if n := len(sess.OpenTurns); n > 0 {
		v.OpenTurn, v.Declared = sess.OpenTurns[n-1].TurnID, !sess.OpenTurns[n-1].Implicit
	}
	return v
}

// serveHook answers a host's hook: POST /hooks/<host> with the host's
// hook input (Claude Code's http hook; the command hooks of Codex, Cursor
// and Claude Code through the turnguard command), authenticated as POST
// /acs is. The answer
// is HTTP 200 with the host's JSON output, or an empty body when turnguard
// has nothing to say; 400 for a body that is no hook input (kept in the
// dead-letter stream), which Claude Code treats as the hook's failure (a
// block with onFailure "block"); 404 for a host it does not speak.
func (g *Gateway) serveHook(w http.ResponseWriter, r *http.Request) {
	host, ok := hosthook.ParseHost(r.PathValue("host"))
	if !ok {
		writeJSONError(w, http.StatusNotFound, fmt.Sprintf("no hook endpoint for host %q (claude-code, codex, cursor)", r.PathValue("host")))
		return
	}
	who := g.caller(w, r)
	if who == nil {
		return
	}
	ctx := r.Context()
	from := origin{caller: who, remote: r.RemoteAddr, dl: &dlBudget{left: g.cfg.MaxDeadLetters}}
	defer g.summariseDeadLetters(ctx, from)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.cfg.MaxBodyBytes))
	var mbe *http.MaxBytesError
	tooLarge := errors.As(err, &mbe)
	if ct := r.Header.Get("Content-Type"); !isJSON(ct) {
		ref := &acs.Error{Code: acs.CodeInvalidRequest, Reason: acs.ReasonContentType,
			Message: fmt.Sprintf("Content-Type %q: POST /hooks/%s takes application/json", ct, host)}
		g.deadLetter(ctx, from, incoming{raw: body}, ref, tooLarge)
		writeJSONError(w, http.StatusUnsupportedMediaType, ref.Message)
		return
	}
	if err != nil {
		ref := &acs.Error{Code: acs.CodeInvalidRequest, Reason: acs.ReasonTooLarge, Message: fmt.Sprintf("request body exceeds %d bytes", g.cfg.MaxBodyBytes)}
		if !tooLarge {
			ref = &acs.Error{Code: acs.CodeParseError, Reason: acs.ReasonParseError, Message: "cannot read the request body: " + err.Error()}
		}
		g.deadLetter(ctx, from, incoming{raw: body}, ref, tooLarge)
		writeJSONError(w, http.StatusBadRequest, ref.Message)
		return
	}
	ev, err := hosthook.Parse(host, body)
	if err != nil {
		ref := &acs.Error{Code: acs.CodeInvalidRequest, Reason: acs.ReasonEnvelopeInvalid, Message: err.Error()}
		g.deadLetter(ctx, from, incoming{raw: body}, ref, false)
		writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	out, failClosed, rep := g.decideHook(ctx, from, ev, r.TLS != nil)
	if out.Failed || out.Decision != "allow" {
		g.log.Info().Str("caller", who.Name).Str("session_id", ev.Session).Str("event", ev.String()).
			Str("decision", out.Decision).Bool("failed", out.Failed).Str("reason", out.Reason).Msg(string(host) + " hook")
	}
	answer := ev.Answer(out, failClosed)
	w.Header().Set("Content-Type", "application/json")
	// The receipt of the decision that answered, for an auditor.
	receiptHeaders(w, rep)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(answer)
}

func writeJSONError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	raw, _ := json.Marshal(map[string]string{"error": msg})
	_, _ = w.Write(raw)
}

// decideHook sends the event's steps in order and returns what they got:
// the first decision that was not allow, or allow; whether a failure to
// decide fails closed (always, but for a decision that did not come in
// time under --on-decision-failure proceed); and the reply that decided.
func (g *Gateway) decideHook(ctx context.Context, from origin, ev *hosthook.Event, tls bool) (hosthook.Outcome, bool, reply) {
	who := from.caller
	if g.cfg.RequireSignatures {
		return hosthook.Outcome{Failed: true, Reason: "this processor requires signed envelopes (--require-signatures), and a host's own hook cannot sign: " +
			"use the ACS adapter, or a processor without --require-signatures for native hooks"}, true, reply{}
	}
	if err := g.continuation(ctx, who, ev); err != nil {
		return hosthook.Outcome{Failed: true, Reason: err.Error()}, true, reply{}
	}
	key := acs.SessionKey(who.Tenant, ev.Session)
	agentID := who.AgentID
	if g.cfg.Handshake == HandshakeRequired {
		n, err := g.nativeNegotiation(ctx, who, key, ev)
		if err != nil {
			return hosthook.Outcome{Failed: true, Reason: err.Error()}, true, reply{}
		}
		if agentID == "" {
			agentID = n.AgentID
		}
	}
	if agentID == "" {
		agentID = ev.AgentID()
	}
	// A subagent's events go to its own session as well (its first one
	// opens it): negotiated as the parent's, and held after the parent's,
	// always in that order.
	child := ev.SubagentSession()
	childKey := ""
	if child != "" {
		childKey = acs.SessionKey(who.Tenant, child)
		if g.cfg.Handshake == HandshakeRequired {
			if _, err := g.nativeNegotiation(ctx, who, childKey, ev); err != nil {
				return hosthook.Outcome{Failed: true, Reason: "subagent " + ev.Subagent + ": " + err.Error()}, true, reply{}
			}
		}
	}
	defer g.states.lock(key)()
	sess, err := g.states.load(ctx, key)
	view, err := viewOf(sess, err)
	if err != nil {
		return hosthook.Outcome{Failed: true, Reason: err.Error()}, true, reply{}
	}
	load := func(key string) (*turnstate.Session, error) { return g.states.load(ctx, key) }
	if childKey == "" {
		if err := agentViews(load, who.Tenant, ev, sess, nil, &view, nil); err != nil {
			return hosthook.Outcome{Failed: true, Reason: err.Error()}, true, reply{}
		}
		if view.GoesOn = goesOn(load, who.Tenant, ev, sess); view.GoesOn {
			// Recorded before the steps: the new conversation's
			// SessionStart follows at once.
			if err := g.clearing(ctx, who, ev); err != nil {
				// The session ends, and the new conversation starts
				// clean: say so, loudly.
				g.log.Error().Err(err).Str("caller", who.Name).Str("session_id", ev.Session).
					Msg("claude-code /clear: the cleared session still has background work feeding it, and the new conversation could not be pointed at it")
				view.GoesOn = false
			}
		}
	} else {
		defer g.states.lock(childKey)()
		cs, err := g.states.load(ctx, childKey)
		cv, err := viewOf(cs, err)
		if err == nil {
			err = agentViews(load, who.Tenant, ev, sess, cs, &view, &cv)
		}
		if err != nil {
			return hosthook.Outcome{Failed: true, Reason: "subagent " + ev.Subagent + ": " + err.Error()}, true, reply{}
		}
		view.Subagent = &cv
	}
	steps := ev.Plan(view, uuid.NewString)
	out := hosthook.Outcome{Decision: "allow"}
	var last reply
	for _, st := range steps {
		session := ev.Session
		if st.Session != "" {
			session = st.Session
		}
		raw, err := st.Envelope(ev.Host, session, agentID, ev.Cwd, time.Now().UTC().Format(hosthook.TimestampFormat))
		if err != nil {
			return hosthook.Outcome{Failed: true, Reason: err.Error()}, true, reply{}
		}
		rep := g.one(ctx, from, raw, tls)
		decision, reason, timeout, failure := readReply(rep)
		if failure != "" {
			return hosthook.Outcome{Failed: true, Reason: st.Method + ": " + failure}, !(timeout && g.cfg.OnDecisionFailure == "proceed"), rep
		}
		last = rep
		if decision != "allow" {
			return hosthook.Outcome{Decision: decision, Reason: reason}, true, rep
		}
	}
	return out, true, last
}

// nativeNegotiation returns the session's negotiation, recording one for
// the native endpoint when the session has none (or is only bound to its
// caller): the caller, the agent and the methods the host's events use. A
// session another caller negotiated or bound is refused.
func (g *Gateway) nativeNegotiation(ctx context.Context, who *Caller, key string, ev *hosthook.Event) (*negotiation, error) {
	n, err := g.handshakes.get(ctx, key)
	if err != nil {
		return nil, err
	}
	agentID := who.AgentID
	if agentID == "" {
		agentID = ev.AgentID()
	}
	native := &negotiation{ClientHello: nativeHello(ev.Host), AgentID: agentID, Caller: who.Name,
		ServerHello: map[string]any{"turnguard_native_hooks": string(ev.Host)}, Methods: hosthook.Methods(ev.Host), At: g.cfg.Now().UTC()}
	switch {
	case n == nil:
		n, err = g.handshakes.put(ctx, key, native)
	case n.Caller != who.Name:
		return nil, fmt.Errorf("session %s belongs to another caller", ev.Session)
	case !n.negotiated():
		n, err = g.handshakes.upgrade(ctx, key, n, native)
	case bytes.Equal(n.ClientHello, native.ClientHello) && !subset(native.Methods, n.Methods):
		// Negotiated by this endpoint before the host's events meant
		// more steps (Codex's UserPromptSubmit: turnStart, turnEnd,
		// userMessage): the host's methods now, or a session resumed
		// across the upgrade has its prompts refused.
		grown := *n
		grown.Methods = native.Methods
		n, err = g.handshakes.upgrade(ctx, key, n, &grown)
	}
	if err != nil {
		return nil, err
	}
	if n.Caller != who.Name {
		// Another caller's negotiation won a race to the record.
		return nil, fmt.Errorf("session %s belongs to another caller", ev.Session)
	}
	return n, nil
}

// subset reports whether every method of a is in b.
func subset(a, b []string) bool {
	for _, m := range a {
		if !slices.Contains(b, m) {
			return false
		}
	}
	return true
}

// readReply reads a step's answer: its decision and reasoning, or why
// there is none (failure), and whether that is a decision not had in time.
func readReply(rep reply) (decision, reason string, timeout bool, failure string) {
	raw, err := json.Marshal(rep)
	if err != nil {
		return "", "", false, err.Error()
	}
	var doc struct {
		Result *struct {
			Decision  string `json:"decision"`
			Reasoning string `json:"reasoning"`
		} `json:"result"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    struct {
				Reason string `json:"reason"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return "", "", false, "unreadable answer: " + err.Error()
	}
	switch {
	case doc.Error != nil:
		return "", "", doc.Error.Data.Reason == "decision_timeout", fmt.Sprintf("refused %d: %s", doc.Error.Code, doc.Error.Message)
	case doc.Result == nil || doc.Result.Decision == "":
		return "", "", false, "an answer without a decision"
	}
	return doc.Result.Decision, doc.Result.Reasoning, false, ""
}
