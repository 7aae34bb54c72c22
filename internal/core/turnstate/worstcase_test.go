package turnstate_test

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/lineage"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	rulepack "github.com/turnguard/turnguard/rules"
)

// worstStateLimit is what the worst-case session state must stay below:
// half of the server's default max_payload (1 MiB), the other half being
// the outbox a state write carries (maxOutbox in internal/stream).
const worstStateLimit = 512 << 10

// worstString returns a distinct string of exactly n stored bytes
// (acs.StoredLen), spelled mostly with '<', which encoding/json escapes to
// six bytes: the measure, not the spelling, is what the bounds bound.
func worstString(t *testing.T, i, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(strconv.Itoa(i))
	b.WriteByte('-')
	stored := b.Len()
	for stored+6 <= n {
		b.WriteByte('<')
		stored += 6
	}
	for stored < n {
		b.WriteByte('a')
		stored++
	}
	s := b.String()
	enc, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if acs.StoredLen(s) != n || len(enc) != n+2 {
		t.Fatalf("worstString(%d): StoredLen %d, encoded %d bytes, want %d", n, acs.StoredLen(s), len(enc)-2, n)
	}
	return s
}

// worstState builds the largest session state the bounds allow under the
// rule set rs: every list at its maximum count, every kept string at its
// maximum stored length, every counter at its largest value.
func worstState(t *testing.T, rs *policy.Set) *turnstate.Session {
	t.Helper()
	n := 0
	id := func() string { n++; return worstString(t, n, acs.MaxIDBytes) }
	uuid := func() string { n++; return "00000000-0000-4000-8000-" + strconv.FormatInt(int64(n)+100000000000, 10) }
	// A time with nanoseconds and an offset: the longest RFC 3339 form.
	at := time.Date(2026, 12, 31, 23, 59, 59, 123456789, time.FixedZone("", -(13*3600+59*60)))
	maxInt, maxU := math.MaxInt, uint64(math.MaxUint64)

	s := turnstate.New(strings.Repeat("t", 64), uuid())
	s.AgentID = id()
	s.Status, s.Started, s.EndReason = turnstate.StatusClosed, true, "abandoned"
	s.Parent = &turnstate.ParentLink{SessionID: uuid(), TurnID: id(), RequestID: uuid()}
	// HTTP caller names are bounded by acs.MaxIDBytes (gateway.Caller).
	s.Caller = turnstate.HTTPCaller(id())
	s.TurnsStarted = maxInt
	for range turnstate.MaxOpenTurns {
		tr := turnstate.Turn{TurnID: id(), Index: maxInt, ParentTurnID: id(), TriggeredBy: "auto_continuation",
			StartSeq: maxU, StartTime: at, Steps: maxInt, ToolCalls: maxInt, Denied: true, Implicit: true}
		for range acs.MaxExpectedInputs {
			n++
			tr.ExpectedInputs = append(tr.ExpectedInputs, worstString(t, n, acs.MaxExpectedInputBytes))
		}
		s.OpenTurns = append(s.OpenTurns, tr)
	}
	s.LastClosedTurn = &turnstate.ClosedTurn{TurnID: id(), Index: maxInt, Outcome: "denied_at_start", Steps: maxInt,
		ToolCalls: maxInt, EndSeq: maxU, EndTime: at, Implicit: true}
	s.Envelopes, s.FirstSeq, s.LastSeq, s.FirstTime, s.LastTime = maxU, maxU, maxU, at, at
	s.ChainHead, s.ChainLength = strings.Repeat("f", 64), maxU
	for range turnstate.MaxRecentRequestIDs {
		s.RecentRequestIDs = append(s.RecentRequestIDs, uuid())
	}
	for range turnstate.MaxRecentTurnIDs {
		s.RecentTurnIDs = append(s.RecentTurnIDs, id())
	}
	for range turnstate.MaxSubagents {
		s.Subagents = append(s.Subagents, id())
	}
	for range turnstate.MaxRecentNonces {
		// The schema allows 64 characters; '<' stores as six bytes, more
		// than any other character.
		n++
		s.RecentNonces = append(s.RecentNonces, strconv.Itoa(n)+strings.Repeat("<", 64-len(strconv.Itoa(n))))
	}
	s.Violations = map[string]uint64{}
	for _, v := range []string{turnstate.TurnIDMissing, turnstate.TurnIDMismatch, turnstate.TurnIDNotRequestID, turnstate.TurnIDReused,
		turnstate.ParentTurnUnknown, turnstate.TurnEndUnmatched, turnstate.TurnStepCountMismatch, turnstate.UnexpectedInput,
		turnstate.TurnOverlap, turnstate.TurnLeftOpen, turnstate.TurnDenied, turnstate.TurnDepthExceeded, turnstate.SessionClosed,
		turnstate.SessionStartMissing, turnstate.SessionAlreadyStarted, turnstate.RequestReplayed, turnstate.AgentIDMismatch,
		turnstate.TurnImplicit} {
		s.Violations[v] = maxU
	}
	s.Decisions = map[acs.Disposition]uint64{}
	for _, d := range []acs.Disposition{acs.Allow, acs.Deny, acs.Modify, acs.Ask, acs.Defer} {
		s.Decisions[d] = maxU
	}

	hit := func() turnstate.TaintHit {
		h := turnstate.TaintHit{Seq: maxU, Step: maxU, RequestID: uuid(), Hook: "memoryContextRetrieval",
			Tool: worstString(t, n, acs.MaxEvidenceBytes), Turn: maxInt, TurnID: id(), Time: at, Source: strings.Repeat("s", 64), Session: uuid()}
		for range turnstate.MaxTaintEvidence {
			h.ProvenanceIDs = append(h.ProvenanceIDs, id())
			h.Origins = append(h.Origins, "agent_generated")
			h.SourceIDs = append(h.SourceIDs, id())
		}
		return h
	}
	s.Taints = map[string]*turnstate.Taint{}
	for _, tl := range rs.Taints {
		s.Taints[tl.ID] = &turnstate.Taint{First: hit(), Last: hit(), Hits: maxInt}
		// One source per label goes sticky past the running ones.
		s.Held = append(s.Held, turnstate.HeldSource{Label: tl.ID, Source: strings.Repeat("s", 64) + ":read", Tool: worstString(t, n, acs.MaxEvidenceBytes), Sticky: true})
	}
	for range turnstate.MaxHeldSources {
		h := turnstate.HeldSource{Label: strings.Repeat("l", 64), Source: strings.Repeat("s", 64) + ":read", Tool: worstString(t, n, acs.MaxEvidenceBytes), RequestID: uuid()}
		for range turnstate.MaxHeldHandles {
			n++
			h.Handles = append(h.Handles, worstString(t, n, 64))
		}
		s.Held = append(s.Held, h)
	}
	for range turnstate.MaxStopping {
		n++
		s.Stopping = append(s.Stopping, turnstate.StopCall{RequestID: uuid(), ID: worstString(t, n, 64)})
	}
	for range turnstate.MaxLetGo {
		s.LetGo = append(s.LetGo, uuid())
	}
	for range turnstate.MaxTasks {
		n++
		s.Tasks = append(s.Tasks, worstString(t, n, 64))
	}
	s.Counters = map[string]*turnstate.Counter{}
	s.RuleHits = map[string]uint64{}
	for _, r := range rs.Rules {
		s.RuleHits[r.ID] = maxU
		th := r.Threshold
		if th == nil {
			continue
		}
		c := &turnstate.Counter{Count: maxInt, Turn: maxInt}
		if th.Within != nil {
			// The window keeps at most min(max+1, MaxWindowEntries) hits
			// (rules' slide); both lists filled, whichever the window uses.
			for range min(th.Max+1, turnstate.MaxWindowEntries) {
				c.Times = append(c.Times, at)
				c.Turns = append(c.Turns, maxInt)
			}
		}
		s.Counters[r.ID] = c
	}
	// The lineage index of a pack whose conditions read lineage: every
	// slot taken, each source's strings at their bound (request ids are
	// UUIDs; '<' stores as six bytes).
	s.Lineage = &lineage.Index{}
	// Calls waiting for their results: those that carried new tokens
	// (kept only while the index has room, so first), those whose output
	// went unreported, those that named a source the user typed, and
	// those answered ask, each list at its bound.
	for i := range lineage.MaxCarried {
		var carried strings.Builder
		for j := range lineage.MaxCarriedTokens {
			fmt.Fprintf(&carried, "c%dx%d.example ", i, j)
		}
		if !s.Lineage.Carry(uuid(), carried.String()) {
			t.Fatal("the worst lineage index does not keep a carrying call")
		}
	}
	for range lineage.MaxMissing {
		s.Lineage.Miss(uuid())
	}
	for range lineage.MaxPointed {
		s.Lineage.Point(uuid())
	}
	for i := range lineage.MaxAsked {
		var asked strings.Builder
		for j := range lineage.MaxAskedTokens {
			fmt.Fprintf(&asked, "a%dx%d ", i, j)
		}
		s.Lineage.Ask(uuid(), []string{asked.String()})
	}
	for i := range lineage.MaxSources {
		long := strings.Repeat("<", 256)
		var text strings.Builder
		for j := range lineage.MaxUntrusted/lineage.MaxSources + 1 {
			fmt.Fprintf(&text, "u%dx%d ", i, j)
		}
		s.Lineage.AddUntrusted(text.String(), lineage.Source{Seq: maxU, RequestID: uuid(), Hook: "memoryContextRetrieval", Tool: long, ProvenanceID: long, Later: i == lineage.MaxSources-1, Taints: true, Pointed: true})
		s.Lineage.AddTrusted(strings.ReplaceAll(text.String(), "u", "t"))
	}
	// Every place of a page's kept too: a host each (a URL whose host is
	// a place gives its room up once it runs out).
	var places strings.Builder
	for j := range lineage.MaxPlaces + 1 {
		fmt.Fprintf(&places, "https://p%d.example/x ", j)
	}
	s.Lineage.AddUntrusted(places.String(), lineage.Source{Seq: maxU, RequestID: uuid(), Hook: "toolCallResult", Tool: strings.Repeat("<", 256), ProvenanceID: strings.Repeat("<", 256), Taints: true})
	if !s.Lineage.PlacesFull {
		t.Fatal("the worst lineage index does not keep every place")
	}
	// Every field slot taken too (records' field values).
	var fields []string
	for i := range lineage.MaxFields {
		fields = append(fields, fmt.Sprintf("f%d", i))
	}
	s.Lineage.AddFields(fields...)
	// And every span the user typed.
	var spans strings.Builder
	for i := range lineage.MaxTyped {
		fmt.Fprintf(&spans, "`s%d`\n", i)
	}
	s.Lineage.AddTrusted(spans.String())
	if u, tr := s.Lineage.Len(); u != lineage.MaxUntrusted || tr != lineage.MaxTrusted {
		t.Fatalf("the worst lineage index holds %d and %d tokens, want %d and %d", u, tr, lineage.MaxUntrusted, lineage.MaxTrusted)
	}
	for range turnstate.MaxUnanswered {
		// An unanswered call's evidence carries no provenance lists.
		s.Unanswered = append(s.Unanswered, turnstate.UnansweredCall{Label: strings.Repeat("l", 64), Hit: turnstate.TaintHit{Seq: maxU, Step: maxU, RequestID: uuid(),
			Hook: "toolCallRequest", Tool: strings.Repeat("<", acs.MaxEvidenceBytes), Turn: maxInt, TurnID: id(), Time: at, Source: strings.Repeat("s", 64) + ":read"}, Output: true, Held: true, Settled: true})
	}
	for range turnstate.MaxFileTaints {
		s.FileTaints = append(s.FileTaints, turnstate.FileTaint{Label: strings.Repeat("l", 64), Path: worstString(t, n, turnstate.MaxFileTaintPath), Source: strings.Repeat("s", 64)})
		n++
	}
	s.Provenance = &turnstate.ProvenanceMemory{Seen: true}
	for range turnstate.MaxKnownProvenance {
		s.Provenance.Known = append(s.Provenance.Known, turnstate.KnownProvenance{ID: id(), Untrusted: true})
	}
	return s
}

// storedRecord is the record internal/statestore stores for a session's
// JSON without an outbox: framed, '#' and the JSON as a netstring
// (statestore's TestSaveMsgEncoding pins the layout; the core's tests do
// not link the store).
func storedRecord(js []byte) []byte {
	return fmt.Appendf(nil, "#%d:%s,", len(js), js)
}

// TestWorstCaseStateSize: the largest state the bounds allow under the
// default rule pack, sealed as the store writes it, stays well below half
// of the server's 1 MiB max_payload. Measured: 467,645 bytes (456.7
// KiB; docs/OPERATING.md, Limits), 293,156 without the lineage index the default
// pack (and any rule set reading lineage) keeps. A new list or string in the state must be bounded
// and added here.
func TestWorstCaseStateSize(t *testing.T) {
	rs, err := rulepack.Load(rulepack.DefaultPath)
	if err != nil {
		t.Fatal(err)
	}
	s := worstState(t, rs)
	rec, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	sealed := testSealer(t, 1).Seal(turnstate.KindSession, s.Key(), storedRecord(rec))
	t.Logf("worst-case sealed session state: %d bytes (%.1f KiB); limit %d", len(sealed), float64(len(sealed))/1024, worstStateLimit)
	noIndex := s.Clone()
	noIndex.Lineage = nil
	if rec, err := json.Marshal(noIndex); err == nil {
		t.Logf("without the lineage index (a rule set that does not read lineage): %d bytes", len(testSealer(t, 1).Seal(turnstate.KindSession, s.Key(), storedRecord(rec))))
	}
	if len(sealed) >= worstStateLimit {
		t.Fatalf("worst-case sealed state is %d bytes; it must stay below %d (half of max_payload)", len(sealed), worstStateLimit)
	}
	// The state a decision produces is cloned before it is saved: the
	// copy must be as large (nothing the clone drops hides from the test).
	c, err := json.Marshal(s.Clone())
	if err != nil {
		t.Fatal(err)
	}
	if len(c) != len(rec) {
		t.Fatalf("Clone encodes to %d bytes, the state to %d", len(c), len(rec))
	}
}
