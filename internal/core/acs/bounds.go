package acs

import (
	"fmt"
	"unicode/utf8"
)

// Bounds on the strings a Guardian keeps in a session's state. They are
// fixed, not configurable, so that a replay refuses exactly the envelopes
// live processing refused. An envelope carrying a longer value is refused
// with ReasonFieldTooLong (see CheckStored) before it changes any state.
const (
	// MaxIDBytes bounds every identifier kept in state: metadata.agent_id,
	// metadata.turn_id and parent_turn_id, the turn ids of turnStart and
	// turnEnd, the ids of subagentStart, and provenance ids, derived_from
	// entries and source ids. The reference adapters send UUIDs (36
	// bytes), tool-call ids (toolu_…, call_…: about 30) and agent names;
	// source_id names a tool, a file path or a URL. 256 is seven UUIDs,
	// room for any of those and a generous path, and keeps the worst-case
	// state a fraction of a NATS message (see turnstate's worst-case test).
	MaxIDBytes = 256
	// MaxExpectedInputs bounds the items of turnStart.expected_inputs,
	// and MaxExpectedInputBytes each item. The items name hooks
	// (toolCallRequest, agentResponse: the longest hook name has 22
	// characters, and there are 21 hooks); 16 such names, each with room
	// to spare, is more than a turn can meaningfully announce.
	MaxExpectedInputs     = 16
	MaxExpectedInputBytes = 64
	// MaxEvidenceBytes bounds evidence-only strings a taint keeps (the
	// tool name of the envelope that set it). They are truncated to it
	// (TruncateStored), not refused: no decision reads them back.
	MaxEvidenceBytes = 256
)

// StoredLen is the number of bytes s takes inside a JSON string as
// encoding/json writes it, the form the state is stored in: control
// characters, '"', '\\', the HTML characters <, > and &, U+2028 and U+2029
// count as their escapes (two or six bytes), an invalid byte as the six of
// \ufffd. The bounds are measured this way so that they bound the stored
// state, however an id is spelled; for an id of letters, digits and
// punctuation it is len(s).
func StoredLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		w, size := storedWidth(s[i:])
		n += w
		i += size
	}
	return n
}

// storedWidth is the stored width of the first character of s, and its
// size in s.
func storedWidth(s string) (w, size int) {
	if c := s[0]; c < utf8.RuneSelf {
		switch c {
		case '"', '\\', '\n', '\r', '\t', '\b', '\f':
			return 2, 1
		case '<', '>', '&':
			return 6, 1
		}
		if c < 0x20 {
			return 6, 1
		}
		return 1, 1
	}
	r, size := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
		return 6, size
	}
	return size, size
}

// TruncateStored returns the longest prefix of s, cut at a character
// boundary, whose StoredLen is at most max. It is deterministic: the same
// s always gives the same prefix.
func TruncateStored(s string, max int) string {
	n := 0
	for i := 0; i < len(s); {
		w, size := storedWidth(s[i:])
		if n+w > max {
			return s[:i]
		}
		n += w
		i += size
	}
	return s
}

// CheckStored returns a violation at pointer when s takes more than max
// bytes as stored (StoredLen), else nil.
func CheckStored(pointer, s string, max int) *Violation {
	if n := StoredLen(s); n > max {
		return &Violation{Pointer: pointer, Message: fmt.Sprintf("%d bytes as stored (JSON-escaped); at most %d", n, max)}
	}
	return nil
}
