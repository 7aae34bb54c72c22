package policy

import (
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// Held labels: a tool classed streams (Claude Code's Monitor) goes on
// feeding what its source sends — a poller's lines, a socket's messages —
// after its result, with no call and no hook for each part. A window
// counted from the result would end while the source still speaks: a line
// three prompts later would meet no window. So a label such a call sets is
// held (turnstate.Session.Held): its window does not end while the source
// runs. The result of a call of a tool classed stops_task (TaskStop,
// KillShell) whose task is one of the source's names lets it go — or,
// for a source whose result gave no name, of any such call that
// succeeded and stopped no task the session knows (knownTask); so does
// the session's end. The label's window starts there, the last part
// having just arrived.

// classStreams and classStopsTask are the catalog classes held labels
// read.
const (
	classStreams   = "streams"
	classStopsTask = "stops_task"
)

// streams reports whether the call's tool goes on feeding output back
// after its result.
func (e *evalCtx) streams() bool { return slices.Contains(e.toolView().Classes, classStreams) }

// isHeld reports whether a running source holds label.
func isHeld(sess *turnstate.Session, label string) bool {
	return slices.ContainsFunc(sess.Held, func(h turnstate.HeldSource) bool { return h.Label == label })
}

// hold holds label for the source the call requestID started, named by
// handles (none known: a successful stop of no known task names it). Past
// turnstate.MaxHeldSources running sources that have a call, a label's
// are held together, sticky, until the session ends — this label's, or
// the oldest's when this label has none: none is forgotten, and the
// session keeps at most one sticky source per label.
func hold(sess *turnstate.Session, label string, hit turnstate.TaintHit, requestID string, handles []string) {
	if i := slices.IndexFunc(sess.Held, func(h turnstate.HeldSource) bool { return h.RequestID == requestID && h.Label == label && !h.Sticky }); i >= 0 {
		sess.Held[i].Handles = handles
		return
	}
	src := turnstate.HeldSource{Label: label, Source: hit.Source, Tool: hit.Tool, RequestID: requestID, Handles: handles}
	if requestID == "" {
		stick(sess, src)
		return
	}
	running := func(h turnstate.HeldSource) bool { return !h.Sticky }
	n := 0
	for _, h := range sess.Held {
		if running(h) {
			n++
		}
	}
	if n >= turnstate.MaxHeldSources {
		victim := label
		if !slices.ContainsFunc(sess.Held, func(h turnstate.HeldSource) bool { return h.Label == label && running(h) }) {
			victim = sess.Held[slices.IndexFunc(sess.Held, running)].Label
		}
		first := sess.Held[slices.IndexFunc(sess.Held, func(h turnstate.HeldSource) bool { return h.Label == victim && running(h) })]
		sess.Held = slices.DeleteFunc(sess.Held, func(h turnstate.HeldSource) bool { return h.Label == victim && running(h) })
		stick(sess, first)
		if victim == label {
			return
		}
	}
	sess.Held = append(sess.Held, src)
}

// stick holds src's label until the session ends, once per label.
func stick(sess *turnstate.Session, src turnstate.HeldSource) {
	if slices.ContainsFunc(sess.Held, func(h turnstate.HeldSource) bool { return h.Label == src.Label && h.Sticky }) {
		return
	}
	sess.Held = append(sess.Held, turnstate.HeldSource{Label: src.Label, Source: src.Source, Tool: src.Tool, Sticky: true})
}

// letGo lets the held source i go; a label no other source holds is set
// with this envelope as evidence, its window starting here.
func (e *evalCtx) letGo(i int) {
	h := e.sess.Held[i]
	e.sess.Held = slices.Delete(e.sess.Held, i, i+1)
	if h.RequestID != "" {
		// A subagent's state still holds the source it handed over: its
		// next stop must not hand it over again.
		if len(e.sess.LetGo) >= turnstate.MaxLetGo {
			e.sess.LetGo = slices.Delete(e.sess.LetGo, 0, 1)
		}
		e.sess.LetGo = append(e.sess.LetGo, h.RequestID)
	}
	if !isHeld(e.sess, h.Label) {
		e.setTaint(h.Label, h.Source+":stopped")
	}
}

// stopID is the task a call of a tool classed stops_task stops: its
// task_id (Claude Code's TaskStop), else its shell_id (KillShell,
// KillBash), else bash_id — as sent: the host looks the task up by it
// exactly, so "BMON7X" or " bmon7x" stops no bmon7x (and would let go a
// source that still runs). Another argument that holds a source's name
// does not make the call stop it.
func stopID(args map[string]any) string {
	for _, k := range []string{"task_id", "shell_id", "bash_id"} {
		if s, ok := args[k].(string); ok {
			return s
		}
	}
	return ""
}

// stopCall is the stop a call of a tool classed stops_task makes while
// a label is held: remembered once let run (Decided), settled at its
// result (stopped).
func (e *evalCtx) stopCall() *turnstate.StopCall {
	if len(e.sess.Held) == 0 || e.hook != "toolCallRequest" || !slices.Contains(e.toolView().Classes, classStopsTask) {
		return nil
	}
	id := stopID(e.toolView().Args)
	if acs.StoredLen(id) > maxHandleBytes {
		id = "" // no name a source goes by
	}
	return &turnstate.StopCall{RequestID: e.in.Req.Params.RequestID, ID: id}
}

// remember remembers a stop let run; past turnstate.MaxStopping the
// oldest is forgotten (it lets nothing go).
func rememberStop(sess *turnstate.Session, s *turnstate.StopCall) {
	if s == nil || s.RequestID == "" {
		return
	}
	if len(sess.Stopping) >= turnstate.MaxStopping {
		sess.Stopping = slices.Delete(sess.Stopping, 0, 1)
	}
	sess.Stopping = append(sess.Stopping, *s)
}

// stopped settles a stop at its result: the sources its task is a name
// of are let go, whatever the result says (stopped now, or ended
// before); a stop that names none and succeeded lets the oldest source
// with no name go — unless its task is one the session knows as another
// (knownTask). A stop that failed naming none (a task id made up, "no
// task found") lets nothing go.
func (e *evalCtx) stopped() {
	if e.hook != "toolCallResult" || len(e.sess.Stopping) == 0 {
		return
	}
	p, _ := e.in.Payload.(map[string]any)
	ref, _ := p["request_id_ref"].(string)
	i := slices.IndexFunc(e.sess.Stopping, func(s turnstate.StopCall) bool { return ref != "" && s.RequestID == ref })
	if i < 0 {
		return
	}
	stop := e.sess.Stopping[i]
	e.sess.Stopping = slices.Delete(e.sess.Stopping, i, i+1)
	let := false
	for j := 0; j < len(e.sess.Held); {
		if stop.ID != "" && slices.Contains(e.sess.Held[j].Handles, stop.ID) {
			e.letGo(j)
			let = true
			continue
		}
		j++
	}
	if let || e.toolView().ExitStatus != "success" || e.knownTask(stop.ID) {
		return
	}
	if j := slices.IndexFunc(e.sess.Held, func(h turnstate.HeldSource) bool { return len(h.Handles) == 0 && !h.Sticky && h.Until == nil }); j >= 0 {
		e.letGo(j)
	}
}

// knownTask reports whether id names a task the session knows to be
// another than a source with no name: a held source's name, a background
// task a result announced (Session.Tasks), or one remembered for its
// output. Stopping it lets no nameless source go.
func (e *evalCtx) knownTask(id string) bool {
	if id == "" {
		return false
	}
	for _, h := range e.sess.Held {
		if slices.Contains(h.Handles, id) {
			return true
		}
	}
	return slices.Contains(e.sess.Tasks, id) || slices.ContainsFunc(e.sess.FileTaints, func(f turnstate.FileTaint) bool { return background(f) && f.Path == id })
}

// rememberTasks remembers the background task a shell's result announces
// (backgroundTaskIDs), whatever it runs: a stop of it is no stop of a
// streaming source with no name. At most turnstate.MaxTasks, the oldest
// forgotten first.
func (e *evalCtx) rememberTasks() {
	if e.hook != "toolCallResult" || !slices.Contains(e.toolView().Classes, "shell") {
		return
	}
	for _, id := range backgroundTaskIDs(e.in.Payload) {
		rememberTask(e.sess, id)
	}
}

// rememberTask adds the background task id to the session's Tasks, newest
// last, unless it is there already or too long a name; past
// turnstate.MaxTasks the oldest is forgotten.
func rememberTask(sess *turnstate.Session, id string) {
	if acs.StoredLen(id) > maxHandleBytes || slices.Contains(sess.Tasks, id) {
		return
	}
	if len(sess.Tasks) >= turnstate.MaxTasks {
		sess.Tasks = slices.Delete(sess.Tasks, 0, 1)
	}
	sess.Tasks = append(sess.Tasks, id)
}

// backgroundTaskIDs is the first task id a result announces
// (announcements).
func backgroundTaskIDs(payload any) []string {
	for _, names := range announcements(payload) {
		if names[0] != "" {
			return names[:1] // one command, one task: more is text posing as them
		}
	}
	return nil
}

// endHolds lets every held source go at the session's end (the host's
// process, and the sources it ran, end with it), and those of a label
// clear_when cleared.
func (e *evalCtx) endHolds() {
	if e.hook != "sessionEnd" {
		return
	}
	for len(e.sess.Held) > 0 {
		e.letGo(0)
	}
	e.sess.Stopping = nil
}

// dropHolds forgets the sources holding label: a clear_when cleared it.
func dropHolds(sess *turnstate.Session, label string) {
	sess.Held = slices.DeleteFunc(sess.Held, func(h turnstate.HeldSource) bool { return h.Label == label })
}

// stoppedChild is the subagent session whose work this subagentStop
// hands over (Input.Subagent): nil on any other envelope, for a session
// this one did not spawn, and for a spawn denied and honoured (no
// subagent ran).
func (e *evalCtx) stoppedChild() *turnstate.Session {
	c := e.in.Subagent
	if e.hook != "subagentStop" || c == nil || !e.sess.Spawned(c) {
		return nil
	}
	if p, _ := e.in.Payload.(map[string]any); p["outcome"] == "denied_at_spawn" {
		return nil
	}
	return c
}

// adoptHolds takes over the sources a subagent's session holds at its
// stop: what its Monitor feeds goes on reaching whoever takes its work.
func (e *evalCtx) adoptHolds() {
	c := e.stoppedChild()
	if c == nil {
		return
	}
	for _, h := range c.Held {
		if h.RequestID != "" && slices.Contains(e.sess.LetGo, h.RequestID) {
			continue // this session let it go: stopped, or ended
		}
		if _, set := e.sess.Taints[h.Label]; !set {
			// A hold is of a label set: whatever the pack's sources
			// make of the stop, what the source feeds enters here.
			e.setTaint(h.Label, h.Source+":handed")
		}
		if h.Sticky {
			hold(e.sess, h.Label, turnstate.TaintHit{Source: h.Source, Tool: h.Tool}, "", nil)
			continue
		}
		hold(e.sess, h.Label, turnstate.TaintHit{Source: h.Source, Tool: h.Tool}, h.RequestID, slices.Clone(h.Handles))
	}
}

// adoptWork takes over, at a subagent's stop, the background tasks its
// results announced (Session.Tasks) and the files it remembers as holding
// untrusted content (Session.FileTaints): the names under which what its
// fetches brought — a background fetch's task id and output file, a page
// a fetch saved, a clone — is read later. The tasks go on running and the
// files stay on disk after the subagent stops, and the parent, which
// takes its work, reads them there (a TaskOutput of the task four prompts
// on; a Read of the saved page): each read sets the label again, as in
// the subagent. In the subagent's order, newest last, within the parent's
// bounds (turnstate.MaxTasks; turnstate.MaxFileTaints, copies making room
// for copies first, and maxBackgroundFiles for the background ones), as
// if the parent had remembered them itself. The subagent's state keeps
// them too: a later stop of it hands them over again, changing nothing
// but their order.
func (e *evalCtx) adoptWork() {
	c := e.stoppedChild()
	if c == nil {
		return
	}
	for _, id := range c.Tasks {
		rememberTask(e.sess, id)
	}
	rememberFiles(e.sess, c.FileTaints)
}

// heldNote is the sentence a decision cites for a held label: which
// sources keep its window open and how to let it end. "" if not held.
func heldNote(sess *turnstate.Session, label string) string {
	var what, awaited []string
	for _, h := range sess.Held {
		if h.Label != label {
			continue
		}
		w := "a source"
		if h.Tool != "" {
			w = h.Tool
		}
		if h.Until != nil {
			w += " (its call has not returned its result: what it still prints reaches the model by polls no hook sees; the window ends at its result, or at " + h.Until.UTC().Format(time.RFC3339) + ")"
			if !slices.Contains(awaited, w) {
				awaited = append(awaited, w)
			}
			continue
		}
		if len(h.Handles) > 0 {
			w += " " + h.Handles[0]
		}
		if h.Sticky {
			w += " (more sources than the session tells apart: held until it ends)"
		}
		if !slices.Contains(what, w) {
			what = append(what, w)
		}
	}
	var notes []string
	if len(what) > 0 {
		notes = append(notes, strings.Join(what, ", ")+" still feeds the session; stop it (TaskStop) to let the window end")
	}
	if len(awaited) > 0 {
		notes = append(notes, strings.Join(awaited, ", ")+" may still feed the session")
	}
	return strings.Join(notes, "; ")
}

// streamHandles are the names a stop call may give the source a
// streaming call's result announced: the host's own fields (a task id:
// taskId, backgroundTaskId, monitorId, shellId …), the announcement of a
// command gone on in the background (announced), or an id a short text
// result gives after a colon ("id: mon_1a2b", "with ID: bmon7x"), as
// written: a stop names the task exactly. Bounded: a result is the host's
// announcement, not the source's output; a name that is wrong only keeps
// the label held, and any one of them names the source.
func streamHandles(payload any) []string {
	p, _ := payload.(map[string]any)
	outputs, _ := p["outputs"].([]any)
	var names []string
	add := func(n string) {
		if n != "" && acs.StoredLen(n) <= maxHandleBytes && !slices.Contains(names, n) && len(names) < turnstate.MaxHeldHandles {
			names = append(names, n)
		}
	}
	for _, o := range outputs {
		om, _ := o.(map[string]any)
		switch v := om["value"].(type) {
		case map[string]any:
			for _, k := range handleFields {
				if id, ok := v[k].(string); ok {
					add(id)
				}
			}
		case string:
			// The first id the host's announcement gives: what follows
			// may be the source's first lines, whose "id: x" is anyone's.
			if a := announced(v); len(a) > 0 {
				add(a[0]) // its task id; its output file is no task to stop
			} else if m := announcedID.FindStringSubmatch(v); m != nil && len(v) <= maxAnnouncement {
				add(strings.TrimRight(m[1], "."))
			}
		}
	}
	return names
}

// handleFields are the fields of a structured result that name a task.
var handleFields = []string{"taskId", "task_id", "backgroundTaskId", "monitorId", "monitor_id", "shellId", "shell_id", "bash_id", "id"}

// announcedID is an id a short result text announces: after "id" and a
// colon or an equals sign ("ID: bmon7x", "task_id=b12"), not an "ID"
// the text goes on about ("pass this ID when calling TaskStop").
var announcedID = regexp.MustCompile(`(?i)\b(?:task|monitor|shell|watch)?[ _-]?id\s*[:=]\s*["'(]?([A-Za-z0-9][A-Za-z0-9_.-]{2,63})`)

// maxHandleBytes bounds a name's stored length (acs.StoredLen): a longer
// one is not kept.
const maxHandleBytes = 64

// Awaited calls. Codex yields on a command still running after its
// yield_time_ms (a streaming curl, gh run watch, a slow server) and the
// model reads the rest with write_stdin polls, which fire no hook; the
// command's PostToolUse comes only when a poll sees it end
// (codex-rs/core/src/tools/handlers/unified_exec/write_stdin.rs). A fetch
// settled before its result (its label set at the next envelope) would
// have its window end two turns on while it still feeds the model. So on
// such a host the label of an output source's call settled before its
// result is held until the result — let go there, its window starting
// then — or, since a result may never come (a command the host's own
// prompt declined, a process the host pruned), until the label's window
// duration after the settling envelope (30 minutes in the default pack).

// yieldingPlatforms are the hosts whose shell calls may yield before
// their result (ACS metadata.platform).
var yieldingPlatforms = []string{"codex"}

// yields reports whether the call is a shell command on a host that may
// yield on it (UnansweredCall.Awaited).
func (e *evalCtx) yields() bool {
	return slices.Contains(yieldingPlatforms, e.in.Req.Params.Metadata.Platform) && slices.Contains(e.toolView().Classes, "shell")
}

// awaitResult holds the label of the awaited call u, settled by this
// envelope, until its result or its label's window duration from here
// (with no duration, until its result).
func (e *evalCtx) awaitResult(u turnstate.UnansweredCall) {
	if slices.ContainsFunc(e.sess.Held, func(h turnstate.HeldSource) bool { return h.Until != nil && h.RequestID == u.Hit.RequestID }) {
		return
	}
	var until *time.Time
	if w := e.set.taint(u.Label).Window; w.Duration != nil {
		t := e.in.Time.Add(*w.Duration)
		until = &t
	}
	n := len(e.sess.Held)
	hold(e.sess, u.Label, u.Hit, u.Hit.RequestID, nil)
	if len(e.sess.Held) > n && e.sess.Held[len(e.sess.Held)-1].RequestID == u.Hit.RequestID {
		if until == nil {
			far := e.in.Time.Add(100 * 365 * 24 * time.Hour)
			until = &far
		}
		e.sess.Held[len(e.sess.Held)-1].Until = until
	}
}

// expireHolds ends the holds of awaited calls whose time is up: the
// label's window, anchored at the envelope that settled the call, ends
// as any other.
func (e *evalCtx) expireHolds() {
	if !slices.ContainsFunc(e.sess.Held, func(h turnstate.HeldSource) bool { return h.Until != nil }) {
		return
	}
	e.sess.Held = slices.DeleteFunc(e.sess.Held, func(h turnstate.HeldSource) bool { return h.Until != nil && e.in.Time.After(*h.Until) })
	if len(e.sess.Held) == 0 {
		e.sess.Held = nil
	}
}
