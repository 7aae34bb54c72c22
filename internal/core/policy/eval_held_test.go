package policy

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// streamHandles reads the names a stop may give a streaming call's source
// from the host's fields and a short announcement, and no more than
// maxStreamHandles; a page-sized text is not an announcement.
func TestStreamHandles(t *testing.T) {
	out := func(v any) map[string]any { return map[string]any{"outputs": []any{map[string]any{"value": v}}} }
	for _, tc := range []struct {
		name    string
		payload any
		want    []string
	}{
		{"the host's field", out(map[string]any{"taskId": "bmon7x", "status": "running"}), []string{"bmon7x"}},
		{"a background task's field", out(map[string]any{"backgroundTaskId": "b12", "stdout": "id: evil"}), []string{"b12"}},
		{"an announcement with an id", out("Monitor started with ID: bmon7x. Events will be delivered as notifications."), []string{"bmon7x"}},
		{"Qwen Code's shape", out("Monitor started.\nid: mon_1a2b3c\ncommand: gh run watch"), []string{"mon_1a2b3c"}},
		{"a background command", out("Command running in background with ID: bt2kelt7i. Output is being written to: /tmp/claude-1000/x/tasks/bt2kelt7i.output"),
			[]string{"bt2kelt7i"}},
		{"no id", out("Listening."), nil},
		{"a word ending in id is not an id", out("a valid stream"), nil},
		{"a page-sized text", out("task id: b1 " + strings.Repeat("x", maxAnnouncement)), nil},
		{"the first id a text gives: the rest may be the source's lines", out("Monitor started with ID: abc. First event: build id: zz9999 failed"), []string{"abc"}},
		{"host fields, bounded", out(map[string]any{"taskId": "b1a", "task_id": "b2a", "monitorId": "b3a", "shellId": "b4a", "id": "b5a"}), []string{"b1a", "b2a", "b3a", "b4a"}},
		{"an ID the text goes on about is none", out("Monitor started with ID: bmon7x. Pass this ID when calling TaskStop."), []string{"bmon7x"}},
		{"as written, bounded", out(map[string]any{"taskId": "BMON7X", "id": strings.Repeat("<", 12)}), []string{"BMON7X"}},
		{"no outputs", map[string]any{}, nil},
	} {
		if got := streamHandles(tc.payload); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// Past MaxHeldSources running sources, a label's are held together,
// sticky — this label's, or the oldest's when this label has none — and
// none is forgotten; the session keeps at most one sticky source per
// label, and the running ones stay bounded.
func TestHoldIsBounded(t *testing.T) {
	var s turnstate.Session
	hit := turnstate.TaintHit{Source: "shell-fetch", Tool: "Monitor"}
	for i := range turnstate.MaxHeldSources {
		hold(&s, "a", hit, fmt.Sprintf("ra%d", i), []string{fmt.Sprintf("a%d", i)})
	}
	hold(&s, "a", hit, "ra0", []string{"named-again"}) // the same call: names, no new source
	if len(s.Held) != turnstate.MaxHeldSources || s.Held[0].Handles[0] != "named-again" {
		t.Fatalf("held %+v", s.Held)
	}
	hold(&s, "b", hit, "rb0", []string{"b0"})
	// b has no running source: the oldest's label, a, goes sticky.
	if !isHeld(&s, "a") || !isHeld(&s, "b") || len(s.Held) != 2 || !s.Held[0].Sticky || s.Held[0].Label != "a" {
		t.Fatalf("after a ninth source: %+v", s.Held)
	}
	for i := range 3 * turnstate.MaxHeldSources {
		hold(&s, "b", hit, fmt.Sprintf("rb%d", i+1), nil)
		hold(&s, "c", hit, fmt.Sprintf("rc%d", i+1), nil)
	}
	running, sticky := 0, map[string]int{}
	for _, h := range s.Held {
		if h.Sticky {
			sticky[h.Label]++
		} else {
			running++
		}
	}
	if running > turnstate.MaxHeldSources || sticky["a"] != 1 || sticky["b"] > 1 || sticky["c"] > 1 || !isHeld(&s, "b") || !isHeld(&s, "c") {
		t.Fatalf("%d running, sticky %v: %+v", running, sticky, s.Held)
	}
}

// A stop settles at its result: its task lets the source it names go,
// whatever the result says; a stop naming none lets the oldest source
// with no name go only if it succeeded; a sticky source waits for the
// session's end. The label's window starts at the result that lets its
// last source go.
func TestStopped(t *testing.T) {
	rs := compileHeld(t)
	for _, tc := range []struct {
		name    string
		held    []turnstate.HeldSource
		stopID  string
		status  string
		letsGo  bool
		remains int
	}{
		{"its task, stopped", []turnstate.HeldSource{{Label: "untrusted_content", RequestID: "m1", Handles: []string{"bmon7x", "toolu_1"}}}, "bmon7x", "success", true, 0},
		{"its task, ended before", []turnstate.HeldSource{{Label: "untrusted_content", RequestID: "m1", Handles: []string{"bmon7x"}}}, "bmon7x", "failure", true, 0},
		{"another task", []turnstate.HeldSource{{Label: "untrusted_content", RequestID: "m1", Handles: []string{"bmon7x"}}}, "b0ther", "success", false, 1},
		{"no name, a stop that succeeded", []turnstate.HeldSource{{Label: "untrusted_content", RequestID: "m1"}}, "b0ther", "success", true, 0},
		{"no name, a stop that failed", []turnstate.HeldSource{{Label: "untrusted_content", RequestID: "m1"}}, "b0000", "failure", false, 1},
		{"one of two", []turnstate.HeldSource{{Label: "untrusted_content", RequestID: "m1", Handles: []string{"b1"}}, {Label: "untrusted_content", RequestID: "m2", Handles: []string{"b2"}}}, "b1", "success", false, 1},
		{"sticky", []turnstate.HeldSource{{Label: "untrusted_content", Sticky: true}}, "b1", "success", false, 1},
		{"no name, a stop of another named source's task", []turnstate.HeldSource{{Label: "untrusted_content", RequestID: "m1"}, {Label: "other", RequestID: "m2", Handles: []string{"b2"}}}, "b2", "success", false, 1},
		{"no name, a stop of a background fetch's task", []turnstate.HeldSource{{Label: "untrusted_content", RequestID: "m1"}}, "bgfetch1", "success", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sess := &turnstate.Session{SessionID: "s", Held: slices.Clone(tc.held), Stopping: []turnstate.StopCall{{RequestID: "stop1", ID: tc.stopID}},
				FileTaints: []turnstate.FileTaint{{Label: "untrusted_content", Path: "bgfetch1", Source: "shell-fetch" + backgroundSuffix}}}
			e := evalOn(t, rs, sess, "toolCallResult", map[string]any{"tool": map[string]any{"name": "TaskStop"}, "exit_status": tc.status,
				"request_id_ref": "stop1", "outputs": []any{map[string]any{"value": "x"}}})
			e.stopped()
			if len(sess.Stopping) != 0 {
				t.Errorf("the stop is still waiting: %+v", sess.Stopping)
			}
			if len(sess.Held) != tc.remains {
				t.Errorf("%d sources held, want %d: %+v", len(sess.Held), tc.remains, sess.Held)
			}
			if _, set := sess.Taints["untrusted_content"]; set != tc.letsGo {
				t.Errorf("label set %v, want %v (its window starting at the stop)", set, tc.letsGo)
			}
		})
	}
}

// A held label's note names the source and says how to end it.
func TestHeldNote(t *testing.T) {
	var s turnstate.Session
	if n := heldNote(&s, "l"); n != "" {
		t.Fatalf("not held: %q", n)
	}
	hold(&s, "l", turnstate.TaintHit{Tool: "Monitor"}, "r1", []string{"bmon7x"})
	if n := heldNote(&s, "l"); !strings.Contains(n, "Monitor bmon7x") || !strings.Contains(n, "TaskStop") {
		t.Fatalf("note %q", n)
	}
}

// The task a stop stops is its task_id (else shell_id, bash_id): a name
// in another argument is not it.
func TestStopID(t *testing.T) {
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"task_id": " BMON7X "}, " BMON7X "}, // as sent: the host finds no bmon7x by it
		{map[string]any{"task_id": "b0000", "shell_id": "bmon7x"}, "b0000"},
		{map[string]any{"shell_id": "bmon7x"}, "bmon7x"},
		{map[string]any{"bash_id": "b1"}, "b1"},
		{map[string]any{"description": "bmon7x"}, ""},
	} {
		if got := stopID(tc.args); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.args, got, tc.want)
		}
	}
}

// compileHeld is a rule set with the default pack's label and stop tool.
func compileHeld(t *testing.T) *Set {
	t.Helper()
	src := `apiVersion: turnguard/v1
kind: RuleSet
metadata: {name: held}
tools:
  - {match: "TaskStop", classes: [read_only, stops_task]}
taints:
  - id: untrusted_content
    sources:
      - {id: never, when: "false"}
    window: {turns: 2}
`
	f, err := ParseFile("held.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := Compile([]*File{f})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// evalOn is an evaluation of a hook's payload on sess.
func evalOn(t *testing.T, rs *Set, sess *turnstate.Session, hook string, payload map[string]any) *evalCtx {
	t.Helper()
	in := input(t, "steps/"+hook)
	in.Payload = payload
	return &evalCtx{set: rs, sess: sess, in: in, hook: ruleHook(*in.Spec)}
}

// A shell's result announces one background task: remembered, at most
// MaxTasks; another tool's result, or more announcements in one result,
// remember nothing more (text posing as tasks could push real ones out).
func TestRememberTasks(t *testing.T) {
	src := `apiVersion: turnguard/v1
kind: RuleSet
metadata: {name: tasks}
tools:
  - {match: "Bash", classes: [consequential, shell]}
`
	f, err := ParseFile("tasks.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := Compile([]*File{f})
	if err != nil {
		t.Fatal(err)
	}
	announce := func(id string) map[string]any {
		return map[string]any{"value": "Command running in background with ID: " + id + ". Output is being written to: /tmp/claude-1000/x/tasks/" + id + ".output"}
	}
	sess := &turnstate.Session{SessionID: "s"}
	result := func(tool string, outputs ...any) {
		evalOn(t, rs, sess, "toolCallResult", map[string]any{"tool": map[string]any{"name": tool}, "exit_status": "success", "outputs": outputs}).rememberTasks()
	}
	result("WebFetch", announce("bweb1"))
	result("Bash", announce("b1"), announce("b2"))
	if !slices.Equal(sess.Tasks, []string{"b1"}) {
		t.Fatalf("tasks %q, want only the shell's first", sess.Tasks)
	}
	for i := range 2 * turnstate.MaxTasks {
		result("Bash", announce(fmt.Sprintf("t%d", i)))
	}
	if len(sess.Tasks) != turnstate.MaxTasks || sess.Tasks[len(sess.Tasks)-1] != fmt.Sprintf("t%d", 2*turnstate.MaxTasks-1) {
		t.Fatalf("tasks %q: want the %d newest", sess.Tasks, turnstate.MaxTasks)
	}
}

// At a subagent's stop its parent takes over the sources it holds, with
// the label set whatever the pack's sources make of the stop; not those
// the parent let go, nor a session's it did not spawn, nor a denied
// spawn's.
func TestAdoptHolds(t *testing.T) {
	rs := compileHeld(t)
	child := func(parent string) *turnstate.Session {
		return &turnstate.Session{SessionID: "child", Parent: &turnstate.ParentLink{SessionID: parent},
			Held: []turnstate.HeldSource{{Label: "untrusted_content", Source: "shell-fetch", Tool: "Monitor", RequestID: "m1", Handles: []string{"bmon7x"}}}}
	}
	for _, tc := range []struct {
		name    string
		child   *turnstate.Session
		outcome string
		letGo   []string
		adopts  bool
	}{
		{"its child's", child("parent"), "completed", nil, true},
		{"another session's child", child("someone-else"), "completed", nil, false},
		{"a source the parent let go", child("parent"), "completed", []string{"m1"}, false},
		{"a denied spawn", child("parent"), "denied_at_spawn", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sess := &turnstate.Session{SessionID: "parent", LetGo: tc.letGo}
			e := evalOn(t, rs, sess, "subagentStop", map[string]any{"subagent_session_id": "child", "outcome": tc.outcome})
			e.in.Subagent = tc.child
			e.adoptHolds()
			_, set := sess.Taints["untrusted_content"]
			if isHeld(sess, "untrusted_content") != tc.adopts || set != tc.adopts {
				t.Errorf("held %v, label set %v; want %v: %+v", isHeld(sess, "untrusted_content"), set, tc.adopts, sess.Held)
			}
		})
	}
}

// At a subagent's stop its parent takes over the background tasks it
// announced and the files it remembers (a background fetch's task id and
// output file, a page a fetch saved): the parent reads them later. Not a
// session's it did not spawn, nor a denied spawn's; within the parent's
// bounds, the subagent's newest kept; a second stop changes nothing.
func TestAdoptWork(t *testing.T) {
	rs := compileHeld(t)
	bg := func(path string) turnstate.FileTaint {
		return turnstate.FileTaint{Label: "untrusted_content", Path: path, Source: "shell-fetch" + backgroundSuffix}
	}
	saved := turnstate.FileTaint{Label: "untrusted_content", Path: "notes/setup.md", Source: "shell-fetch"}
	child := func(parent string) *turnstate.Session {
		return &turnstate.Session{SessionID: "child", Parent: &turnstate.ParentLink{SessionID: parent},
			Tasks: []string{"bt2kelt7i"}, FileTaints: []turnstate.FileTaint{bg("bt2kelt7i"), bg("bt2kelt7i.output"), saved}}
	}
	stop := func(sess, c *turnstate.Session, outcome string) {
		e := evalOn(t, rs, sess, "subagentStop", map[string]any{"subagent_session_id": "child", "outcome": outcome})
		e.in.Subagent = c
		e.adoptWork()
	}
	own := turnstate.FileTaint{Label: "untrusted_content", Path: "own.sh", Source: "shell-fetch"}
	for _, tc := range []struct {
		name    string
		child   *turnstate.Session
		outcome string
		adopts  bool
	}{
		{"its child's", child("parent"), "completed", true},
		{"another session's child", child("someone-else"), "completed", false},
		{"a denied spawn", child("parent"), "denied_at_spawn", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sess := &turnstate.Session{SessionID: "parent", Tasks: []string{"bown"}, FileTaints: []turnstate.FileTaint{own}}
			stop(sess, tc.child, tc.outcome)
			wantTasks, wantFiles := []string{"bown"}, []turnstate.FileTaint{own}
			if tc.adopts {
				wantTasks = append(wantTasks, tc.child.Tasks...)
				wantFiles = append(wantFiles, tc.child.FileTaints...)
			}
			if !slices.Equal(sess.Tasks, wantTasks) || !slices.Equal(sess.FileTaints, wantFiles) {
				t.Fatalf("tasks %q, files %+v; want %q, %+v", sess.Tasks, sess.FileTaints, wantTasks, wantFiles)
			}
			if !tc.adopts {
				return
			}
			stop(sess, tc.child, tc.outcome) // the subagent resumed and stopped again
			if !slices.Equal(sess.Tasks, wantTasks) || !slices.Equal(sess.FileTaints, wantFiles) {
				t.Errorf("after a second stop: tasks %q, files %+v; want %q, %+v", sess.Tasks, sess.FileTaints, wantTasks, wantFiles)
			}
		})
	}

	t.Run("bounded", func(t *testing.T) {
		sess := &turnstate.Session{SessionID: "parent"}
		for i := range turnstate.MaxTasks {
			sess.Tasks = append(sess.Tasks, fmt.Sprintf("p%d", i))
		}
		for i := range turnstate.MaxFileTaints {
			sess.FileTaints = append(sess.FileTaints, turnstate.FileTaint{Label: "untrusted_content", Path: fmt.Sprintf("p%d.sh", i), Source: "shell-fetch"})
		}
		c := child("parent")
		c.Tasks, c.FileTaints = nil, nil
		for i := range turnstate.MaxTasks + 2 {
			c.Tasks = append(c.Tasks, fmt.Sprintf("c%d", i))
			c.FileTaints = append(c.FileTaints, bg(fmt.Sprintf("c%d", i)))
		}
		stop(sess, c, "completed")
		if len(sess.Tasks) != turnstate.MaxTasks || sess.Tasks[0] != "c2" || sess.Tasks[len(sess.Tasks)-1] != fmt.Sprintf("c%d", turnstate.MaxTasks+1) {
			t.Errorf("tasks %q: want the subagent's %d newest", sess.Tasks, turnstate.MaxTasks)
		}
		n := 0
		for _, f := range sess.FileTaints {
			if background(f) {
				n++
			}
		}
		last := sess.FileTaints[len(sess.FileTaints)-1]
		if len(sess.FileTaints) != turnstate.MaxFileTaints || n != maxBackgroundFiles || last.Path != fmt.Sprintf("c%d", turnstate.MaxTasks+1) {
			t.Errorf("files %+v: want %d, the subagent's %d newest background ones last", sess.FileTaints, turnstate.MaxFileTaints, maxBackgroundFiles)
		}
	})
}
