package turnstate

import "slices"

// Severity grades a violation. Error-level violations make a
// decision-eligible hook deny (in the default pack); warnings are alerted
// there; info-level findings only describe the session and are recorded.
type Severity string

// Violation severities, least to most severe.
const (
	SeverityInfo  Severity = "info"
	SeverityWarn  Severity = "warn"
	SeverityError Severity = "error"
)

// Violation is one breach of the ACS session/turn protocol found while
// applying an envelope.
type Violation struct {
	Name     string   `json:"name"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
}

// Stable violation names. They appear as reason codes in decisions, in the
// session state's counters, and (with the rules engine) as rule inputs.
const (
	TurnIDMissing         = "turn_id_missing"
	TurnIDMismatch        = "turn_id_mismatch"
	TurnIDNotRequestID    = "turn_id_not_request_id"
	TurnIDReused          = "turn_id_reused"
	ParentTurnUnknown     = "parent_turn_unknown"
	TurnEndUnmatched      = "turn_end_unmatched"
	TurnStepCountMismatch = "turn_step_count_mismatch"
	UnexpectedInput       = "unexpected_input"
	TurnOverlap           = "turn_overlap"
	TurnLeftOpen          = "turn_left_open"
	TurnDenied            = "turn_denied"
	TurnDepthExceeded     = "turn_depth_exceeded"
	SessionClosed         = "session_closed"
	SessionReopened       = "session_reopened"
	SessionStartMissing   = "session_start_missing"
	SessionAlreadyStarted = "session_already_started"
	RequestReplayed       = "request_replayed"
	AgentIDMismatch       = "agent_id_mismatch"
	TurnImplicit          = "turn_implicit"
)

// Kind documents one violation: its stable name, severity and meaning.
type Kind struct {
	Name     string
	Severity Severity
	Meaning  string
}

// Kinds lists every violation the state machine can report, in the order the
// README documents them.
func Kinds() []Kind { return slices.Clone(kinds) }

var kinds = []Kind{
	{TurnIDMissing, SeverityError, "turnStart without metadata.turn_id, or a step inside a turn opened by turnStart without metadata.turn_id, or turnEnd without it"},
	{TurnIDMismatch, SeverityError, "metadata.turn_id differs from the payload's turn_id (turnStart, turnEnd), or a step's metadata.turn_id names a turn that ended, or names no open turn while a turn opened by turnStart is open"},
	{TurnIDNotRequestID, SeverityWarn, "turnStart's turn_id is not the envelope's request_id (the seed schema says SHOULD)"},
	{TurnIDReused, SeverityError, "turnStart reuses a turn_id already used in this session"},
	{ParentTurnUnknown, SeverityError, "turnStart's parent_turn_id names no open turn of this session, nor (for a subagent's first turn) the parent's spawning turn"},
	{TurnEndUnmatched, SeverityError, "turnEnd names no open turn"},
	{TurnStepCountMismatch, SeverityWarn, "turnEnd's step_count or tool_call_count differs from what turnguard saw in the turn"},
	{UnexpectedInput, SeverityWarn, "a step whose hook is not in the turn's expected_inputs"},
	{TurnOverlap, SeverityWarn, "turnStart without parent_turn_id while another turn is still open (a turnEnd is probably missing)"},
	{TurnLeftOpen, SeverityWarn, "a turn was still open when an enclosing turn or the session ended"},
	{TurnDenied, SeverityError, "a step inside a turn whose turnStart was denied"},
	{TurnDepthExceeded, SeverityError, "turnStart would nest more than MaxOpenTurns turns"},
	{SessionClosed, SeverityError, "a step after sessionEnd"},
	// Info: a resumed conversation (Claude Code's --resume), not a fault;
	// the session keeps its taints.
	{SessionReopened, SeverityInfo, "a sessionStart after sessionEnd reopens the session (a host resumed the conversation under its id): its taints, lineage and counts stay"},
	{SessionStartMissing, SeverityWarn, "the session's first envelope is not sessionStart"},
	{SessionAlreadyStarted, SeverityError, "a second sessionStart for the same session"},
	{RequestReplayed, SeverityError, "a request_id already seen in this session"},
	{AgentIDMismatch, SeverityError, "metadata.agent_id differs from the agent the session started with"},
	// Info, not warn: frameworks without turnStart (Codex) open every turn
	// this way, so it describes the session rather than a fault — rules
	// that act on warnings (the default pack alerts on every one) should
	// not fire on each of their turns.
	{TurnImplicit, SeverityInfo, "a step's metadata.turn_id names a new turn while no turn opened by turnStart is open: it opens an implicit turn (the previous implicit turn ends)"},
}

// severityOf returns the severity of a violation name.
func severityOf(name string) Severity {
	for _, k := range kinds {
		if k.Name == name {
			return k.Severity
		}
	}
	return SeverityError
}

// HasError reports whether any violation is error-level.
func HasError(vs []Violation) bool {
	for _, v := range vs {
		if v.Severity == SeverityError {
			return true
		}
	}
	return false
}
