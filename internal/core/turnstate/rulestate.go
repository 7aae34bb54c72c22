package turnstate

import (
	"maps"
	"slices"
	"time"
)

// Bounds on the rule state a session carries.
const (
	// MaxTaintEvidence bounds the provenance ids, origins and sources kept
	// per taint hit.
	MaxTaintEvidence = 16
	// MaxKnownProvenance is how many provenance ids (with their derived
	// trust) a session remembers, so that agent_generated data can take the
	// minimum trust of its lineage.
	MaxKnownProvenance = 256
	// MaxWindowEntries bounds a sliding-window counter's remembered hits.
	MaxWindowEntries = 1024
)

// Taint is an active taint label of a session: set by a source hit,
// refreshed by every newer hit, removed by its clearing condition.
type Taint struct {
	// First is the earliest hit since the label was set; Last the newest,
	// from which windows are measured.
	First TaintHit `json:"first"`
	Last  TaintHit `json:"last"`
	Hits  int      `json:"hits"`
}

// MaxUnanswered bounds the calls a session remembers waiting for their
// result (Session.Unanswered).
const MaxUnanswered = 16

// UnansweredCall is a call a taint source with unanswered set matched and
// the decision let run: its label is set, with Hit as evidence, if
// another envelope of the session arrives before the call's result.
type UnansweredCall struct {
	Label string   `json:"label"`
	Hit   TaintHit `json:"hit"`
	// Output: the result sets the label too, as its own evidence (a
	// taint source with output set).
	Output bool `json:"output,omitempty"`
	// Held: the call's tool goes on feeding its output back after its
	// result, with no call and no hook for each part (a tool classed
	// streams: Claude Code's Monitor), so the label is held from its
	// result until a call stops it (Session.Held).
	Held bool `json:"held,omitempty"`
	// Settled: another envelope came first and set the label; the call
	// waits on only for its result, which sets it again, names a held
	// source and a background task.
	Settled bool `json:"settled,omitempty"`
	// Awaited: the host may yield on the call and feed its output to the
	// model in pieces, with no hook, until its result (Codex's
	// exec_command past yield_time_ms, polled by write_stdin): settled
	// before its result, the label is held until the result, or until
	// Until (the label's window duration after the settling envelope).
	Awaited bool `json:"awaited,omitempty"`
}

// MaxHeldSources bounds the sources a session holds labels for
// (Session.Held), MaxHeldHandles the names one goes by, MaxStopping the
// stop calls waiting for their result (Session.Stopping). Past
// MaxHeldSources, a label's sources are held together until the session
// ends (fail closed); past MaxHeldHandles, the rest of a result's names
// are not kept; past MaxStopping, the oldest stop is forgotten and lets
// nothing go; past MaxLetGo, the oldest source let go is forgotten (a
// subagent's stop may hand it over again: fail closed); past MaxTasks,
// the oldest background task announced is forgotten (a stop of it may let
// a source with no name go).
const (
	MaxHeldSources = 8
	MaxHeldHandles = 4
	MaxStopping    = 4
	MaxLetGo       = 8
	MaxTasks       = 8
)

// HeldSource is a source that feeds the session without a call, still
// running: its label is held, a window does not end while it runs. The
// stop of a call naming one of its Handles (any, when it has none) lets
// it go; the label's window starts there once no source holds it.
type HeldSource struct {
	Label string `json:"label"`
	// Source is the id of the source condition, Tool the tool of the call
	// that started it: the decision cites them.
	Source string `json:"source"`
	Tool   string `json:"tool,omitempty"`
	// RequestID is the call that started it: its result gives the names.
	RequestID string `json:"request_id"`
	// Handles are the names a stop call gives it (a task id, its output
	// file), any one of them; none known: any stop that succeeds.
	Handles []string `json:"handles,omitempty"`
	// Sticky: sources past MaxHeldSources, held together until the
	// session ends.
	Sticky bool `json:"sticky,omitempty"`
	// Until, when set, is when the hold ends by itself: a call awaited
	// for its result (UnansweredCall.Awaited), which may never come (a
	// command the host's own prompt declined). Its result lets it go
	// first.
	Until *time.Time `json:"until,omitempty"`
}

// StopCall is a call of a tool classed stops_task let run while a label
// was held, waiting for its result: ID is the task it stops.
type StopCall struct {
	RequestID string `json:"request_id"`
	ID        string `json:"id,omitempty"`
}

// MaxFileTaints bounds the files a session remembers as holding
// untrusted content (Session.FileTaints); the oldest is forgotten first.
// MaxFileTaintPath bounds a remembered path's stored length (acs.StoredLen):
// a longer one is not remembered.
const (
	MaxFileTaints    = 16
	MaxFileTaintPath = 256
)

// FileTaint is a file a call let run wrote with content that sets Label
// (a taint source with files set: a curl -o, a wget, a redirect of a
// fetch): a later call that names the file brings that content in again.
type FileTaint struct {
	Label string `json:"label"`
	// Path is the file as the writing command spelt it, cleaned: ./ and
	// ~/ dropped, so that a path naming it from elsewhere ends with it.
	Path string `json:"path"`
	// Source is the id of the source condition that matched the writer.
	Source string `json:"source"`
	// Dir: the path is a directory the call filled (a clone): a call
	// naming anything under it brings its content in.
	Dir bool `json:"dir,omitempty"`
}

// TaintHit is the evidence of one envelope that set or refreshed a taint.
type TaintHit struct {
	Seq       uint64 `json:"seq"`
	RequestID string `json:"request_id"`
	Hook      string `json:"hook"`
	Tool      string `json:"tool,omitempty"`
	Turn      int    `json:"turn"`
	// WindowTurn is the session's WindowTurns at the hit: windows in
	// turns are measured from it (Session.WindowTurns).
	WindowTurn int       `json:"window_turn,omitempty"`
	TurnID     string    `json:"turn_id,omitempty"`
	Time       time.Time `json:"time"`
	// Step is the session's envelope count (Session.Envelopes) with this
	// envelope: windows in steps are measured from it. An inherited hit's
	// is 0, the child's spawn.
	Step uint64 `json:"step,omitempty"`
	// Source is the ruleset's id of the source condition that matched.
	Source string `json:"source"`
	// ProvenanceIDs, Origins and SourceIDs describe the untrusted data the
	// envelope carried (provenance_id, origin, source_id).
	ProvenanceIDs []string `json:"provenance_ids,omitempty"`
	Origins       []string `json:"origins,omitempty"`
	SourceIDs     []string `json:"source_ids,omitempty"`
	// Session is the session the envelope belongs to when it is not this
	// one: the evidence of a taint inherited from a parent (Inherited).
	// Seq and RequestID are then that session's.
	Session string `json:"session,omitempty"`
}

// Inherited is the hit as a subagent inherits it from parent, the session
// it was recorded in: the evidence stays (the session named, the first
// one of a chain of inheritances kept), the turn is the child's turn 0,
// before its first: the spawn.
func (h TaintHit) Inherited(parent string) TaintHit {
	h = h.clone()
	if h.Session == "" {
		h.Session = parent
	}
	h.Turn, h.WindowTurn, h.TurnID, h.Step = 0, 0, "", 0
	return h
}

// Counter is a threshold rule's count for a session.
type Counter struct {
	Count int `json:"count,omitempty"`
	// Turn is the turn index Count belongs to, for per-turn counts.
	Turn int `json:"turn,omitempty"`
	// Times and Turns remember recent hits of sliding windows.
	Times []time.Time `json:"times,omitempty"`
	Turns []int       `json:"turns,omitempty"`
}

// ProvenanceMemory is what a session remembers of the provenance it saw.
type ProvenanceMemory struct {
	// Seen is set once any envelope of the session carried provenance.
	Seen bool `json:"seen"`
	// Known lists recent provenance ids with their derived trust, newest
	// last.
	Known []KnownProvenance `json:"known,omitempty"`
}

// KnownProvenance is one remembered provenance id.
type KnownProvenance struct {
	ID        string `json:"id"`
	Untrusted bool   `json:"untrusted"`
}

// Lookup returns the derived trust of a remembered provenance id.
func (p *ProvenanceMemory) Lookup(id string) (untrusted, known bool) {
	for i := len(p.Known) - 1; i >= 0; i-- {
		if p.Known[i].ID == id {
			return p.Known[i].Untrusted, true
		}
	}
	return false, false
}

// Remember records a provenance id's derived trust.
func (p *ProvenanceMemory) Remember(id string, untrusted bool) {
	p.Known = append(p.Known, KnownProvenance{ID: id, Untrusted: untrusted})
	if len(p.Known) > MaxKnownProvenance {
		p.Known = slices.Delete(p.Known, 0, len(p.Known)-MaxKnownProvenance)
	}
}

// CurrentTurn returns the index of the turn a step attributed to turnID
// belongs to: that open turn's index, else the newest turn's index (0 when
// no turn was ever started).
func (s *Session) CurrentTurn(turnID string) int {
	if t := s.OpenTurn(turnID); t != nil && turnID != "" {
		return t.Index
	}
	return s.TurnsStarted
}

// CurrentWindowTurn is CurrentTurn among the turns that age windows
// (WindowTurns, Turn.WindowIndex).
func (s *Session) CurrentWindowTurn(turnID string) int {
	if t := s.OpenTurn(turnID); t != nil && turnID != "" {
		return t.WindowIndex
	}
	return s.WindowTurns
}

func cloneRuleState(c *Session, s *Session) {
	if s.Taints != nil {
		c.Taints = make(map[string]*Taint, len(s.Taints))
		for k, t := range s.Taints {
			cp := *t
			cp.First = t.First.clone()
			cp.Last = t.Last.clone()
			c.Taints[k] = &cp
		}
	}
	c.Counters = cloneCounters(s.Counters)
	if s.Provenance != nil {
		p := *s.Provenance
		p.Known = slices.Clone(s.Provenance.Known)
		c.Provenance = &p
	}
	c.RuleHits = maps.Clone(s.RuleHits)
}

func (h TaintHit) clone() TaintHit {
	h.ProvenanceIDs = slices.Clone(h.ProvenanceIDs)
	h.Origins = slices.Clone(h.Origins)
	h.SourceIDs = slices.Clone(h.SourceIDs)
	return h
}

// cloneCounters deep-copies a counter map (nil stays nil).
func cloneCounters(m map[string]*Counter) map[string]*Counter {
	if m == nil {
		return nil
	}
	out := make(map[string]*Counter, len(m))
	for k, v := range m {
		cp := *v
		cp.Times = slices.Clone(v.Times)
		cp.Turns = slices.Clone(v.Turns)
		out[k] = &cp
	}
	return out
}
