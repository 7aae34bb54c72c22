// Package turnstate is the per-session ACS turn model: the state a session
// carries between envelopes, the pure transitions that apply one envelope to
// it (and report protocol violations), and the KV store that keeps it.
package turnstate

import (
	"maps"
	"slices"
	"time"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/lineage"
)

// Bounds that keep a session's state small enough for one KV value however
// long the session runs.
const (
	// MaxOpenTurns is how deep turns may nest.
	MaxOpenTurns = 32
	// MaxRecentRequestIDs is how many request ids are kept for replay
	// detection; an older request id replayed later is not recognised here
	// (the stream's duplicate window and, with signatures, the timestamp
	// skew window cover it).
	MaxRecentRequestIDs = 128
	// MaxRecentTurnIDs is how many closed turn ids are kept to detect reuse.
	MaxRecentTurnIDs = 64
	// MaxSubagents is how many spawned subagent session ids a session
	// keeps (Session.Subagents).
	MaxSubagents = 64
)

// Status is whether a session still accepts steps.
type Status string

// Session statuses.
const (
	StatusOpen   Status = "open"
	StatusClosed Status = "closed"
)

// Session is one ACS session's state, stored as JSON under the KV key
// <tenant>.<session_id>. Times are envelope times, never the wall clock.
type Session struct {
	Tenant    string `json:"tenant"`
	SessionID string `json:"session_id"`
	AgentID   string `json:"agent_id,omitempty"`
	Status    Status `json:"status"`
	// Started is true once sessionStart was applied.
	Started   bool   `json:"started"`
	EndReason string `json:"end_reason,omitempty"`
	// Parent is set on a subagent's session when its parent announced it
	// with subagentStart.
	Parent *ParentLink `json:"parent,omitempty"`
	// Caller is who the session belongs to: the publisher of its first
	// envelope (CallerNATS, NATSCaller(key), or HTTPCaller(name)); a subagent's session
	// belongs to its parent's. Envelopes of anyone else are refused before
	// they reach the state (guardian). Empty on states of earlier versions,
	// which their next envelope binds.
	Caller string `json:"caller,omitempty"`
	// Subagents are the sessions this one spawned (allowed subagentStarts),
	// newest last, at most MaxSubagents: a subagent whose own session began
	// before the spawn was applied has no Parent link, and is still this
	// session's to take taint back from.
	Subagents []string `json:"subagents,omitempty"`
	// ActivatedBy is the trigger_type of the first agentTrigger that
	// activated the session for someone other than a user — a2a_inbound
	// (a peer agent) or external_event (a webhook, a queue message, an
	// incoming mail) — set by the rules (policy): the session's messages
	// are then that peer's or event's, not a user's words.
	ActivatedBy string `json:"activated_by,omitempty"`

	// TurnsStarted counts the turns that count (turn indexes, per-turn
	// limits): a turn, opened by turnStart or implicitly (see
	// Turn.Implicit), counts once a work step in it is let through
	// (RecordDecision, Work), and a nested turn is part of the turn it
	// nests in. It is the index of the newest turn that counted (1-based).
	// The name is kept from when it counted every turn opened, so that
	// stored states stay readable.
	TurnsStarted int `json:"turns_started"`
	// WindowTurns counts the counted turns that age taint windows: those
	// a user's message opened (or a trigger from outside, or a step
	// naming a fresh turn id), not those the agent opened to go on with
	// its own work — auto_continuation, agent_loop, subagent_return —
	// which continue the turn before them (Turn.WindowIndex). A window in
	// turns is meant to close once the user has moved the session on; an
	// agent looping on, or a Stop hook keeping it going, is still working
	// from what it read. Zero on states of earlier versions: their windows
	// are then measured from the first turn counted after (fail closed).
	WindowTurns    int         `json:"window_turns,omitempty"`
	OpenTurns      []Turn      `json:"open_turns"`
	LastClosedTurn *ClosedTurn `json:"last_closed_turn,omitempty"`

	// Envelopes counts envelopes applied to this session.
	Envelopes uint64    `json:"envelopes"`
	FirstSeq  uint64    `json:"first_seq"`
	LastSeq   uint64    `json:"last_seq"`
	FirstTime time.Time `json:"first_time"`
	// LastTime is the latest envelope time seen (envelopes may carry
	// earlier times than their predecessors).
	LastTime time.Time `json:"last_time"`

	// ChainHead is the hash of the session's newest ContextEntry (ACS
	// §8.2); ChainLength counts the entries.
	ChainHead   string `json:"chain_head,omitempty"`
	ChainLength uint64 `json:"chain_length,omitempty"`

	RecentRequestIDs []string `json:"recent_request_ids"`
	RecentTurnIDs    []string `json:"recent_turn_ids,omitempty"`
	// RecentNonces are the newest params.nonce values of the session
	// (replay.go).
	RecentNonces []string `json:"recent_nonces,omitempty"`

	// Violations counts violations by name; Decisions counts decisions by
	// disposition.
	Violations map[string]uint64          `json:"violations,omitempty"`
	Decisions  map[acs.Disposition]uint64 `json:"decisions,omitempty"`

	// Rule state (internal/core/policy): active taint labels by label, threshold
	// counters by rule id, remembered provenance, and hits by rule id.
	Taints     map[string]*Taint   `json:"taints,omitempty"`
	Counters   map[string]*Counter `json:"counters,omitempty"`
	Provenance *ProvenanceMemory   `json:"provenance,omitempty"`
	RuleHits   map[string]uint64   `json:"rule_hits,omitempty"`
	// Lineage indexes the user's words and the untrusted contents the
	// session saw, so that a call's argument values can be traced to
	// them; kept only under a rule set whose conditions read lineage
	// (bounded: lineage.MaxUntrusted, MaxTrusted, MaxSources).
	Lineage *lineage.Index `json:"lineage,omitempty"`
	// Unanswered are the calls let run whose result would set a taint
	// label and has not arrived (rules: taint sources with unanswered),
	// at most MaxUnanswered.
	Unanswered []UnansweredCall `json:"unanswered,omitempty"`
	// FileTaints are the files calls let run wrote with untrusted content
	// (rules: taint sources with files), newest last, at most
	// MaxFileTaints.
	FileTaints []FileTaint `json:"file_taints,omitempty"`
	// Held are the sources feeding the session without a call that still
	// run, at most MaxHeldSources; Stopping the calls stopping one that
	// wait for their result, at most MaxStopping.
	Held     []HeldSource `json:"held,omitempty"`
	Stopping []StopCall   `json:"stopping,omitempty"`
	// LetGo are the calls whose held sources this session let go, newest
	// last, at most MaxLetGo: a subagent handing one over again is not
	// taken.
	LetGo []string `json:"let_go,omitempty"`
	// Tasks are the background tasks results announced (their ids),
	// newest last, at most MaxTasks: a stop of one is no stop of a
	// streaming source whose result gave no name.
	Tasks []string `json:"tasks,omitempty"`
}

// Turn is an open turn.
type Turn struct {
	TurnID string `json:"turn_id"`
	// Index is the turn's place among the turns that count (TurnsStarted
	// once it counts): a turn that has not counted yet shares it with the
	// next turn opened, and a nested turn has the index of the turn it
	// nests in.
	Index int `json:"index"`
	// WindowIndex is the turn's place among the turns that age windows
	// (WindowTurns once it counts): a turn continuing the agent's work
	// (ContinuesWork), and a nested turn, have the index of the turn
	// they continue or nest in.
	WindowIndex    int       `json:"window_index,omitempty"`
	ParentTurnID   string    `json:"parent_turn_id,omitempty"`
	TriggeredBy    string    `json:"triggered_by"`
	ExpectedInputs []string  `json:"expected_inputs,omitempty"`
	StartSeq       uint64    `json:"start_seq"`
	StartTime      time.Time `json:"start_time"`
	// Steps counts envelopes attributed to the turn between its turnStart
	// and turnEnd; ToolCalls counts its toolCallRequests.
	Steps     int `json:"steps"`
	ToolCalls int `json:"tool_calls"`
	// Denied is set when the turn's turnStart was denied.
	Denied bool `json:"denied,omitempty"`
	// Implicit is set on a turn no turnStart opened: a framework that
	// never sends turnStart (the Codex adapter) names its turns only in
	// its steps' metadata.turn_id, and the first step naming a new one
	// opens it. An implicit turn closes when a step names the next one,
	// when a turnStart arrives, at its turnEnd if one is sent, or at
	// sessionEnd.
	Implicit bool `json:"implicit,omitempty"`
}

// ClosedTurn summarises the most recently ended turn.
type ClosedTurn struct {
	TurnID    string    `json:"turn_id"`
	Index     int       `json:"index"`
	Outcome   string    `json:"outcome"`
	Steps     int       `json:"steps"`
	ToolCalls int       `json:"tool_calls"`
	EndSeq    uint64    `json:"end_seq"`
	EndTime   time.Time `json:"end_time"`
	// Implicit is set when the turn was implicit; then Outcome is empty
	// unless a turnEnd closed it.
	Implicit bool `json:"implicit,omitempty"`
}

// ParentLink ties a subagent's session to the parent turn that spawned it.
type ParentLink struct {
	SessionID string `json:"session_id"`
	TurnID    string `json:"turn_id,omitempty"`
	// RequestID is the parent's subagentStart request id.
	RequestID string `json:"request_id"`
}

// New returns the state of a session nothing has been applied to yet.
func New(tenant, sessionID string) *Session {
	return &Session{Tenant: tenant, SessionID: sessionID, Status: StatusOpen, OpenTurns: []Turn{}}
}

// RememberSubagent records a subagent session this one spawned.
func (s *Session) RememberSubagent(id string) {
	if !slices.Contains(s.Subagents, id) {
		s.Subagents = remember(s.Subagents, id, MaxSubagents)
	}
}

// Adopt links this session, begun before the subagentStart that announces
// it was applied, to that spawn, as if the spawn had created it: spawned
// is the first state the spawn made (Result.Spawned, with the taints the
// parent had live; policy inherits them). The taints are anchored at this
// session's newest turn, envelope and time, so their windows run from now;
// what the session indexed as a user's words is its parent model's
// (lineage Distrust). A session linked already — spawned before, resumed
// now — keeps its link and gets the taints the same way: a clean first
// spawn does not let it run a tainted parent's later task untainted; one
// that never started takes the newest spawn of its parent whole. A
// session that does not belong to the spawner's caller is left alone; so
// are the decisions taken before. It reports whether it changed the
// session.
func (s *Session) Adopt(spawned *Session) bool {
	p := spawned.Parent
	// Only the spawner's own caller's: a session not bound yet (a state
	// of an earlier version) is not taken over.
	if p == nil || p.SessionID == s.SessionID || s.Caller != spawned.Caller {
		return false
	}
	if s.Parent != nil && s.Parent.SessionID == p.SessionID && s.Envelopes == 0 && s.Parent.RequestID != p.RequestID {
		// Made by an earlier spawn of the same parent and never started
		// (a framework that honoured that spawn's deny, then spawned it
		// again): the newest spawn is the one that runs it, with the
		// taints live now and its turn for the subagent's first. (The
		// same spawn applied again changes nothing.)
		fresh := spawned.Clone()
		s.Parent, s.Taints = fresh.Parent, fresh.Taints
		return true
	}
	changed := false
	if s.Parent == nil {
		link := *p
		s.Parent = &link
		if s.Lineage != nil {
			s.Lineage.Distrust(lineage.Source{RequestID: link.RequestID, Hook: "subagentStart", Tool: "parent " + link.SessionID})
		}
		changed = true
	}
	turn, window := s.NewestTurn()
	for _, id := range slices.Sorted(maps.Keys(spawned.Taints)) {
		// Anchored at the newest of the child in every measure, so that
		// no window of its own ends sooner for it.
		last := spawned.Taints[id].Last.clone()
		last.Turn, last.WindowTurn, last.Step = turn, window, s.Envelopes
		if s.LastTime.After(last.Time) {
			last.Time = s.LastTime
		}
		if own := s.Taints[id]; own != nil {
			if own.Last.Time.After(last.Time) {
				last.Time = own.Last.Time
			}
			if own.Last.Turn >= last.Turn && own.Last.WindowTurn >= last.WindowTurn && own.Last.Step >= last.Step && !own.Last.Time.Before(last.Time) {
				// Its own window runs as long already (the spawn applied
				// again, or a child no older than its spawn).
				continue
			}
			own.Last, own.Hits = last, own.Hits+1
			changed = true
			continue
		}
		if s.Taints == nil {
			s.Taints = map[string]*Taint{}
		}
		first := last.clone()
		s.Taints[id] = &Taint{First: first, Last: last, Hits: 1}
		changed = true
	}
	return changed
}

// Spawned reports whether child's taint comes back to this session at
// its subagentStop: a subagent session of this one — linked to it, or
// remembered among the subagents it spawned — or of this one's parent (a
// sibling: a host that names no spawner opens an agent a subagent
// launched as the root's, as Claude Code does a nested agent, and the
// subagent that takes its report back takes its taint too; a stop only
// adds labels). Only one belonging to this session's caller (or to none
// yet: a state of an earlier version), so that naming another caller's
// session in a subagentStart does not let its state show through this
// one's decisions.
func (s *Session) Spawned(child *Session) bool {
	if child == nil || child.Caller != "" && child.Caller != s.Caller {
		return false
	}
	if child.Parent != nil && (child.Parent.SessionID == s.SessionID || s.Parent != nil && child.Parent.SessionID == s.Parent.SessionID && child.SessionID != s.SessionID) {
		return true
	}
	return slices.Contains(s.Subagents, child.SessionID)
}

// Key is the session's KV key.
func (s *Session) Key() string { return acs.SessionKey(s.Tenant, s.SessionID) }

// Applied reports whether the envelope at stream sequence seq has already
// been applied. Envelopes of a session are applied in stream order, so
// anything at or below LastSeq is a redelivery.
func (s *Session) Applied(seq uint64) bool { return seq <= s.LastSeq }

// OpenTurn returns the open turn with the given id, or nil.
func (s *Session) OpenTurn(turnID string) *Turn {
	if i := s.openTurnIndex(turnID); i >= 0 {
		return &s.OpenTurns[i]
	}
	return nil
}

func (s *Session) openTurnIndex(turnID string) int {
	for i := len(s.OpenTurns) - 1; i >= 0; i-- {
		if s.OpenTurns[i].TurnID == turnID {
			return i
		}
	}
	return -1
}

// Clone returns a deep copy. The processor does not decide on one: it
// takes its cached state out of the cache for the batch instead.
func (s *Session) Clone() *Session {
	c := *s
	if s.Parent != nil {
		p := *s.Parent
		c.Parent = &p
	}
	if s.LastClosedTurn != nil {
		t := *s.LastClosedTurn
		c.LastClosedTurn = &t
	}
	c.OpenTurns = slices.Clone(s.OpenTurns)
	for i := range c.OpenTurns {
		c.OpenTurns[i].ExpectedInputs = slices.Clone(c.OpenTurns[i].ExpectedInputs)
	}
	c.RecentRequestIDs = slices.Clone(s.RecentRequestIDs)
	c.RecentTurnIDs = slices.Clone(s.RecentTurnIDs)
	c.Subagents = slices.Clone(s.Subagents)
	c.RecentNonces = slices.Clone(s.RecentNonces)
	c.Violations = maps.Clone(s.Violations)
	c.Decisions = maps.Clone(s.Decisions)
	cloneRuleState(&c, s)
	c.Lineage = s.Lineage.Clone()
	c.Unanswered = slices.Clone(s.Unanswered)
	c.FileTaints = slices.Clone(s.FileTaints)
	c.Stopping = slices.Clone(s.Stopping)
	c.LetGo = slices.Clone(s.LetGo)
	c.Tasks = slices.Clone(s.Tasks)
	c.Held = slices.Clone(s.Held)
	for i := range c.Held {
		c.Held[i].Handles = slices.Clone(c.Held[i].Handles)
	}
	return &c
}

// NewestTurn is the newest turn index and window index of the session: of
// the turns that counted and of those open (one that has not counted yet
// included — if it never does, the next turn opened takes its index). A
// taint anchored there starts its window with the newest turn, not one
// already aged.
func (s *Session) NewestTurn() (turn, window int) {
	turn, window = s.TurnsStarted, s.WindowTurns
	for _, t := range s.OpenTurns {
		turn, window = max(turn, t.Index), max(window, t.WindowIndex)
	}
	return turn, window
}
