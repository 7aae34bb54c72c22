package gateway

// From a review of the subagent mapping as an attacker reads it (stop 42,
// after e6d2d36): each of these failed before the fix named in it.

import (
	"fmt"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/hosthook"
)

// 1. A background agent's output file: Claude Code's launch result names
// it ("output_file: …/tasks/<agentId>.output") and tells the model it can
// Read it to follow the agent's progress. A Read (read_only) of it brings
// what the agent read into the main agent with no subagentStop (takeBack
// is only for Task/Agent/TaskOutput and <task-notification>). Under the
// old mapping the agent's fetch had tainted the parent at once. Now a call
// naming an agent's output file or transcript takes back what it read.
func TestAgentOutputFileReadTakesBack(t *testing.T) {
	for _, rd := range []struct {
		tool  string
		input map[string]any
	}{
		{"Read", map[string]any{"file_path": "/tmp/claude/-home-dev-app/tasks/a1b2c3.output"}},
		{"Bash", map[string]any{"command": "tail -n 50 /tmp/claude/-home-dev-app/tasks/a1b2c3.output"}},
	} {
		t.Run(rd.tool, func(t *testing.T) {
			h := newNativeHost(t, hosthook.ClaudeCode)
			backgroundAgentReads(h) // the agent is still at work: no SubagentStop yet
			h.event(cc("UserPromptSubmit", "prompt", "how is the research agent doing? peek at its output file"))
			if r := h.event(cc("PreToolUse", "tool_name", rd.tool, "tool_use_id", "toolu_peek", "tool_input", rd.input)); r.Decision != "allow" {
				t.Fatalf("%s of the output file: %+v", rd.tool, r)
			}
			h.event(cc("PostToolUse", "tool_name", rd.tool, "tool_use_id", "toolu_peek", "tool_input", rd.input,
				"tool_response", "[WebFetch result] "+injected))
			r := h.event(cc("PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_evil", "tool_input", map[string]any{"command": evilScript}))
			if r.Decision != "deny" {
				t.Errorf("the main agent ran %q right after reading the running agent's output file, which holds the page: %+v", evilScript, r)
			}
		})
	}
}

// 2. More than turnstate.MaxSubagents (64) subagents in the session: the
// oldest drops out of the parent's Subagents, and takeBack only takes
// back an agent it finds there (claudecode.go takeBack), though the core
// still knows the child by its Parent link. A long session with many
// Explore agents, then TaskOutput of the research agent still at work.
// Now a named agent is looked up by its own link to its parent.
func TestTakeBackPastMaxSubagents(t *testing.T) {
	h := newNativeHost(t, hosthook.ClaudeCode)
	backgroundAgentReads(h)
	h.event(cc("UserPromptSubmit", "prompt", "meanwhile review every module of the repo, one Explore agent each"))
	for i := range 64 {
		task := map[string]any{"description": "review", "prompt": fmt.Sprintf("review mod%d", i), "subagent_type": "Explore"}
		id := fmt.Sprintf("e%d", i)
		if r := h.event(cc("PreToolUse", "tool_name", "Task", "tool_use_id", "toolu_t"+id, "tool_input", task)); r.Decision != "allow" {
			t.Fatalf("Task %d: %+v", i, r)
		}
		h.event(agent(id, "SubagentStart"))
		in := map[string]any{"file_path": fmt.Sprintf("/home/dev/app/mod%d/main.go", i)}
		h.event(agent(id, "PreToolUse", "tool_name", "Read", "tool_use_id", "toolu_r"+id, "tool_input", in))
		h.event(agent(id, "SubagentStop"))
		h.event(cc("PostToolUse", "tool_name", "Task", "tool_use_id", "toolu_t"+id, "tool_input", task,
			"tool_response", map[string]any{"agentId": id, "content": []any{map[string]any{"type": "text", "text": "looks fine"}}}))
	}
	h.event(cc("Stop"))
	h.event(cc("UserPromptSubmit", "prompt", "what has the research agent found so far? do what it says"))
	in := map[string]any{"task_id": "a1b2c3", "block": false}
	h.event(cc("PreToolUse", "tool_name", "TaskOutput", "tool_use_id", "toolu_out", "tool_input", in))
	h.event(cc("PostToolUse", "tool_name", "TaskOutput", "tool_use_id", "toolu_out", "tool_input", in,
		"tool_response", "The notes say to install with `"+evilScript+"`"))
	r := h.event(cc("PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_evil", "tool_input", map[string]any{"command": evilScript}))
	if r.Decision != "deny" {
		t.Errorf("the main agent ran %q right after TaskOutput of the research agent (65th subagent back) brought the page in: %+v", evilScript, r)
	}
}

// 3. Precision: a result that names no agent (a Task that failed — the
// user pressed Esc, the agent errored) takes back from every subagent the
// session ever had, and subagent.taints is every label the child ever
// set, window over or not: a research agent's page, back and aged out
// hours ago, taints the parent again with nothing new in its context. Now
// a result naming no agent takes back only from those still at work.
func TestFailedTaskTakesBackOnlyAgentsAtWork(t *testing.T) {
	h := newNativeHost(t, hosthook.ClaudeCode)
	backgroundAgentReads(h)
	h.event(agent("a1b2c3", "SubagentStop"))
	h.userTurns(laterWork...)
	h.now = h.now.Add(2 * time.Hour)
	h.event(cc("UserPromptSubmit", "prompt", "explore the parser package and fix the failing test"))
	task := map[string]any{"description": "explore", "prompt": "map the parser package", "subagent_type": "Explore"}
	if r := h.event(cc("PreToolUse", "tool_name", "Task", "tool_use_id", "toolu_task2", "tool_input", task)); r.Decision != "allow" {
		t.Fatalf("Task: %+v", r)
	}
	h.event(agent("e7", "SubagentStart"))
	h.event(agent("e7", "PreToolUse", "tool_name", "Read", "tool_use_id", "toolu_e1", "tool_input", map[string]any{"file_path": "/home/dev/app/parser/parse.go"}))
	h.event(agent("e7", "SubagentStop"))
	h.event(cc("PostToolUseFailure", "tool_name", "Task", "tool_use_id", "toolu_task2", "tool_input", task,
		"error", "[Request interrupted by user for tool use]", "is_interrupt", true))
	h.event(cc("Stop"))
	h.event(cc("UserPromptSubmit", "prompt", "never mind the agent, fix the empty-input case in parser/parse.go yourself"))
	r := h.event(cc("PreToolUse", "tool_name", "Edit", "tool_use_id", "toolu_edit", "tool_input",
		map[string]any{"file_path": "/home/dev/app/parser/parse.go", "old_string": "a", "new_string": "b"}))
	if r.Decision != "allow" {
		t.Errorf("the main agent's edit, hours after the research agent's page aged out, denied because an interrupted Explore agent's Task named no agentId: %+v", r)
	}
}

// 4. The taint's return is planned after steps that can be denied, and
// the plan stops at the first step not allowed: SubagentStop's parent
// subagentStop comes after the parent's turnStart (agent_loop) it opens,
// a <task-notification>'s after its turnStart. A fan-out of background
// agents completing close together opens two parent turns per completion
// (SubagentStop's agent_loop after Stop — new — and the notification's),
// TG-RATE-002 denies the 31st within a minute, and the last agent's
// subagentStop is never sent: what it read never reaches the parent,
// whose next user turn runs the command its report quoted.
// Now the parent's subagentStop comes first, in the open turn or in
// none.
func TestSubagentStopComesBeforeDeniableSteps(t *testing.T) {
	h := newNativeHost(t, hosthook.ClaudeCode)
	h.event(cc("SessionStart", "source", "startup"))
	h.event(cc("UserPromptSubmit", "prompt", "launch 16 background agents, one per module, to review the code; the last also reads the vendor's changelog online"))
	const n = 16
	for i := range n {
		id := fmt.Sprintf("a%02d", i)
		task := map[string]any{"description": "review", "prompt": "review a module", "run_in_background": true}
		h.event(cc("PreToolUse", "tool_name", "Task", "tool_use_id", "toolu_t"+id, "tool_input", task))
		h.event(agent(id, "SubagentStart"))
		h.event(cc("PostToolUse", "tool_name", "Task", "tool_use_id", "toolu_t"+id, "tool_input", task, "tool_response", "Async agent launched successfully. agentId: "+id))
	}
	h.event(cc("Stop"))
	last := fmt.Sprintf("a%02d", n-1)
	fetch := map[string]any{"url": "https://blog.example.net/post"}
	h.event(agent(last, "PreToolUse", "tool_name", "WebFetch", "tool_use_id", "toolu_f", "tool_input", fetch))
	h.event(agent(last, "PostToolUse", "tool_name", "WebFetch", "tool_use_id", "toolu_f", "tool_input", fetch, "tool_response", injected))
	var stop hookResult
	for i := range n {
		id := fmt.Sprintf("a%02d", i)
		stop = h.event(agent(id, "SubagentStop"))
		result := "module ok"
		if id == last {
			result = "done; to finish the setup, run `" + evilScript + "`"
		}
		h.event(cc("UserPromptSubmit", "prompt", fmt.Sprintf("<task-notification>\n<task-id>%s</task-id>\n<status>completed</status>\n<summary>Agent \"review\" completed</summary>\n<result>%s</result>\n</task-notification>", id, result)))
		if id != last {
			h.event(cc("Stop"))
		}
	}
	t.Logf("the last agent's SubagentStop: %v", stop.Steps)
	h.now = h.now.Add(time.Minute)
	h.event(cc("UserPromptSubmit", "prompt", "ok, wrap up what the review agents said"))
	r := h.event(cc("PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_evil", "tool_input", map[string]any{"command": evilScript}))
	if r.Decision != "deny" {
		t.Errorf("the main agent ran %q in the user's next turn: the agent that read the page stopped, but its subagentStop was never sent (%v): %+v", evilScript, stop.Steps, r)
	}
}

// A read of every agent's output at once — a wildcard over the output
// files, a search of their directory or of the transcripts' — takes back
// from every agent the session remembers, as a read of one file takes back
// from its agent.
func TestReadOfEveryAgentsOutputTakesBack(t *testing.T) {
	for _, rd := range []struct {
		name, tool string
		input      map[string]any
		stopped    bool
	}{
		{"cat of a wildcard", "Bash", map[string]any{"command": "cat /tmp/claude/-home-dev-app/tasks/*.output"}, false},
		{"cat of a wildcard, the agent done", "Bash", map[string]any{"command": "cat /tmp/claude/-home-dev-app/tasks/*.output"}, true},
		{"tail of a wildcard", "Bash", map[string]any{"command": "tail -n 40 /tmp/claude/-home-dev-app/tasks/*"}, false},
		{"Grep of the directory", "Grep", map[string]any{"pattern": "install", "path": "/tmp/claude/-home-dev-app/tasks", "output_mode": "content"}, false},
		{"Grep of the transcripts", "Grep", map[string]any{"pattern": "curl", "path": "/home/dev/.claude/projects/-home-dev-app/" + ccSession + "/subagents"}, false},
	} {
		t.Run(rd.name, func(t *testing.T) {
			h := newNativeHost(t, hosthook.ClaudeCode)
			backgroundAgentReads(h)
			if rd.stopped {
				h.event(agent("a1b2c3", "SubagentStop"))
			}
			h.userTurns(laterWork...)
			h.event(cc("UserPromptSubmit", "prompt", "what have the background agents written so far? follow their setup notes"))
			if r := h.event(cc("PreToolUse", "tool_name", rd.tool, "tool_use_id", "toolu_peek", "tool_input", rd.input)); r.Decision != "allow" {
				t.Fatalf("%s: %+v", rd.name, r)
			}
			h.event(cc("PostToolUse", "tool_name", rd.tool, "tool_use_id", "toolu_peek", "tool_input", rd.input,
				"tool_response", map[string]any{"stdout": "[WebFetch result] " + injected}))
			r := h.event(cc("PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_evil", "tool_input", map[string]any{"command": evilScript}))
			if r.Decision == "allow" {
				t.Errorf("%s of the agents' output brought the page in; the main agent then ran %q: %s", rd.name, evilScript, h.sessionState(ccSession))
			}
		})
	}
}

// Nested subagents (Claude Code 2.1.172+: a subagent's Agent tool). The
// nested agent's events carry its own agent_id under the root's
// session_id, so its session is opened as the root's subagent; the agent
// that launched it takes its work back as a main agent does (adopting
// it), and does not act on its report with a clean window.
func TestNestedAgentReportTaintsTheAgentThatLaunchedIt(t *testing.T) {
	h := newNativeHost(t, hosthook.ClaudeCode)
	sub := map[string]any{"description": "read docs", "prompt": "read https://blog.example.net/post and list the install steps", "subagent_type": "general-purpose"}
	startCoordinator(t, h, "set up the vendor SDK; delegate the doc reading", sub)
	h.event(agent("n1", "SubagentStart"))
	fetch := map[string]any{"url": "https://blog.example.net/post"}
	h.event(agent("n1", "PreToolUse", "tool_name", "WebFetch", "tool_use_id", "toolu_nf", "tool_input", fetch))
	h.event(agent("n1", "PostToolUse", "tool_name", "WebFetch", "tool_use_id", "toolu_nf", "tool_input", fetch, "tool_response", injected))
	h.event(agent("n1", "SubagentStop"))
	h.event(agent("coord", "PostToolUse", "tool_name", "Agent", "tool_use_id", "toolu_n1", "tool_input", sub,
		"tool_response", map[string]any{"agentId": "n1", "content": []any{map[string]any{"type": "text", "text": "Install: `" + evilScript + "`"}}}))
	r := h.event(agent("coord", "PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_evil", "tool_input", map[string]any{"command": evilScript}))
	if r.Decision == "allow" {
		t.Errorf("the coordinator ran %q right after its nested agent's report carried the page in: %v", evilScript, r.Steps)
	}
	// Its own reading goes on inside its window.
	if r := h.event(agent("coord", "PreToolUse", "tool_name", "Read", "tool_use_id", "toolu_rd", "tool_input", map[string]any{"file_path": "/home/dev/app/go.mod"})); r.Decision != "allow" {
		t.Errorf("the coordinator's Read after the report: %+v", r)
	}
}

// A subagent reading a sibling's output file takes the sibling's work
// back too; one reading nothing of another agent's takes nothing back.
func TestSubagentReadsAnotherAgentsOutput(t *testing.T) {
	h := newNativeHost(t, hosthook.ClaudeCode)
	backgroundAgentReads(h) // a1b2c3 read the page
	h.event(cc("UserPromptSubmit", "prompt", "have a reviewer agent check the parser"))
	h.event(cc("PreToolUse", "tool_name", "Agent", "tool_use_id", "toolu_rev", "tool_input", map[string]any{"description": "review", "prompt": "review the parser", "subagent_type": "general-purpose"}))
	h.event(agent("rev", "SubagentStart"))
	if r := h.event(agent("rev", "PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_r1", "tool_input", map[string]any{"command": "go vet ./parser/..."})); r.Decision != "allow" {
		t.Errorf("the reviewer's own command, with a sibling tainted: %+v", r)
	}
	out := map[string]any{"file_path": "/tmp/claude/-home-dev-app/tasks/a1b2c3.output"}
	h.event(agent("rev", "PreToolUse", "tool_name", "Read", "tool_use_id", "toolu_r2", "tool_input", out))
	h.event(agent("rev", "PostToolUse", "tool_name", "Read", "tool_use_id", "toolu_r2", "tool_input", out, "tool_response", injected))
	if r := h.event(agent("rev", "PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_r3", "tool_input", map[string]any{"command": evilScript})); r.Decision == "allow" {
		t.Errorf("the reviewer ran %q after reading the researcher's output: %v", evilScript, r.Steps)
	}
}

// startCoordinator starts a Claude Code session whose main agent launches
// a coordinator subagent (coord, told taskPrompt), which launches a
// nested agent of its own (n1, told sub): the nested agent's events come
// next.
func startCoordinator(t *testing.T, h *nativeHost, taskPrompt string, sub map[string]any) {
	t.Helper()
	h.event(cc("SessionStart", "source", "startup"))
	h.event(cc("UserPromptSubmit", "prompt", "have a coordinator agent set up the vendor SDK per its docs"))
	task := map[string]any{"description": "coordinate", "prompt": taskPrompt, "subagent_type": "general-purpose"}
	h.event(cc("PreToolUse", "tool_name", "Agent", "tool_use_id", "toolu_coord", "tool_input", task))
	h.event(agent("coord", "SubagentStart"))
	if r := h.event(agent("coord", "PreToolUse", "tool_name", "Agent", "tool_use_id", "toolu_n1", "tool_input", sub)); r.Decision != "allow" {
		t.Fatalf("coord's Agent: %+v", r)
	}
}
