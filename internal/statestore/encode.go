package statestore

import (
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/turnguard/turnguard/internal/core/lineage"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// Every live envelope writes its session's state, and encoding/json's
// reflective walk of it was about an eighth of the processor's CPU (json v2
// with the v1 options was barely faster). encoder writes the record of
// record.go and an agent's state by hand instead, byte for byte what
// encoding/json's Marshal writes for them: fields in declaration order
// under their tag names, omitempty as encoding/json reads it, nil slices
// and maps as null, map keys sorted, strings escaped as encoding/json
// escapes them (HTML characters included), times as time.Time's
// MarshalJSON writes them, the lineage index through its MarshalJSON
// (no other reachable type has a MarshalJSON or MarshalText). Replay compares stored states, and readers
// decode with encoding/json, so anything else would be a format change:
// TestEncoderMatchesEncodingJSON and FuzzEncoderMatchesEncodingJSON compare
// the two on many states, and TestEncoderCoversEveryField fails when a
// field is added to a stored type and not here.
//
// appendRecordJSON and appendAgentJSON are its entry points.
type encoder struct {
	b []byte
	// err is the first value that could not be encoded (a time RFC 3339
	// cannot hold, as encoding/json refuses it); what follows it in b is
	// of no use.
	err error
	// keys is scratch for sorting a map's keys; no map is nested in
	// another's value, so one is enough.
	keys []string
}

// appendRecordJSON appends the JSON of a session's record to b: what
// encoding/json's Marshal returns for record{sess, out}.
func appendRecordJSON(b []byte, sess *turnstate.Session, out *Outbox) ([]byte, error) {
	e := encoder{b: b}
	e.record(sess, out)
	return e.b, e.err
}

// appendAgentJSON appends the JSON of an agent's state to b: what
// encoding/json's Marshal returns for a.
func appendAgentJSON(b []byte, a *turnstate.Agent) ([]byte, error) {
	e := encoder{b: b}
	e.agent(a)
	return e.b, e.err
}

func (e *encoder) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// key writes an object member's name, quoted and followed by ':' (name
// holds all that), after a ',' unless it is the object's first member: a
// value never ends with '{', so a last byte '{' is the object just opened.
func (e *encoder) key(name string) {
	if e.b[len(e.b)-1] != '{' {
		e.b = append(e.b, ',')
	}
	e.b = append(e.b, name...)
}

func (e *encoder) string(s string) { e.b = appendString(e.b, s) }

func (e *encoder) bool(v bool) { e.b = strconv.AppendBool(e.b, v) }

func (e *encoder) int(v int) { e.b = strconv.AppendInt(e.b, int64(v), 10) }

func (e *encoder) uint(v uint64) { e.b = strconv.AppendUint(e.b, v, 10) }

// optString, optUint, optInt, optBool and optStrings write a member that
// encoding/json's omitempty leaves out when empty.
func (e *encoder) optString(name, v string) {
	if v != "" {
		e.key(name)
		e.string(v)
	}
}

func (e *encoder) optUint(name string, v uint64) {
	if v != 0 {
		e.key(name)
		e.uint(v)
	}
}

func (e *encoder) optInt(name string, v int) {
	if v != 0 {
		e.key(name)
		e.int(v)
	}
}

func (e *encoder) optBool(name string, v bool) {
	if v {
		e.key(name)
		e.bool(v)
	}
}

func (e *encoder) optStrings(name string, v []string) {
	if len(v) > 0 {
		e.key(name)
		e.strings(v)
	}
}

// time writes t as time.Time's MarshalJSON does: RFC 3339 with the
// nanoseconds, refusing what RFC 3339 cannot hold. AppendText is the same
// text without the quotes and the allocation.
func (e *encoder) time(t time.Time) {
	b, err := t.AppendText(append(e.b, '"'))
	if err != nil {
		e.fail(fmt.Errorf("json: error calling MarshalJSON for type time.Time: %w", err))
		return
	}
	e.b = append(b, '"')
}

func (e *encoder) strings(ss []string) {
	if ss == nil {
		e.b = append(e.b, "null"...)
		return
	}
	e.b = append(e.b, '[')
	for i, s := range ss {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.string(s)
	}
	e.b = append(e.b, ']')
}

// sortedKeys returns m's keys sorted as encoding/json sorts them (bytewise,
// strings.Compare), in e's scratch.
func sortedKeys[K ~string, V any](e *encoder, m map[K]V) []string {
	if cap(e.keys) < len(m) {
		// Once for most states: their maps hold a few keys each.
		e.keys = make([]string, 0, max(len(m), 8))
	}
	keys := e.keys[:0]
	for k := range m {
		keys = append(keys, string(k))
	}
	slices.Sort(keys)
	e.keys = keys
	return keys
}

// counts writes a map of counts by name (Violations, Decisions, RuleHits,
// Agent.Applied).
func counts[K ~string](e *encoder, m map[K]uint64) {
	if m == nil {
		e.b = append(e.b, "null"...)
		return
	}
	e.b = append(e.b, '{')
	for i, k := range sortedKeys(e, m) {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.string(k)
		e.b = append(e.b, ':')
		e.uint(m[K(k)])
	}
	e.b = append(e.b, '}')
}

// record writes a session's record (record.go): the session's fields, as
// its embedding promotes them, then the outbox.
func (e *encoder) record(s *turnstate.Session, out *Outbox) {
	e.b = append(e.b, '{')
	if s != nil {
		e.sessionFields(s)
	}
	if out != nil {
		e.key(`"outbox":`)
		e.outbox(out)
	}
	e.b = append(e.b, '}')
}

func (e *encoder) sessionFields(s *turnstate.Session) {
	e.key(`"tenant":`)
	e.string(s.Tenant)
	e.key(`"session_id":`)
	e.string(s.SessionID)
	e.optString(`"agent_id":`, s.AgentID)
	e.key(`"status":`)
	e.string(string(s.Status))
	e.key(`"started":`)
	e.bool(s.Started)
	e.optString(`"end_reason":`, s.EndReason)
	if s.Parent != nil {
		e.key(`"parent":`)
		e.parent(s.Parent)
	}
	e.optString(`"caller":`, s.Caller)
	e.optStrings(`"subagents":`, s.Subagents)
	e.optString(`"activated_by":`, s.ActivatedBy)
	e.key(`"turns_started":`)
	e.int(s.TurnsStarted)
	e.optInt(`"window_turns":`, s.WindowTurns)
	e.key(`"open_turns":`)
	e.openTurns(s.OpenTurns)
	if s.LastClosedTurn != nil {
		e.key(`"last_closed_turn":`)
		e.closedTurn(s.LastClosedTurn)
	}
	e.key(`"envelopes":`)
	e.uint(s.Envelopes)
	e.key(`"first_seq":`)
	e.uint(s.FirstSeq)
	e.key(`"last_seq":`)
	e.uint(s.LastSeq)
	e.key(`"first_time":`)
	e.time(s.FirstTime)
	e.key(`"last_time":`)
	e.time(s.LastTime)
	e.optString(`"chain_head":`, s.ChainHead)
	e.optUint(`"chain_length":`, s.ChainLength)
	e.key(`"recent_request_ids":`)
	e.strings(s.RecentRequestIDs)
	e.optStrings(`"recent_turn_ids":`, s.RecentTurnIDs)
	e.optStrings(`"recent_nonces":`, s.RecentNonces)
	if len(s.Violations) > 0 {
		e.key(`"violations":`)
		counts(e, s.Violations)
	}
	if len(s.Decisions) > 0 {
		e.key(`"decisions":`)
		counts(e, s.Decisions)
	}
	if len(s.Taints) > 0 {
		e.key(`"taints":`)
		e.taints(s.Taints)
	}
	if len(s.Counters) > 0 {
		e.key(`"counters":`)
		e.counters(s.Counters)
	}
	if s.Provenance != nil {
		e.key(`"provenance":`)
		e.provenance(s.Provenance)
	}
	if len(s.RuleHits) > 0 {
		e.key(`"rule_hits":`)
		counts(e, s.RuleHits)
	}
	if s.Lineage != nil {
		e.key(`"lineage":`)
		e.lineage(s.Lineage)
	}
	if len(s.Unanswered) > 0 {
		e.key(`"unanswered":`)
		e.unanswered(s.Unanswered)
	}
	if len(s.FileTaints) > 0 {
		e.key(`"file_taints":`)
		e.fileTaints(s.FileTaints)
	}
	if len(s.Held) > 0 {
		e.key(`"held":`)
		e.held(s.Held)
	}
	if len(s.Stopping) > 0 {
		e.key(`"stopping":`)
		e.stopping(s.Stopping)
	}
	e.optStrings(`"let_go":`, s.LetGo)
	e.optStrings(`"tasks":`, s.Tasks)
}

func (e *encoder) parent(p *turnstate.ParentLink) {
	e.b = append(e.b, '{')
	e.key(`"session_id":`)
	e.string(p.SessionID)
	e.optString(`"turn_id":`, p.TurnID)
	e.key(`"request_id":`)
	e.string(p.RequestID)
	e.b = append(e.b, '}')
}

func (e *encoder) openTurns(ts []turnstate.Turn) {
	if ts == nil {
		e.b = append(e.b, "null"...)
		return
	}
	e.b = append(e.b, '[')
	for i := range ts {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.turn(&ts[i])
	}
	e.b = append(e.b, ']')
}

func (e *encoder) turn(t *turnstate.Turn) {
	e.b = append(e.b, '{')
	e.key(`"turn_id":`)
	e.string(t.TurnID)
	e.key(`"index":`)
	e.int(t.Index)
	e.optInt(`"window_index":`, t.WindowIndex)
	e.optString(`"parent_turn_id":`, t.ParentTurnID)
	e.key(`"triggered_by":`)
	e.string(t.TriggeredBy)
	e.optStrings(`"expected_inputs":`, t.ExpectedInputs)
	e.key(`"start_seq":`)
	e.uint(t.StartSeq)
	e.key(`"start_time":`)
	e.time(t.StartTime)
	e.key(`"steps":`)
	e.int(t.Steps)
	e.key(`"tool_calls":`)
	e.int(t.ToolCalls)
	e.optBool(`"denied":`, t.Denied)
	e.optBool(`"implicit":`, t.Implicit)
	e.b = append(e.b, '}')
}

func (e *encoder) closedTurn(t *turnstate.ClosedTurn) {
	e.b = append(e.b, '{')
	e.key(`"turn_id":`)
	e.string(t.TurnID)
	e.key(`"index":`)
	e.int(t.Index)
	e.key(`"outcome":`)
	e.string(t.Outcome)
	e.key(`"steps":`)
	e.int(t.Steps)
	e.key(`"tool_calls":`)
	e.int(t.ToolCalls)
	e.key(`"end_seq":`)
	e.uint(t.EndSeq)
	e.key(`"end_time":`)
	e.time(t.EndTime)
	e.optBool(`"implicit":`, t.Implicit)
	e.b = append(e.b, '}')
}

func (e *encoder) taints(m map[string]*turnstate.Taint) {
	e.b = append(e.b, '{')
	for i, k := range sortedKeys(e, m) {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.string(k)
		e.b = append(e.b, ':')
		t := m[k]
		if t == nil {
			e.b = append(e.b, "null"...)
			continue
		}
		e.b = append(e.b, '{')
		e.key(`"first":`)
		e.taintHit(&t.First)
		e.key(`"last":`)
		e.taintHit(&t.Last)
		e.key(`"hits":`)
		e.int(t.Hits)
		e.b = append(e.b, '}')
	}
	e.b = append(e.b, '}')
}

func (e *encoder) taintHit(h *turnstate.TaintHit) {
	e.b = append(e.b, '{')
	e.key(`"seq":`)
	e.uint(h.Seq)
	e.key(`"request_id":`)
	e.string(h.RequestID)
	e.key(`"hook":`)
	e.string(h.Hook)
	e.optString(`"tool":`, h.Tool)
	e.key(`"turn":`)
	e.int(h.Turn)
	e.optInt(`"window_turn":`, h.WindowTurn)
	e.optString(`"turn_id":`, h.TurnID)
	e.key(`"time":`)
	e.time(h.Time)
	e.optUint(`"step":`, h.Step)
	e.key(`"source":`)
	e.string(h.Source)
	e.optStrings(`"provenance_ids":`, h.ProvenanceIDs)
	e.optStrings(`"origins":`, h.Origins)
	e.optStrings(`"source_ids":`, h.SourceIDs)
	e.optString(`"session":`, h.Session)
	e.b = append(e.b, '}')
}

func (e *encoder) counters(m map[string]*turnstate.Counter) {
	e.b = append(e.b, '{')
	for i, k := range sortedKeys(e, m) {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.string(k)
		e.b = append(e.b, ':')
		e.counter(m[k])
	}
	e.b = append(e.b, '}')
}

func (e *encoder) counter(c *turnstate.Counter) {
	if c == nil {
		e.b = append(e.b, "null"...)
		return
	}
	// Every field may be left out: an empty counter is {}.
	e.b = append(e.b, '{')
	e.optInt(`"count":`, c.Count)
	e.optInt(`"turn":`, c.Turn)
	if len(c.Times) > 0 {
		e.key(`"times":`)
		e.b = append(e.b, '[')
		for i, t := range c.Times {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.time(t)
		}
		e.b = append(e.b, ']')
	}
	if len(c.Turns) > 0 {
		e.key(`"turns":`)
		e.b = append(e.b, '[')
		for i, t := range c.Turns {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.int(t)
		}
		e.b = append(e.b, ']')
	}
	e.b = append(e.b, '}')
}

func (e *encoder) provenance(p *turnstate.ProvenanceMemory) {
	e.b = append(e.b, '{')
	e.key(`"seen":`)
	e.bool(p.Seen)
	if len(p.Known) > 0 {
		e.key(`"known":`)
		e.b = append(e.b, '[')
		for i, k := range p.Known {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.b = append(e.b, '{')
			e.key(`"id":`)
			e.string(k.ID)
			e.key(`"untrusted":`)
			e.bool(k.Untrusted)
			e.b = append(e.b, '}')
		}
		e.b = append(e.b, ']')
	}
	e.b = append(e.b, '}')
}

// lineage writes the index as its MarshalJSON does, straight into the
// state (Index.AppendJSON, with this encoder's strings). encoding/json
// also compacts what a MarshalJSON returns and escapes its HTML
// characters; the stored form is compact and its strings escaped
// already, so that would change nothing.
func (e *encoder) lineage(ix *lineage.Index) { e.b = ix.AppendJSON(e.b, appendString) }

func (e *encoder) unanswered(us []turnstate.UnansweredCall) {
	e.b = append(e.b, '[')
	for i := range us {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		u := &us[i]
		e.b = append(e.b, '{')
		e.key(`"label":`)
		e.string(u.Label)
		e.key(`"hit":`)
		e.taintHit(&u.Hit)
		e.optBool(`"output":`, u.Output)
		e.optBool(`"held":`, u.Held)
		e.optBool(`"settled":`, u.Settled)
		e.optBool(`"awaited":`, u.Awaited)
		e.b = append(e.b, '}')
	}
	e.b = append(e.b, ']')
}

func (e *encoder) fileTaints(fs []turnstate.FileTaint) {
	e.b = append(e.b, '[')
	for i := range fs {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		f := &fs[i]
		e.b = append(e.b, '{')
		e.key(`"label":`)
		e.string(f.Label)
		e.key(`"path":`)
		e.string(f.Path)
		e.key(`"source":`)
		e.string(f.Source)
		if f.Dir {
			e.key(`"dir":`)
			e.bool(true)
		}
		e.b = append(e.b, '}')
	}
	e.b = append(e.b, ']')
}

func (e *encoder) held(hs []turnstate.HeldSource) {
	e.b = append(e.b, '[')
	for i := range hs {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		h := &hs[i]
		e.b = append(e.b, '{')
		e.key(`"label":`)
		e.string(h.Label)
		e.key(`"source":`)
		e.string(h.Source)
		e.optString(`"tool":`, h.Tool)
		e.key(`"request_id":`)
		e.string(h.RequestID)
		e.optStrings(`"handles":`, h.Handles)
		e.optBool(`"sticky":`, h.Sticky)
		if h.Until != nil {
			e.key(`"until":`)
			e.time(*h.Until)
		}
		e.b = append(e.b, '}')
	}
	e.b = append(e.b, ']')
}

func (e *encoder) stopping(ss []turnstate.StopCall) {
	e.b = append(e.b, '[')
	for i := range ss {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.b = append(e.b, '{')
		e.key(`"request_id":`)
		e.string(ss[i].RequestID)
		e.optString(`"id":`, ss[i].ID)
		e.b = append(e.b, '}')
	}
	e.b = append(e.b, ']')
}

func (e *encoder) outbox(out *Outbox) {
	e.b = append(e.b, '{')
	e.key(`"written":`)
	e.time(out.Written)
	e.key(`"msgs":`)
	if out.Msgs == nil {
		e.b = append(e.b, "null"...)
	} else {
		e.b = append(e.b, '[')
		for i := range out.Msgs {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.publication(&out.Msgs[i])
		}
		e.b = append(e.b, ']')
	}
	e.b = append(e.b, '}')
}

// publication writes a publication without its body (json:"-").
func (e *encoder) publication(p *Publication) {
	e.b = append(e.b, '{')
	e.key(`"subject":`)
	e.string(p.Subject)
	if len(p.Header) > 0 {
		e.key(`"header":`)
		e.b = append(e.b, '{')
		for i, k := range sortedKeys(e, p.Header) {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.string(k)
			e.b = append(e.b, ':')
			e.strings(p.Header[k])
		}
		e.b = append(e.b, '}')
	}
	e.b = append(e.b, '}')
}

// agent writes an agent's state.
func (e *encoder) agent(a *turnstate.Agent) {
	e.b = append(e.b, '{')
	e.key(`"tenant":`)
	e.string(a.Tenant)
	e.key(`"agent_id":`)
	e.string(a.AgentID)
	if len(a.Counters) > 0 {
		e.key(`"counters":`)
		e.counters(a.Counters)
	}
	if len(a.Applied) > 0 {
		e.key(`"applied":`)
		counts(e, a.Applied)
	}
	e.b = append(e.b, '}')
}

// htmlSafe holds the ASCII bytes encoding/json writes as they are in a
// string: all but the control characters, '"', '\\', and the HTML
// characters '<', '>' and '&' that it escapes by default.
var htmlSafe = func() (safe [utf8.RuneSelf]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		safe[c] = true
	}
	for _, c := range `"\<>&` {
		safe[c] = false
	}
	return safe
}()

const hexDigits = "0123456789abcdef"

// Bytes of a 64-bit word, for looking at eight bytes of a string at once.
const (
	lsbs = 0x0101010101010101
	msbs = 0x8080808080808080
)

// plainLen returns the length of s's prefix that is written as it is: of
// bytes htmlSafe holds. Most of a state's strings are ids, and checking
// them a word at a time rather than a byte takes a fraction of the time.
// Each term of a word's check has a byte's top bit set for a byte that is
// not plain: from 0x80 (UTF-8, decoded by the caller), below 0x20, or one
// of the five ASCII characters escaped (zero after the xor).
func plainLen(s string) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := s[i : i+8]
		w := uint64(x[0]) | uint64(x[1])<<8 | uint64(x[2])<<16 | uint64(x[3])<<24 |
			uint64(x[4])<<32 | uint64(x[5])<<40 | uint64(x[6])<<48 | uint64(x[7])<<56
		q, bs, lt, gt, amp := w^'"'*lsbs, w^'\\'*lsbs, w^'<'*lsbs, w^'>'*lsbs, w^'&'*lsbs
		if (w|(w-' '*lsbs)&^w|(q-lsbs)&^q|(bs-lsbs)&^bs|(lt-lsbs)&^lt|(gt-lsbs)&^gt|(amp-lsbs)&^amp)&msbs != 0 {
			break
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || !htmlSafe[c] {
			break
		}
	}
	return i
}

// appendString writes s quoted as encoding/json's Marshal does (its
// appendString with escapeHTML): short escapes for '"', '\\', \b, \f, \n,
// \r and \t, \u00XX for the other control characters and the HTML ones,
// \ufffd for each byte of invalid UTF-8, and U+2028 and U+2029 escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; ; {
		if i += plainLen(s[i:]); i == len(s) {
			break
		}
		if c := s[i]; c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
