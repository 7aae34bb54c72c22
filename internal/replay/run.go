package replay

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// Selection narrows a back-test: a tenant ("*": every tenant), and
// optionally one session.
type Selection struct {
	Tenant    string
	SessionID string
}

func (s Selection) filter() []string {
	if s.SessionID != "" {
		return []string{acs.StoredFilter(s.Tenant, s.SessionID, "*")}
	}
	return []string{acs.StoredFilter(s.Tenant, "*", "*")}
}

// Report is what a back-test found: how the decisions and alerts of the
// envelopes in range change when they are decided with other rules.
type Report struct {
	Ruleset string `json:"ruleset"`
	// Tenant ("*": every tenant) and SessionID ("": every session) are
	// what was selected.
	Tenant    string `json:"tenant"`
	SessionID string `json:"session_id,omitempty"`
	From      uint64 `json:"from_seq"`
	To        uint64 `json:"to_seq"`
	// WarmFrom is where the run started so that the sessions in range
	// were rebuilt from their first envelope.
	WarmFrom uint64 `json:"warm_from_seq"`
	Sessions int    `json:"sessions"`
	// Compared counts envelopes in range with a recorded decision;
	// Unrecorded those without one (not decided yet when the run began);
	// WarmUp those replayed only to rebuild state.
	Compared   int `json:"compared"`
	Unrecorded int `json:"unrecorded"`
	WarmUp     int `json:"warm_up"`
	// Transitions counts changed decisions by "recorded→replayed".
	Transitions   map[string]int `json:"transitions"`
	AlertsAdded   map[string]int `json:"alerts_added"`
	AlertsRemoved map[string]int `json:"alerts_removed"`
	// Hits counts, per rule, the envelopes in range it hit on replay.
	Hits map[string]RuleHits `json:"hits"`
	// Changes is every envelope whose decision or alerts changed, in
	// stream order, with its evidence.
	Changes []Change `json:"changes"`
	// Interrupted is set when the run was stopped before the end of its
	// range; the counts then cover what was read.
	Interrupted bool `json:"interrupted,omitempty"`
}

// RuleHits is a rule's hits on replay.
type RuleHits struct {
	Mode string `json:"mode"`
	Hits int    `json:"hits"`
}

// Change is one envelope decided differently, with its evidence.
type Change struct {
	Seq       uint64 `json:"seq"`
	SessionID string `json:"session_id"`
	TurnID    string `json:"turn_id,omitempty"`
	Hook      string `json:"hook"`
	Tool      string `json:"tool,omitempty"`
	Summary   string `json:"summary,omitempty"`
	Recorded  string `json:"recorded"`
	Replayed  string `json:"replayed"`
	// Rules are the rules that hit on replay, with their messages.
	Rules         []string `json:"rules,omitempty"`
	Reasoning     string   `json:"reasoning,omitempty"`
	AlertsAdded   []string `json:"alerts_added,omitempty"`
	AlertsRemoved []string `json:"alerts_removed,omitempty"`
}

// DecisionChanged reports whether the decision itself changed.
func (c Change) DecisionChanged() bool { return c.Recorded != c.Replayed }

// Differs reports whether anything changed.
func (r *Report) Differs() bool { return len(r.Changes) > 0 }

// Empty reports whether nothing was compared: no envelope of the
// selection in range had a recorded decision. "No differences" then says
// nothing about the rules — a wrong tenant or range gives it too.
func (r *Report) Empty() bool { return r.Compared == 0 }

// Options tune a back-test run.
type Options struct {
	// Progress shows a progress line when it is a terminal.
	Progress io.Writer
	// Workers decide in parallel (0: one per CPU). Each session tree (a
	// session and the subagents it spawned) stays with one worker, in
	// stream order, so the result does not depend on the count; rules that
	// count per agent across sessions force one worker.
	Workers int
}

// BackTest decides the envelopes of sel in r again with rs, in stream
// order, each session rebuilt from its first envelope, and compares the
// outcome with what was recorded. On interruption it returns the partial
// report with ctx's error.
func BackTest(ctx context.Context, src *Source, g *guardian.Guardian, rs *policy.Set, r Range, sel Selection, opts Options) (rep *Report, err error) {
	rep = newReport(r)
	rep.Tenant, rep.SessionID = sel.Tenant, sel.SessionID
	if rs != nil {
		rep.Ruleset = rs.Name + " " + rs.Revision
	}
	defer func() {
		if err != nil && ctx.Err() != nil {
			rep.Interrupted = true
		}
	}()
	if r.Empty() {
		return rep, nil
	}
	links, err := src.SpawnLinks(ctx, sel.Tenant, r.To)
	if err != nil {
		return rep, err
	}
	w, ok, err := planWarmUp(ctx, src, r, sel, links, opts.Progress)
	if err != nil || !ok {
		return rep, err
	}
	rep.WarmFrom = w.from
	startTime, err := src.timeOf(ctx, w.from)
	if err != nil {
		return rep, err
	}
	// Decisions are stored after their envelopes; a minute's margin
	// covers clock differences between servers of a cluster.
	rec, err := src.ReadRecorded(ctx, sel.Tenant, sel.SessionID, startTime.Add(-time.Minute), HeadersOnly)
	if err != nil {
		return rep, err
	}

	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if rs != nil && rs.AgentKeyed() {
		workers = 1
	}
	against := comparer{from: r.From, inRange: w.inRange, rec: rec}
	partial, sessions, err := decideSharded(ctx, src, func() *Engine { return NewEngine(g, rs) }, r, w, links, against, workers, opts.Progress)
	rep.Sessions = sessions
	for _, p := range partial {
		rep.merge(p)
	}
	slices.SortFunc(rep.Changes, func(a, b Change) int { return cmp.Compare(a.Seq, b.Seq) })
	return rep, err
}

// warmUp is where a back-test starts reading and what it reads: the
// sessions in range (nil: every session), the subject filters, and the
// stream sequence from which each of them is read from its first
// envelope.
type warmUp struct {
	inRange map[string]bool
	filters []string
	from    uint64
}

// planWarmUp finds the warm-up of a back-test of sel in r: with a session
// selected or a range starting after the stream's first envelope, a first
// pass finds the sessions in range and the warm-up starts at the first
// envelope of any of them (or of the sessions spawning them or spawned by
// them). ok is false when no session of the selection is in range.
func planWarmUp(ctx context.Context, src *Source, r Range, sel Selection, links map[string][]string, progress io.Writer) (w warmUp, ok bool, err error) {
	// A range from the start of the stream holds every session from its
	// first envelope: no warm-up, so no first pass to find the sessions.
	// inRange nil means every session is in range.
	w.filters, w.from = sel.filter(), r.From
	if first, err := src.firstSeq(ctx); err != nil {
		return w, false, err
	} else if sel.SessionID != "" || r.From > first {
		if w.inRange, err = src.sessionsIn(ctx, r, sel, NewProgress(progress, r.From, r.To)); err != nil {
			return w, false, err
		}
		if len(w.inRange) == 0 {
			return w, false, nil
		}
		warm := turnstate.SpawnConnected(w.inRange, links)
		if sel.SessionID != "" {
			w.filters = sessionFilters(warm)
		}
		if w.from, err = src.firstOfAll(ctx, warm, r.From); err != nil {
			return w, false, err
		}
	}
	return w, true, nil
}

// decideSharded reads the envelopes from the warm-up to the end of r and
// decides them on workers goroutines, each session tree on one of them in
// stream order, each worker with its own engine. It returns each worker's
// partial report, the number of sessions with envelopes in range, and the
// read's error (the workers have finished either way).
func decideSharded(ctx context.Context, src *Source, newEngine func() *Engine, r Range, w warmUp, links map[string][]string, against comparer, workers int, progress io.Writer) ([]*Report, int, error) {
	shards := make([]chan []Envelope, workers)
	partial := make([]*Report, workers)
	var wg sync.WaitGroup
	for i := range shards {
		shards[i] = make(chan []Envelope, 4)
		partial[i] = newReport(r)
		eng := newEngine()
		wg.Go(func() {
			for batch := range shards[i] {
				for _, e := range batch {
					against.observe(partial[i], e, eng.Decide(e))
				}
			}
		})
	}
	const batchSize = 64
	pending := make([][]Envelope, workers)
	roots := turnstate.SpawnRoots(links)
	sessions := map[string]bool{}
	bar := NewProgress(progress, w.from, r.To)
	err := src.Each(ctx, Range{From: w.from, To: r.To, ToTime: r.ToTime}, w.filters, func(e Envelope) error {
		bar.At(e.Seq)
		if against.in(e) {
			sessions[e.Route.SessionKey()] = true
		}
		i := shardOf(e, roots, workers)
		pending[i] = append(pending[i], e)
		if len(pending[i]) == batchSize {
			shards[i] <- pending[i]
			pending[i] = nil
		}
		return nil
	})
	for i := range shards {
		if len(pending[i]) > 0 {
			shards[i] <- pending[i]
		}
		close(shards[i])
	}
	wg.Wait()
	bar.Done()
	return partial, len(sessions), err
}

func newReport(r Range) *Report {
	return &Report{From: r.From, To: r.To, Transitions: map[string]int{}, AlertsAdded: map[string]int{}, AlertsRemoved: map[string]int{}, Hits: map[string]RuleHits{}}
}

// merge adds a worker's counts and changes to r.
func (r *Report) merge(p *Report) {
	r.Compared += p.Compared
	r.Unrecorded += p.Unrecorded
	r.WarmUp += p.WarmUp
	for k, n := range p.Transitions {
		r.Transitions[k] += n
	}
	for k, n := range p.AlertsAdded {
		r.AlertsAdded[k] += n
	}
	for k, n := range p.AlertsRemoved {
		r.AlertsRemoved[k] += n
	}
	for id, h := range p.Hits {
		rh := r.Hits[id]
		rh.Mode, rh.Hits = h.Mode, rh.Hits+h.Hits
		r.Hits[id] = rh
	}
	r.Changes = append(r.Changes, p.Changes...)
}

// shardOf picks the worker of an envelope: by the root of its session's
// spawn tree (turnstate.SpawnRoots), so that a parent's subagentStart is decided
// before its subagent's envelopes, as in the stream.
func shardOf(e Envelope, roots map[string]string, workers int) int {
	if workers == 1 || e.RouteErr != nil {
		return 0
	}
	key := e.Route.SessionKey()
	root, ok := roots[key]
	if !ok {
		root = key
	}
	h := fnv.New32a()
	h.Write([]byte(root))
	return int(h.Sum32() % uint32(workers))
}

// comparer holds what every worker compares against; it is read only.
type comparer struct {
	from    uint64
	inRange map[string]bool
	rec     Recorded
}

// in reports whether an envelope is compared (else it only warms up).
func (c comparer) in(e Envelope) bool {
	return e.Seq >= c.from && e.RouteErr == nil && (c.inRange == nil || c.inRange[e.Route.SessionKey()])
}

// observe counts one decided envelope into a worker's report.
func (c comparer) observe(rep *Report, e Envelope, out guardian.Outcome) {
	if !c.in(e) {
		rep.WarmUp++
		return
	}
	for _, h := range out.Hits {
		rh := rep.Hits[h.Rule.ID]
		rh.Mode, rh.Hits = string(h.Rule.Mode), rh.Hits+1
		rep.Hits[h.Rule.ID] = rh
	}
	d, ok := c.rec.Decisions[e.Seq]
	if !ok {
		rep.Unrecorded++
		return
	}
	rep.Compared++
	ch, changed := compare(e, out, d, c.rec.Alerts[e.Seq])
	if !changed {
		return
	}
	if ch.DecisionChanged() {
		rep.Transitions[ch.Recorded+"→"+ch.Replayed]++
	}
	for _, id := range ch.AlertsAdded {
		rep.AlertsAdded[id]++
	}
	for _, id := range ch.AlertsRemoved {
		rep.AlertsRemoved[id]++
	}
	rep.Changes = append(rep.Changes, ch)
}

// compare sets a replayed outcome against the recorded decision and alerts
// of one envelope.
func compare(e Envelope, out guardian.Outcome, d Decision, recAlerts []Alert) (Change, bool) {
	c := Change{Seq: e.Seq, SessionID: e.Route.SessionID, TurnID: out.TurnID, Hook: e.Route.Hook,
		Recorded: d.Kind(), Replayed: responseKind(out.Response)}
	var was, now []string
	for _, a := range recAlerts {
		was = append(was, a.RuleID)
	}
	for _, a := range out.Alerts {
		now = append(now, a.RuleID)
	}
	c.AlertsAdded, c.AlertsRemoved = multisetDiff(now, was), multisetDiff(was, now)
	if !c.DecisionChanged() && len(c.AlertsAdded) == 0 && len(c.AlertsRemoved) == 0 {
		return c, false
	}
	f, _ := guardian.ReadFacts(e.Data)
	c.Tool, c.Summary = summarize(e.Route.Hook, f.PayloadValue())
	for _, h := range out.Hits {
		c.Rules = append(c.Rules, h.Rule.ID+": "+h.Message)
	}
	if out.Response != nil && out.Response.Result != nil {
		c.Reasoning = out.Response.Result.Reasoning
	}
	return c, true
}

// multisetDiff is a minus b, counting repeats, sorted.
func multisetDiff(a, b []string) []string {
	left := map[string]int{}
	for _, s := range b {
		left[s]++
	}
	var out []string
	for _, s := range a {
		if left[s] > 0 {
			left[s]--
			continue
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// sessionsIn finds the sessions (keys) of sel with envelopes in r.
func (s *Source) sessionsIn(ctx context.Context, r Range, sel Selection, bar *Progress) (map[string]bool, error) {
	sessions := map[string]bool{}
	err := s.Each(ctx, r, sel.filter(), func(e Envelope) error {
		bar.At(e.Seq)
		if e.RouteErr == nil {
			sessions[e.Route.SessionKey()] = true
		}
		return nil
	})
	bar.Done()
	return sessions, err
}

// firstOfAll is the sequence of the first envelope of the earliest of
// sessions, or from when that is earlier.
func (s *Source) firstOfAll(ctx context.Context, sessions map[string]bool, from uint64) (uint64, error) {
	first := from
	for _, filter := range sessionFilters(sessions) {
		seq, err := s.firstOf(ctx, filter)
		if err != nil {
			return 0, fmt.Errorf("first envelope of %s: %w", filter, err)
		}
		first = min(first, seq)
	}
	return first, nil
}

// firstSeq is the stream's first sequence.
func (s *Source) firstSeq(ctx context.Context) (uint64, error) {
	info, err := s.hooks.Info(ctx)
	if err != nil {
		return 0, err
	}
	return info.State.FirstSeq, nil
}

// firstOf is the sequence of the first stored message matching filter.
func (s *Source) firstOf(ctx context.Context, filter string) (uint64, error) {
	m, err := s.hooks.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(filter))
	if err != nil {
		return 0, err
	}
	return m.Sequence, nil
}

// timeOf is the stream time of the envelope at seq.
func (s *Source) timeOf(ctx context.Context, seq uint64) (time.Time, error) {
	m, err := s.hooks.GetMsg(ctx, seq)
	if err != nil {
		return time.Time{}, fmt.Errorf("read envelope %d: %w", seq, err)
	}
	return m.Time, nil
}

// selected describes a selection for a report's header.
func selected(tenant, sessionID string) string {
	out := "tenant " + tenant
	if tenant == "*" {
		out = "every tenant"
	}
	if sessionID != "" {
		out += ", session " + sessionID
	}
	return out
}

// WriteReport prints a back-test report for a terminal, with at most
// samples changes listed.
func WriteReport(w io.Writer, rep *Report, samples int) error {
	fmt.Fprintf(w, "rules     %s\nselected  %s\nrange     stream sequences %d–%d (warm-up from %d)\n",
		rep.Ruleset, selected(rep.Tenant, rep.SessionID), rep.From, rep.To, rep.WarmFrom)
	fmt.Fprintf(w, "compared  %s in %s (%d replayed for warm-up, %d without a recorded decision)\n",
		plural(rep.Compared, "envelope", "envelopes"), plural(rep.Sessions, "session", "sessions"), rep.WarmUp, rep.Unrecorded)
	if rep.Interrupted {
		fmt.Fprintln(w, "INTERRUPTED: the counts cover the envelopes read before the stop")
	}
	switch {
	case rep.Empty():
		fmt.Fprintln(w, "\nNOTHING COMPARED: no envelope selected in range has a recorded decision, so there is nothing to differ (is --tenant, --session or the range right?)")
	case !rep.Differs():
		fmt.Fprintln(w, "\nno differences: every decision and alert is as recorded")
	default:
		fmt.Fprintf(w, "\n%s\n", plural(len(rep.Changes), "envelope differs", "envelopes differ"))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(rep.Transitions) > 0 {
		fmt.Fprintln(tw, "\nDECISION CHANGE\tCOUNT")
		for _, k := range slices.Sorted(maps.Keys(rep.Transitions)) {
			fmt.Fprintf(tw, "%s\t%d\n", k, rep.Transitions[k])
		}
	}
	if len(rep.AlertsAdded)+len(rep.AlertsRemoved) > 0 {
		fmt.Fprintln(tw, "\nRULE\tALERTS ADDED\tALERTS REMOVED")
		ids := slices.Sorted(maps.Keys(rep.AlertsAdded))
		for id := range rep.AlertsRemoved {
			if _, ok := rep.AlertsAdded[id]; !ok {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		for _, id := range ids {
			fmt.Fprintf(tw, "%s\t%d\t%d\n", id, rep.AlertsAdded[id], rep.AlertsRemoved[id])
		}
	}
	if len(rep.Hits) > 0 {
		fmt.Fprintln(tw, "\nRULE\tMODE\tHITS")
		for _, id := range slices.Sorted(maps.Keys(rep.Hits)) {
			fmt.Fprintf(tw, "%s\t%s\t%d\n", id, rep.Hits[id].Mode, rep.Hits[id].Hits)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rep.Changes) > 0 && samples > 0 {
		if samples >= len(rep.Changes) {
			fmt.Fprintf(w, "\nchanges (%d)\n", len(rep.Changes))
		} else {
			fmt.Fprintf(w, "\nsamples (%d of %d; --diff or --format json lists all)\n", samples, len(rep.Changes))
		}
		for _, c := range rep.Changes[:min(samples, len(rep.Changes))] {
			step := c.Hook
			if c.Tool != "" {
				step += " " + c.Tool
			}
			if c.Summary != "" {
				step += ": " + truncate(c.Summary, 60)
			}
			fmt.Fprintf(w, "\n  seq %d  session %s  turn %s\n    %s\n", c.Seq, c.SessionID, c.TurnID, step)
			if c.DecisionChanged() {
				fmt.Fprintf(w, "    decision %s → %s\n", c.Recorded, c.Replayed)
			}
			for _, r := range c.Rules {
				fmt.Fprintf(w, "    hit  %s\n", r)
			}
			if len(c.AlertsAdded) > 0 {
				fmt.Fprintf(w, "    alerts added   %s\n", strings.Join(c.AlertsAdded, ", "))
			}
			if len(c.AlertsRemoved) > 0 {
				fmt.Fprintf(w, "    alerts removed %s\n", strings.Join(c.AlertsRemoved, ", "))
			}
		}
	}
	return nil
}
