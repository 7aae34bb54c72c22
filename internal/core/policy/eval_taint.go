package policy

import (
	"slices"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// Taint labels during evaluation: setting and clearing them on the
// session, their windows, and the views conditions read.

// updateTaints clears the labels whose clearing condition holds, then sets
// or refreshes the labels whose source matches.
func (e *evalCtx) updateTaints(res *Result) {
	e.expireHolds()
	e.taintUnanswered()
	e.rememberTasks()
	e.stopped()
	e.adoptHolds()
	e.adoptWork()
	e.endHolds()
	res.Stop = e.stopCall()
	e.taintFileReads(res)
	for _, t := range e.set.Taints {
		if _, set := e.sess.Taints[t.ID]; set && t.clearWhen != nil {
			ok, err := e.eval(t.clearWhen)
			if err != nil {
				res.Errors = append(res.Errors, EvalError{Where: "taint " + t.ID + " clear_when", Err: err})
			} else if ok {
				delete(e.sess.Taints, t.ID)
				dropHolds(e.sess, t.ID)
			}
		}
		for _, src := range t.Sources {
			ok, err := e.eval(src.when)
			if err != nil {
				res.Errors = append(res.Errors, EvalError{Where: "taint " + t.ID + " source " + src.id, Err: err})
				continue
			}
			if ok && src.unanswered {
				res.Unanswered = append(res.Unanswered, turnstate.UnansweredCall{Label: t.ID, Hit: e.hit(src.id, false), Output: src.output, Held: src.output && e.streams(),
					Awaited: src.output && e.yields()})
				if src.files {
					for _, w := range commandWrites(e.toolView(), workingDir(e.in.Req)) {
						w.Label, w.Source = t.ID, src.id
						res.Files = append(res.Files, w)
					}
				}
				continue
			}
			if ok {
				e.setTaint(t.ID, src.id)
				break
			}
		}
	}
}

// setTaint records the envelope's evidence. The ids in it are bounded by
// intake (acs.MaxIDBytes) and their lists by turnstate.MaxTaintEvidence;
// the tool name, which no rule reads back from a taint, is evidence only and
// truncated to acs.MaxEvidenceBytes instead of refused.
//
// A hit is anchored at its turn's index, or at the session's newest turn
// when that is newer (Session.NewestTurn: counted or open): a step may
// name an open turn older than the newest (overlapping or long-open
// turns), or none (a late result after the next turn opened), and a window
// anchored there would start already aged.
func (e *evalCtx) setTaint(label, source string) {
	setTaintHit(e.sess, label, e.hit(source, true))
	e.contentTaints = true
}

// hit is the envelope's evidence for source; with its provenance lists
// or without (an unanswered call's, kept until its result: the request's
// own provenance is not the content that will enter).
func (e *evalCtx) hit(source string, provenance bool) turnstate.TaintHit {
	turn, window := e.sess.NewestTurn()
	h := turnstate.TaintHit{Seq: e.in.Seq, RequestID: e.in.Req.Params.RequestID, Hook: e.hook, Tool: acs.TruncateStored(e.toolView().Name, acs.MaxEvidenceBytes),
		Turn: max(e.turn, turn), WindowTurn: max(e.windowTurn, window), TurnID: e.in.Req.Params.Metadata.TurnID, Time: e.in.Time, Step: e.sess.Envelopes, Source: source}
	if provenance {
		h.ProvenanceIDs, h.Origins, h.SourceIDs = bounded(e.prov.UntrustedIDs), bounded(untrustedOrigins(e.prov.Origins)), bounded(e.prov.SourceIDs)
	}
	return h
}

func setTaintHit(sess *turnstate.Session, label string, hit turnstate.TaintHit) {
	if sess.Taints == nil {
		sess.Taints = map[string]*turnstate.Taint{}
	}
	if t, ok := sess.Taints[label]; ok {
		t.Last = hit
		t.Hits++
		return
	}
	sess.Taints[label] = &turnstate.Taint{First: hit, Last: hit, Hits: 1}
}

// taintUnanswered settles the calls an unanswered source matched: the
// envelope that is a call's result answers it (no label: the result's own
// sources decide; an output source's label, with the result as
// evidence), and any other envelope arriving first sets each call's
// label with the call as evidence — its output entered the session, but
// the session will not see it (an adapter that sends no results, or a
// result that names no request: Cursor's afterShellExecution). The window
// starts at the settling envelope, the latest the output may have entered
// (a server that held its answer for half an hour delivers it then), not
// at the call. A call of an output source settled so waits on for its
// result (Settled), which may still come — after the permission prompt's
// Notification, after a parallel call: it sets the label again, as the
// output enters then, names a background task and starts a held source.
func (e *evalCtx) taintUnanswered() {
	if len(e.sess.Unanswered) == 0 {
		return
	}
	ref := ""
	if e.hook == "toolCallResult" {
		p, _ := e.in.Payload.(map[string]any)
		ref, _ = p["request_id_ref"].(string)
	}
	// The first result that names no request, of the tool an output
	// source's call used (Cursor's afterShellExecution after a curl),
	// most likely brings that call's output: content that taints, as the
	// result naming it would (lineage.Source.Taints), so that a place the
	// page named is one later (TG-TAINT-007). Not a later one: the call
	// settled waits on, and the next command's output is not the page.
	refless := e.hook == "toolCallResult" && ref == ""
	resultTool := acs.TruncateStored(e.toolView().Name, acs.MaxEvidenceBytes)
	waiting := e.sess.Unanswered[:0]
	claimed := false // the request-less result is one call's output, the first's
	for _, u := range e.sess.Unanswered {
		brings := false
		if refless && u.Output && !u.Settled && u.Hit.Tool == resultTool {
			e.contentTaints = true
			brings, claimed = !claimed, true
		}
		if ref != "" && u.Hit.RequestID == ref {
			// An awaited call's hold ends at its result, which sets
			// the label below: its window starts here.
			e.sess.Held = slices.DeleteFunc(e.sess.Held, func(h turnstate.HeldSource) bool { return h.Until != nil && h.RequestID == ref })
			if len(e.sess.Held) == 0 {
				e.sess.Held = nil
			}
			if u.Output {
				// The call's output is this result's: it enters now —
				// or, for a command that went on in the background, when
				// a later call reads it (its task's output).
				e.setTaint(u.Label, u.Hit.Source)
				rememberFiles(e.sess, backgroundOutputs(e.in.Payload, u.Label, u.Hit.Source))
				if u.Held && e.toolView().ExitStatus == "success" {
					// Its feed starts with its result: held from here. One
					// that failed to start, or never ran (declined at the
					// host's own prompt: no result), feeds nothing more.
					hold(e.sess, u.Label, u.Hit, u.Hit.RequestID, streamHandles(e.in.Payload))
				}
			}
			continue
		}
		if u.Settled {
			waiting = append(waiting, u)
			continue
		}
		setTaintHit(e.sess, u.Label, e.settledAt(u.Hit))
		if u.Awaited {
			e.awaitResult(u)
		}
		if e.set.usesLineage && !brings {
			// Its output entered unseen: until its result arrives (calls
			// run in parallel), if ever (an adapter that sends none),
			// lineage cannot tell a value taken from it from the model's
			// own. Not the call whose output this request-less result
			// brings, which is indexed as it comes: no later result names
			// it, and the index would stay unseen for the session.
			sessionIndex(e.sess).Miss(u.Hit.RequestID)
		}
		if u.Output {
			u.Settled = true
			waiting = append(waiting, u)
		}
	}
	e.sess.Unanswered = slices.Clip(waiting)
	if len(e.sess.Unanswered) == 0 {
		e.sess.Unanswered = nil
	}
}

// settledAt is a call's evidence anchored at this envelope: the call's
// request, tool and source, this envelope's time, turn and step where
// they are later.
func (e *evalCtx) settledAt(h turnstate.TaintHit) turnstate.TaintHit {
	now := e.hit(h.Source, false)
	h.Turn, h.WindowTurn, h.Step = max(h.Turn, now.Turn), max(h.WindowTurn, now.WindowTurn), max(h.Step, now.Step)
	if now.Time.After(h.Time) {
		h.Time = now.Time
	}
	return h
}

// Decided records in the rule state what the decision d on the envelope
// Evaluate gave res for means: a call that may run (anything but deny)
// waits for its result, its output entering the session whether or not
// the result is ever reported (pend); a call answered ask is remembered,
// for its approval (asked) — its sinks' values, where it goes, not what
// its body carries: approving a mail that quotes a bill's account sends
// the quote, it does not make the account one to pay; what a call
// carried that the session had not seen is remembered, to be the model's
// own once the call's own result echoes it (ownValues).
func (s *Set) Decided(sess *turnstate.Session, spec acs.MethodSpec, requestID string, payload any, res Result, d acs.Disposition) {
	if texts, ok := s.callTexts(spec, payload); ok {
		if d == acs.Ask {
			s.asked(sess, requestID, s.sinkTexts(payload))
		}
		s.ownValues(sess, requestID, texts)
	}
	if d != acs.Deny {
		if res.Pointed {
			sessionIndex(sess).Point(requestID)
		}
		pend(sess, res)
		rememberFiles(sess, res.Files)
		rememberStop(sess, res.Stop)
	}
}

// pend remembers the calls of res.Unanswered. A session holds at most
// turnstate.MaxUnanswered; past that, the oldest call already settled
// makes room (its result will name nothing) — a streaming one, whose
// result would have started its hold, held at once with no name — and
// with none, a call's label is set at once (fail closed), held with no
// name for a source that streams.
func pend(sess *turnstate.Session, res Result) {
	for _, u := range res.Unanswered {
		if len(sess.Unanswered) >= turnstate.MaxUnanswered {
			i := slices.IndexFunc(sess.Unanswered, func(o turnstate.UnansweredCall) bool { return o.Settled && !o.Held })
			if i < 0 {
				i = slices.IndexFunc(sess.Unanswered, func(o turnstate.UnansweredCall) bool { return o.Settled })
			}
			if i >= 0 {
				if o := sess.Unanswered[i]; o.Held {
					hold(sess, o.Label, o.Hit, o.Hit.RequestID, nil)
				}
				sess.Unanswered = slices.Delete(sess.Unanswered, i, i+1)
			} else {
				setTaintHit(sess, u.Label, u.Hit)
				if u.Held {
					hold(sess, u.Label, u.Hit, u.Hit.RequestID, nil)
				}
				continue
			}
		}
		sess.Unanswered = append(sess.Unanswered, u)
	}
}

// inheritTaints gives the subagent a subagentStart announces the labels
// live in this session at the spawn: a child started inside its parent's
// window acts for a session that read untrusted content, on instructions
// that session wrote. The evidence stays the parent's (TaintHit.Inherited);
// the window is anchored in the child at the spawn — its turn 0 and the
// subagentStart's time — so it covers the spawn and the child's next N
// turns (or D from the spawn), as if the content had entered the child
// there. A label whose window is over in the parent is not inherited.
func (e *evalCtx) inheritTaints() {
	child := e.in.Spawned
	if child == nil {
		return
	}
	for _, def := range e.set.Taints {
		t, ok := e.sess.Taints[def.ID]
		if !ok {
			continue
		}
		if live, _ := e.within(def.ID, t, def.Window); !live {
			continue
		}
		last := t.Last.Inherited(e.sess.SessionID)
		last.Time = e.in.Time
		if child.Taints == nil {
			child.Taints = map[string]*turnstate.Taint{}
		}
		child.Taints[def.ID] = &turnstate.Taint{First: t.First.Inherited(e.sess.SessionID), Last: last, Hits: 1}
	}
}

func untrustedOrigins(origins []string) []string {
	var out []string
	for _, o := range origins {
		if untrustedOrigin(o) || o == "agent_generated" {
			out = append(out, o)
		}
	}
	return out
}

func bounded(s []string) []string {
	if len(s) > turnstate.MaxTaintEvidence {
		s = s[:turnstate.MaxTaintEvidence]
	}
	return slices.Clone(s)
}

// within reports whether the envelope is inside a window anchored at a
// taint's newest hit: turns: N admits the anchor's turn and the next N
// turns that age windows (a turn continuing the agent's work does not:
// turnstate.ContinuesWork); steps: N the anchor's envelope and the
// session's next N; duration: D admits envelope times up to anchor time +
// D. An envelope in an enclosing turn older than the anchor's (nested
// turns) counts as the anchor's turn. A label held while a source runs
// (Session.Held) is inside every window.
func (e *evalCtx) within(label string, t *turnstate.Taint, w Window) (bool, int) {
	age := max(e.windowTurn-t.Last.WindowTurn, 0)
	if isHeld(e.sess, label) {
		return true, age
	}
	if w.Turns != nil && age > *w.Turns {
		return false, age
	}
	if w.Steps != nil && e.ageSteps(t) > int64(*w.Steps) {
		return false, age
	}
	if w.Duration != nil && e.in.Time.Sub(t.Last.Time) > *w.Duration {
		return false, age
	}
	return true, age
}

// ageSteps is the number of the session's envelopes since the taint's
// newest hit. A hit recorded before hits counted steps (Step 0, not
// inherited) is taken as this envelope's: its window is open (fail
// closed) until a newer hit anchors it.
func (e *evalCtx) ageSteps(t *turnstate.Taint) int64 {
	if t.Last.Step == 0 && t.Last.Session == "" {
		return 0
	}
	return max(int64(e.sess.Envelopes)-int64(t.Last.Step), 0)
}

func (e *evalCtx) taintViews() map[string]TaintView {
	views := make(map[string]TaintView, len(e.set.Taints))
	for _, def := range e.set.Taints {
		t, ok := e.sess.Taints[def.ID]
		if !ok {
			views[def.ID] = TaintView{Origins: []string{}, SourceIDs: []string{}}
			continue
		}
		active, age := e.within(def.ID, t, def.Window)
		views[def.ID] = TaintView{Set: true, Active: active, Held: isHeld(e.sess, def.ID), AgeTurns: int64(age), AgeSteps: e.ageSteps(t), Age: e.in.Time.Sub(t.Last.Time),
			SinceTurn: int64(t.First.Turn), Hits: int64(t.Hits), Origins: slices.Clone(t.Last.Origins), SourceIDs: slices.Clone(t.Last.SourceIDs)}
	}
	return views
}

func (s *Set) taint(id string) *TaintLabel {
	for _, t := range s.Taints {
		if t.ID == id {
			return t
		}
	}
	return &TaintLabel{ID: id}
}
