package policy

import (
	"regexp"
	"slices"
	"strings"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// Held labels: a tool classed streams (Claude Code's Monitor) goes on
// feeding what its source sends — a poller's lines, a socket's messages —
// after its result, with no call and no hook for each part. A window
// counted from the result would end while the source still speaks: a line
// three prompts later would meet no window. So a label such a call sets is
// held (turnstate.Session.Held): its window does not end while the source
// runs. A call of a tool classed stops_task (TaskStop, KillShell) that
// names the source lets it go — and the label's window starts there, the
// last part having just arrived; so does any such call for a source whose
// name its result did not give.

// classStreams and classStopsTask are the catalog classes held labels
// read.
const (
	classStreams   = "streams"
	classStopsTask = "stops_task"
)

// streams reports whether the call's tool goes on feeding output back
// after its result.
func (e *evalCtx) streams() bool { return slices.Contains(e.toolView().Classes, classStreams) }

// held returns the session's held entry for label, or nil.
func held(sess *turnstate.Session, label string) *turnstate.HeldLabel {
	for i := range sess.Held {
		if sess.Held[i].Label == label {
			return &sess.Held[i]
		}
	}
	return nil
}

// hold holds label for one more running source, named by handles (none
// known: counted unnamed), with hit's source and tool as the evidence.
func hold(sess *turnstate.Session, label string, hit turnstate.TaintHit, handles []string) {
	h := held(sess, label)
	if h == nil {
		sess.Held = append(sess.Held, turnstate.HeldLabel{Label: label})
		h = &sess.Held[len(sess.Held)-1]
	}
	h.Source, h.Tool = hit.Source, hit.Tool
	named := false
	for _, n := range handles {
		n = strings.ToLower(n)
		if slices.Contains(h.Handles, n) {
			named = true
			continue
		}
		if len(h.Handles) < turnstate.MaxHeldHandles {
			h.Handles = append(h.Handles, n)
			named = true
		}
	}
	if !named {
		// No name, or none that fits: any stop lets one such source go.
		h.Unnamed = min(h.Unnamed+1, turnstate.MaxHeldUnnamed)
	}
}

// Release is what a stop call lets go of a held label, once it may run
// (Set.Decided): the handles it names, or one unnamed source.
type Release struct {
	Label   string
	Handles []string
	Unnamed bool
	// Hit is the stop's evidence: the label's window starts there when
	// the last source holding it is let go.
	Hit turnstate.TaintHit
}

// releases are what a call of a tool classed stops_task lets go: of each
// held label, the handles an argument of the call is (its whole value,
// without case; or a path ending with it, an output file); when it names
// none, one source held unnamed. A word inside a longer value (a task id
// of "x bmon7x") is not the task the call stops.
func (e *evalCtx) releases() []Release {
	if len(e.sess.Held) == 0 || e.hook != "toolCallRequest" || !slices.Contains(e.toolView().Classes, classStopsTask) {
		return nil
	}
	var words []string
	EachString(e.toolView().Args, func(w string) { words = append(words, strings.ToLower(strings.TrimSpace(w))) })
	var out []Release
	for _, h := range e.sess.Held {
		r := Release{Label: h.Label, Hit: e.hit(h.Source+":stopped", false)}
		for _, n := range h.Handles {
			if slices.ContainsFunc(words, func(w string) bool { return w == n || strings.HasSuffix(w, "/"+n) }) {
				r.Handles = append(r.Handles, n)
			}
		}
		r.Unnamed = len(r.Handles) == 0 && h.Unnamed > 0
		if len(r.Handles) > 0 || r.Unnamed {
			out = append(out, r)
		}
	}
	return out
}

// release lets go what rs name; a label no source holds any more is set
// with the stop as evidence, its window starting there.
func release(sess *turnstate.Session, rs []Release) {
	for _, r := range rs {
		h := held(sess, r.Label)
		if h == nil {
			continue
		}
		h.Handles = slices.DeleteFunc(h.Handles, func(n string) bool { return slices.Contains(r.Handles, n) })
		if r.Unnamed && h.Unnamed > 0 {
			h.Unnamed--
		}
		if len(h.Handles) == 0 && h.Unnamed == 0 {
			hit := r.Hit
			hit.Tool = h.Tool
			setTaintHit(sess, r.Label, hit)
			sess.Held = slices.DeleteFunc(sess.Held, func(o turnstate.HeldLabel) bool { return o.Label == r.Label })
		}
	}
}

// heldNote is the sentence a decision cites for a held label: which
// source keeps its window open and how to let it end. "" if not held.
func heldNote(sess *turnstate.Session, label string) string {
	h := held(sess, label)
	if h == nil {
		return ""
	}
	what := "a source"
	if h.Tool != "" {
		what = h.Tool
	}
	names := ""
	if len(h.Handles) > 0 {
		names = " " + strings.Join(h.Handles, ", ")
	}
	return what + names + " still feeds the session; stop it (TaskStop) to let the window end"
}

// streamHandles are the names a stop call may give the source a
// streaming call's result announced: the host's own fields (a task id:
// taskId, backgroundTaskId, monitorId, shellId …), the announcement of a
// command gone on in the background (announced), or an id a short text
// result gives ("Monitor started … id: mon_1a2b", "task b7x9"). Bounded:
// a result is the host's announcement, not the source's output, and a name
// that is wrong only keeps the label held.
func streamHandles(payload any) []string {
	p, _ := payload.(map[string]any)
	outputs, _ := p["outputs"].([]any)
	var names []string
	add := func(n string) {
		n = strings.Trim(n, ".,;:()[]\"'")
		if n != "" && acs.StoredLen(n) <= maxHandleBytes && !slices.Contains(names, n) && len(names) < maxStreamHandles {
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
			for _, n := range announced(v) {
				add(n)
			}
			if len(v) <= maxAnnouncement {
				for _, m := range announcedID.FindAllStringSubmatch(v, maxStreamHandles) {
					add(m[1])
				}
			}
		}
	}
	return names
}

// handleFields are the fields of a structured result that name a task.
var handleFields = []string{"taskId", "task_id", "backgroundTaskId", "monitorId", "monitor_id", "shellId", "shell_id", "bash_id", "id"}

// announcedID is an id a short result text announces.
var announcedID = regexp.MustCompile(`(?i)\b(?:task|monitor|shell|watch)?[ _-]?id\b["']?\s*[:=]?\s*["'(]?([A-Za-z0-9][A-Za-z0-9_.-]{2,63})`)

// maxStreamHandles bounds the names read from one result, maxHandleBytes
// a name's stored length (acs.StoredLen): a longer one is not kept.
const (
	maxStreamHandles = 4
	maxHandleBytes   = 64
)
