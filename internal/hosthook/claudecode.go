// Package hosthook speaks the hook protocols of agent hosts — Claude
// Code's, Codex's and Cursor's — so that a host can call turnguard with its own hook
// payloads and read its own answers, with no ACS adapter installed: a
// host's event becomes the ACS steps the host's ACS adapter
// (GenAI-Security-Project/agent-control-standard, adapters/) maps it to,
// and the decision on them becomes the answer the host acts on.
//
// The package reads no clock, randomness or network: the caller gives it
// what the session's state says and fresh request ids, and sends the
// steps.
package hosthook

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/turnguard/turnguard/internal/core/policy"
)

// Host names a host protocol (the path segment of its endpoint).
type Host string

// The hosts whose hook protocols are spoken.
const (
	// ClaudeCode is Claude Code's hook protocol (command and http hooks).
	ClaudeCode Host = "claude-code"
	// Codex is the Codex CLI's hook protocol (command hooks), which
	// follows Claude Code's.
	Codex Host = "codex"
	// Cursor is Cursor's hook protocol (command hooks, .cursor/hooks.json).
	Cursor Host = "cursor"
)

// ParseHost returns the host a name (an endpoint's path segment) names.
func ParseHost(name string) (Host, bool) {
	switch h := Host(name); h {
	case ClaudeCode, Codex, Cursor:
		return h, true
	}
	return "", false
}

// Claude Code's hook events (hook_event_name).
const (
	SessionStart       = "SessionStart"
	UserPromptSubmit   = "UserPromptSubmit"
	PreToolUse         = "PreToolUse"
	PostToolUse        = "PostToolUse"
	PostToolUseFailure = "PostToolUseFailure"
	Stop               = "Stop"
	SubagentStart      = "SubagentStart"
	SubagentStop       = "SubagentStop"
	SessionEnd         = "SessionEnd"
	PreCompact         = "PreCompact"
	Notification       = "Notification"
)

// Methods are the ACS methods the steps of a host's events use: what a
// session using its native endpoint negotiates.
func Methods(h Host) []string {
	if h == Codex {
		// No sessionStart, nor sessionEnd: Codex's sessions start with
		// their first call.
		return []string{"steps/turnStart", "steps/turnEnd", "steps/userMessage", "steps/toolCallRequest", "steps/toolCallResult"}
	}
	methods := []string{
		"steps/sessionStart", "steps/sessionEnd", "steps/turnStart", "steps/turnEnd", "steps/userMessage",
		"steps/toolCallRequest", "steps/toolCallResult", "steps/agentResponse",
	}
	if h == ClaudeCode {
		// A subagent's events go to a session of its own (SubagentSession).
		methods = append(methods, "steps/subagentStart", "steps/subagentStop")
	}
	return methods
}

// MaxOutputBytes bounds a tool's output as a toolCallResult carries it:
// a longer one (a Read of a large file) is cut to its first MaxOutputBytes
// as JSON text, so that its result is still decided — the tool's class
// taints as it would — rather than refused for its size and blocked.
// Arguments are never cut: a call too large to send is refused (fail
// closed).
const MaxOutputBytes = 128 << 10

// MaxIDBytes bounds the ids an event carries (session_id, tool_use_id),
// and MaxNameBytes its event and tool names.
const (
	MaxIDBytes   = 256
	MaxNameBytes = 256
)

// Event is one hook invocation, as read from its JSON input.
type Event struct {
	Host Host
	Name string // hook_event_name
	// SessionID is Claude Code's session_id, and Session the ACS session
	// id it stands for: the same when it is a UUID (it is, in Claude
	// Code), else a UUID derived from it.
	SessionID string
	Session   string
	Cwd       string
	Tool      string
	ToolInput map[string]any
	ToolUseID string
	// TurnID is the host's own turn id (Codex's turn_id).
	TurnID string
	// Subagent is the hook's agent_id: the subagent whose event this is
	// (Claude Code sends it on the events fired inside a subagent, and on
	// SubagentStart and SubagentStop); "" for the main agent's. AgentType
	// is its agent_type.
	Subagent  string
	AgentType string
	// Response is the tool's output (tool_response), Error a failed
	// call's error.
	Response    any
	HasResponse bool
	Error       string
	Prompt      string
	Message     string
	Source      string
	Model       string
	Reason      string
	// PermissionMode is Claude Code's permission_mode: whether a person
	// answers the permission prompt an ask raises (askedNobody).
	PermissionMode string
	DurationMS     *int64
	// fields is the whole input, for what a host's own events carry
	// (Cursor's).
	fields map[string]any
}

// ErrNotAnEvent is wrapped by every error of Parse.
var ErrNotAnEvent = errors.New("not a hook event")

// Parse reads a host's hook input.
func Parse(host Host, body []byte) (*Event, error) {
	v, err := decodeOne(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotAnEvent, err)
	}
	m, _ := v.(map[string]any)
	if m == nil {
		return nil, fmt.Errorf("%w: not a JSON object", ErrNotAnEvent)
	}
	str := func(key string, limit int) (string, error) {
		v, ok := m[key]
		if !ok || v == nil {
			return "", nil
		}
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("%w: %s is not a string", ErrNotAnEvent, key)
		}
		if limit > 0 && len(s) > limit {
			return "", fmt.Errorf("%w: %s is longer than %d bytes", ErrNotAnEvent, key, limit)
		}
		return s, nil
	}
	e := &Event{Host: host, fields: m}
	fields := []struct {
		key   string
		limit int
		to    *string
	}{
		{"hook_event_name", MaxNameBytes, &e.Name}, {"session_id", MaxIDBytes, &e.SessionID}, {"cwd", 0, &e.Cwd},
		{"tool_name", MaxNameBytes, &e.Tool}, {"tool_use_id", MaxIDBytes, &e.ToolUseID}, {"prompt", 0, &e.Prompt},
		{"message", 0, &e.Message}, {"source", MaxNameBytes, &e.Source}, {"reason", MaxNameBytes, &e.Reason},
		{"turn_id", MaxIDBytes, &e.TurnID}, {"agent_id", MaxIDBytes, &e.Subagent}, {"agent_type", MaxNameBytes, &e.AgentType},
		{"permission_mode", MaxNameBytes, &e.PermissionMode},
	}
	for _, f := range fields {
		if *f.to, err = str(f.key, f.limit); err != nil {
			return nil, err
		}
	}
	// model is a string in older versions and an object in newer ones.
	switch v := m["model"].(type) {
	case string:
		e.Model = v
	case map[string]any:
		e.Model, _ = v["id"].(string)
	}
	if e.Name == "" {
		return nil, fmt.Errorf("%w: no hook_event_name", ErrNotAnEvent)
	}
	if e.SessionID == "" && host == Cursor {
		// Cursor names its sessions conversation_id.
		if e.SessionID, err = str("conversation_id", MaxIDBytes); err != nil {
			return nil, err
		}
	}
	if e.SessionID == "" {
		return nil, fmt.Errorf("%w: no session_id", ErrNotAnEvent)
	}
	if id, ok := m["tool_call_id"].(string); host == Cursor && e.ToolUseID == "" && ok && len(id) <= MaxIDBytes {
		// Cursor names some calls by tool_call_id; one too long to be an
		// id names nothing.
		e.ToolUseID = id
	}
	if e.Cwd == "" {
		// Cursor's workspace_roots: the first is the workspace.
		if roots, ok := m["workspace_roots"].([]any); ok && len(roots) > 0 {
			e.Cwd, _ = roots[0].(string)
		}
	}
	e.Session = sessionUUID(host, e.SessionID)
	if v, ok := m["tool_input"]; ok && v != nil {
		in, ok := v.(map[string]any)
		_, text := v.(string)
		switch {
		case ok:
			e.ToolInput = in
		case host == Cursor && text:
			// Cursor's MCP hooks send their parameters as JSON text.
		default:
			return nil, fmt.Errorf("%w: tool_input is not an object", ErrNotAnEvent)
		}
	}
	if v, ok := m["tool_response"]; ok {
		e.Response, e.HasResponse = v, true
	} else if v, ok := m["tool_output"]; ok {
		e.Response, e.HasResponse = v, true
	}
	switch v := m["error"].(type) {
	case string:
		e.Error = v
	case nil:
	default:
		raw, _ := json.Marshal(v)
		e.Error = string(raw)
	}
	if n, ok := m["duration_ms"].(json.Number); ok {
		if d, err := n.Int64(); err == nil && d >= 0 {
			e.DurationMS = &d
		} else if f, err := n.Float64(); err == nil && f >= 0 && f < 1e15 {
			d := int64(f)
			e.DurationMS = &d
		}
	}
	toolEvent := e.Name == PreToolUse || e.Name == PostToolUse || e.Name == PostToolUseFailure
	if host == Cursor {
		toolEvent = e.Name == CursorPreToolUse || e.Name == CursorPostToolUse || e.Name == CursorPostToolUseFailure ||
			e.Name == CursorBeforeMCPExecution || e.Name == CursorAfterMCPExecution
	}
	if toolEvent && e.Tool == "" {
		return nil, fmt.Errorf("%w: %s without tool_name", ErrNotAnEvent, e.Name)
	}
	if host == Cursor {
		e.Tool = cursorToolName(e.Name, e.Tool)
	}
	if host == Codex && (e.Name == PreToolUse || e.Name == PostToolUse) && (e.TurnID == "" || e.ToolUseID == "") {
		// As the ACS Codex adapter: no identity is invented.
		return nil, fmt.Errorf("%w: Codex %s without turn_id or tool_use_id", ErrNotAnEvent, e.Name)
	}
	return e, nil
}

// decodeOne decodes exactly one JSON value, its numbers as json.Number
// (an id or a duration keeps its digits).
func decodeOne(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// sessionUUID is the ACS session id of a host's session id: itself when
// it is a UUID, else one derived from it.
func sessionUUID(host Host, id string) string {
	if u, err := uuid.Parse(id); err == nil && len(id) == 36 {
		return u.String()
	}
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte(string(host)+":session:"+id)).String()
}

// AgentID is the agent id the host's ACS adapter derives when ACS_AGENT_ID
// is unset: <host>:<the first 8 hex digits of SHA-256(cwd)>.
func (e *Event) AgentID() string {
	if e.Cwd == "" {
		return string(e.Host) + ":unknown"
	}
	sum := sha256.Sum256([]byte(e.Cwd))
	return string(e.Host) + ":" + hex.EncodeToString(sum[:])[:8]
}

// Session is what a plan needs to know of the session's state.
type Session struct {
	// Started: sessionStart was applied (an ended session too: its
	// further steps are refused session_closed by the core, unless a
	// sessionStart reopens it).
	Started bool
	// Closed: the session ended (sessionEnd).
	Closed bool
	// OpenTurn is the id of the newest open turn, "" when none is open.
	OpenTurn string
	// Declared: the newest open turn was opened by a turnStart, not
	// implicitly by a step naming it (a Codex session that saw
	// UserPromptSubmit: codexPlan).
	Declared bool
	// TurnEnded: a turn of the session has ended. A step that then finds
	// no turn open is the agent going on without a prompt — a Stop hook's
	// continuation directive (Claude Code's decision "block" on Stop,
	// Cursor's followup_message), a background subagent still at work, the
	// agent woken by a background task's completion — and the turn it opens
	// is an agent_loop, which ages no taint window. Not auto_continuation:
	// the event does not say which of these it is, and a host's background
	// agents would run into the pack's limit on consecutive
	// auto-continuations (TG-CONT-001) without any loop.
	TurnEnded bool
	// Subagent is the state of the session of the subagent whose event
	// this is (Event.SubagentSession), when there is one.
	Subagent *Session
	// TakeBack are the sessions of the subagents whose work the event
	// brings into the main agent's context (Event.ReturnedAgents) and
	// whose taint the parent takes back (takeBack): those it names that
	// this session spawned — in its Subagents, or by their own link to it
	// (a session remembers its newest 64) — or, when it names none, those
	// still at work, not every agent the session ever had, but every one
	// it remembers when it reads all their outputs. The caller reads
	// their states to say which. For a subagent's event, they are in the
	// subagent's view (Subagent.TakeBack): an agent it launched (a
	// nested agent, which the hooks make a subagent of the root session)
	// or a sibling whose output it reads.
	TakeBack []string
	// Recipients are, for a subagent's message to another agent
	// (Event.MessagesAgents), the other subagents of the root still at
	// work, whom it may reach beside the main agent: each takes the
	// sender's taint back as the parent does.
	Recipients []AgentTurn
	// GoesOn: the conversation goes on in this session past a /clear
	// (SessionEnd reason "clear"), because something the session started
	// still feeds it — a held source, a background task, a subagent at
	// work — and Claude Code keeps those running into the new
	// conversation. The caller says which (it reads the state) and sends
	// the new conversation's events here; the SessionEnd then ends only
	// the open turn.
	GoesOn bool
}

// AgentTurn is a subagent's session and its open turn ("" for none).
type AgentTurn struct{ Session, OpenTurn string }

// Step is one ACS step to send.
type Step struct {
	Method    string
	RequestID string
	// TurnID is the step's metadata.turn_id; "" for session-level steps.
	TurnID  string
	Payload map[string]any
	// Hook is what the step is for, for logs and errors.
	Hook string
	// Session is the ACS session the step belongs to when it is not the
	// event's own: a subagent's (Event.SubagentSession).
	Session string
}

// SubagentSession is the ACS session of the subagent whose event this is:
// a UUID derived from the session's and the hook's agent_id, "" for an
// event of the main agent, or of a host whose subagents are not mapped
// apart (Cursor). A subagent's calls are decided in its own session: its
// taint window is its own, aged by its own turns rather than by the
// user's prompts to the main agent (a background agent that read a page
// keeps it in its context for as long as it runs). What it read reaches
// a Claude Code parent when it stops (subagentStop), as on the ACS path;
// a Codex child's steps are sent in the root's session too (codexPlan).
func (e *Event) SubagentSession() string {
	if e.Host == Cursor || e.Subagent == "" {
		return ""
	}
	return e.AgentSession(e.Subagent)
}

// AgentSession is the session of the session's subagent agentID.
func (e *Event) AgentSession(agentID string) string {
	ns, err := uuid.Parse(e.Session)
	if err != nil {
		return ""
	}
	return uuid.NewSHA1(ns, []byte(string(e.Host)+":agent:"+agentID)).String()
}

// Plan returns the ACS steps an event stands for, in order, as the ACS
// Claude Code adapter maps them: a prompt opens a turn (turnStart, then
// userMessage), Stop ends it, a tool call is a toolCallRequest and its
// result a toolCallResult (request ids derived from tool_use_id, so the
// result names its request). Where the adapter keeps state on disk, a plan
// reads the session's state instead: a session not yet started gets its
// sessionStart first, a call outside any turn (a host configured without
// UserPromptSubmit) opens one, and a prompt while a turn is still open (a
// Stop never reported) ends that turn first. newID returns a fresh UUID.
//
// Unlike the adapter, which sends a subagent's calls in its parent's
// session, a subagent's events (agent_id) are planned in a session of its
// own (subagentEvent), and an event bringing a subagent's work to the main
// agent takes back what it read (takeBack). Not sent: PreCompact (ACS
// preCompact needs the entries compacted, which the event does not
// carry), and events the adapter does not know.
func (e *Event) Plan(s Session, newID func() string) []Step {
	// A session that ended is not skipped: its further events are sent
	// and refused (session_closed), so a tool call in it is denied — until
	// a SessionStart reopens it with its taints (the core's
	// session_reopened). Skipped, a host resuming an ended conversation
	// under the same id would run unguarded, with what tainted it still in
	// context.
	switch e.Host {
	case Codex:
		return e.codexPlan(s, newID)
	case Cursor:
		return e.cursorPlan(s, newID)
	}
	p := &planner{e: e, s: s, newID: newID}
	if e.SubagentSession() != "" {
		p.subagentEvent()
		return p.steps
	}
	switch e.Name {
	case SessionStart:
		if p.s.Closed {
			// The conversation resumed under its id (claude --resume):
			// a sessionStart reopens the session, which keeps what
			// tainted it — the page it read is back in the context.
			p.s.Started = false
		}
		p.start(e.sessionStartPayload())
	case UserPromptSubmit:
		if origin := peerMessage(e.Prompt); origin != "" {
			p.takeBack()
			p.peerReport(e.Prompt, origin)
			break
		}
		if taskNotification(e.Prompt) {
			p.takeBack()
			p.taskReport(e.Prompt)
			break
		}
		p.prompt(e.Prompt, claudeMentions(e.Prompt, e.Cwd, newID)...)
	case PreToolUse, PostToolUse, PostToolUseFailure:
		p.takeBack()
		p.inTurn()
		p.toolEvent()
	case Stop:
		p.endTurn("completed")
	case SessionEnd:
		if e.Reason == ClearReason && p.s.GoesOn {
			p.endTurn("completed")
			break
		}
		p.end(endReason(e.Reason))
	case Notification:
		p.respond(e.Message)
	}
	return p.steps
}

// toolEvent adds a tool call's request (PreToolUse) or result
// (PostToolUse, PostToolUseFailure) in the open turn.
func (p *planner) toolEvent() {
	e, newID := p.e, p.newID
	switch e.Name {
	case PreToolUse:
		p.add("steps/toolCallRequest", e.callID("tool_use", newID), map[string]any{"tool": map[string]any{"name": e.Tool}, "arguments": wrap(e.ToolInput)})
	case PostToolUse, PostToolUseFailure:
		payload := map[string]any{"tool": map[string]any{"name": e.Tool}}
		if ref := e.toolUseRef(); ref != "" {
			payload["request_id_ref"] = ref
		}
		outputs := []any{}
		status := "success"
		if e.Name == PostToolUseFailure {
			status = "failure"
			if e.Error != "" {
				outputs = append(outputs, map[string]any{"value": bounded(e.Error)})
			}
		}
		if e.HasResponse && e.Response != nil {
			if r, ok := e.Response.(map[string]any); ok && r["interrupted"] == true {
				status = "failure"
			}
			outputs = append(outputs, map[string]any{"value": bounded(e.Response)})
		}
		payload["exit_status"], payload["outputs"] = status, outputs
		if e.DurationMS != nil {
			payload["duration_ms"] = *e.DurationMS
		}
		p.add("steps/toolCallResult", e.callID("tool_result", newID), payload)
	}
}

// agentMessages are Claude Code's tools by which an agent's words reach
// another's context: SendMessage (agent teams, cross-session messaging),
// and the shared task list's TaskCreate and TaskUpdate, whose text the
// agent taking the task up reads.
var agentMessages = map[string]bool{"SendMessage": true, "TaskCreate": true, "TaskUpdate": true}

// MessagesAgents reports whether the event is a subagent's message to
// other agents (agentMessages), whose taint goes with it.
func (e *Event) MessagesAgents() bool {
	return e.Host == ClaudeCode && e.Subagent != "" && (e.Name == PreToolUse || e.Name == PostToolUse) && agentMessages[e.Tool]
}

// writers are Claude Code's tools that write the file they name: what
// their input says is text written, not a path read.
var writers = map[string]bool{"Write": true, "Edit": true, "MultiEdit": true, "NotebookEdit": true}

// agentReports are Claude Code's tools whose result is a subagent's
// report: a foreground agent's (Task, and Agent as later versions name
// it).
var agentReports = map[string]bool{"Task": true, "Agent": true}

var (
	agentIDText = regexp.MustCompile(`agentId:?\s*"?([A-Za-z0-9_-]{1,64})`)
	taskIDTag   = regexp.MustCompile(`<task-id>\s*([A-Za-z0-9_-]{1,64})\s*</task-id>`)
	// agentFile is a background agent's output file (tasks/<id>.output,
	// which its launch result names) or its transcript
	// (subagents/agent-<id>.jsonl).
	agentFile = regexp.MustCompile(`(?:tasks[/\\]([A-Za-z0-9_-]{1,64})\.output|agent-([A-Za-z0-9_-]{1,64})\.jsonl)`)
)

// agentOutputs reports whether a string of a call's input names agents'
// outputs at once: a path into Claude Code's spools (inAgentSpool) that
// is a directory, a wildcard, or an output or transcript file (one of an
// agent named by its id is agentFile's); or a wildcard over output files
// or agents' transcripts anywhere (tasks/*.output, agent-*.jsonl). A
// relative path is read from cwd. A word elsewhere (a commit message's
// "tasks", a project's tasks/main.yml, a project named claude) names none.
func agentOutputs(v, cwd string) bool {
	for _, tok := range strings.FieldsFunc(v, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune("'\"=();|&<>,`", r) }) {
		tok = strings.TrimRight(strings.ReplaceAll(tok, `\`, "/"), "/")
		base := tok[strings.LastIndexByte(tok, '/')+1:]
		glob := strings.ContainsAny(tok, "*?[")
		if glob && (strings.HasSuffix(base, ".output") || strings.HasPrefix(base, "agent-") && strings.HasSuffix(base, ".jsonl")) {
			return true
		}
		if !inAgentSpool(tok, cwd) || !glob && agentFile.MatchString(tok) {
			continue // not a spool's, or one agent's file, named by its id
		}
		if glob || !strings.Contains(base, ".") || strings.HasSuffix(base, ".output") || strings.HasSuffix(base, ".jsonl") ||
			strings.HasPrefix(base, ".claude") {
			return true
		}
	}
	return false
}

// inAgentSpool reports whether a path lies in Claude Code's spools: the
// task outputs under a temporary directory's claude or claude-<uid>
// (/tmp/claude-1000/<project>/tasks/…, /private/tmp, $TMPDIR, macOS'
// /var/folders/…/T, Windows' …\Temp, %TEMP%; a wildcard there,
// /tmp/claude-*), or the transcripts of ~/.claude/projects (.claude
// itself, or its projects). A relative path is read from cwd.
func inAgentSpool(p, cwd string) bool {
	lower := strings.ToLower(p)
	if !strings.HasPrefix(lower, "/") && !strings.HasPrefix(lower, "$") && !strings.HasPrefix(lower, "~") &&
		!strings.HasPrefix(lower, "%") && !(len(lower) > 2 && lower[1] == ':' && lower[2] == '/') && cwd != "" {
		lower = strings.ToLower(strings.ReplaceAll(cwd, `\`, "/")) + "/" + lower
	}
	segs := slices.DeleteFunc(strings.Split(lower, "/"), func(s string) bool { return s == "" || s == "." })
	for i, seg := range segs {
		switch {
		case seg == ".claude" || strings.ContainsAny(seg, "*?[") && globMatches(seg, ".claude"):
			if i == len(segs)-1 || segs[i+1] == "projects" || strings.ContainsAny(segs[i+1], "*?[") {
				return true
			}
		case i > 0 && tempRoot(segs[i-1]) && claudeSpool(seg):
			return true
		}
	}
	return false
}

// tempRoot reports whether a path segment is a temporary directory's
// last (/tmp, /private/tmp, $TMPDIR, /var/folders/…/T, …\Temp, %TEMP%).
func tempRoot(seg string) bool {
	switch seg {
	case "tmp", "t", "temp", "$tmpdir", "${tmpdir}", "%temp%", "%tmp%", "$env:temp", "$env:tmp":
		return true
	}
	return false
}

// claudeSpool reports whether a segment names Claude Code's spool in a
// temporary directory: claude or claude-<uid>, or a wildcard matching
// one (claude-*).
func claudeSpool(seg string) bool {
	if rest, ok := strings.CutPrefix(seg, "claude"); ok && (rest == "" || rest[0] == '-' && len(rest) > 1 && strings.Trim(rest[1:], "0123456789") == "") {
		return true
	}
	if !strings.ContainsAny(seg, "*?[") {
		return false
	}
	return globMatches(seg, "claude") || globMatches(seg, "claude-1000")
}

func globMatches(pattern, name string) bool {
	ok, _ := path.Match(pattern, name)
	return ok
}

// maxReturned bounds the agent ids an event is read for.
const maxReturned = 8

// ReturnScope is whose work a main agent's event brings back
// (Event.ReturnedAgents).
type ReturnScope int

const (
	// ReturnsNone: the event brings no agent's work.
	ReturnsNone ReturnScope = iota
	// ReturnsNamed: the work of the agents it names.
	ReturnsNamed
	// ReturnsRunning: an agent's report that names none (a Task that
	// failed): the agents still at work.
	ReturnsRunning
	// ReturnsAll: every agent's (a wildcard over their output files, a
	// search of their directory).
	ReturnsAll
)

// ReturnedAgents reports whether an agent's event (the main agent's, or a
// subagent's that launched agents of its own) brings a subagent's work
// into its context — a <task-notification>, TaskOutput, a call
// naming an agent's output file or transcript (a Read, a tail) or their
// directory, the result of a Task — with the agent ids it names and whose
// work it is (scope). The caller reads those subagents' states to tell
// the plan which to take back from (Session.TakeBack).
func (e *Event) ReturnedAgents() (ids []string, scope ReturnScope) {
	if e.Host != ClaudeCode {
		return nil, ReturnsNone
	}
	add := func(id string) {
		if id != "" && len(ids) < maxReturned && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	named := func(otherwise ReturnScope) ([]string, ReturnScope) {
		if len(ids) > 0 {
			return ids, ReturnsNamed
		}
		return nil, otherwise
	}
	switch e.Name {
	case UserPromptSubmit:
		if !taskNotification(e.Prompt) {
			return nil, ReturnsNone
		}
		for _, m := range taskIDTag.FindAllStringSubmatch(e.Prompt, maxReturned) {
			add(m[1])
		}
		return named(ReturnsRunning)
	case PreToolUse:
		if e.Tool == "TaskOutput" {
			id, _ := e.ToolInput["task_id"].(string)
			add(id)
		}
		if writers[e.Tool] {
			return nil, ReturnsNone // it writes what it names, reads none
		}
		all := false
		policy.EachString(map[string]any(e.ToolInput), func(v string) {
			for _, m := range agentFile.FindAllStringSubmatch(v, maxReturned) {
				add(m[1] + m[2])
			}
			all = all || agentOutputs(v, e.Cwd)
		})
		if all {
			return nil, ReturnsAll
		}
		return named(ReturnsNone)
	case PostToolUse, PostToolUseFailure:
		if !agentReports[e.Tool] {
			return nil, ReturnsNone
		}
		if r, ok := e.Response.(map[string]any); ok {
			id, _ := r["agentId"].(string)
			add(id)
		}
		if len(ids) == 0 && e.Response != nil {
			text, _ := e.Response.(string)
			if text == "" {
				raw, _ := json.Marshal(e.Response)
				text = string(raw)
			}
			if m := agentIDText.FindStringSubmatch(text); m != nil {
				add(m[1])
			}
		}
		return named(ReturnsRunning)
	}
	return nil, ReturnsNone
}

// takeBack adds the parent's subagentStop for each subagent whose work
// the event brings into the main agent's context (Session.TakeBack), so
// that what the subagent read reaches the parent when its words do,
// whether or not the host sends SubagentStop for it (a configuration
// without it, an agent still at work). Each is sent before the event's
// own steps, in the open turn or in none — not after a step that could
// be denied (a turnStart over the turn rate), which would drop it.
func (p *planner) takeBack() {
	if !p.s.Started {
		return
	}
	for _, c := range p.s.TakeBack {
		p.add("steps/subagentStop", p.newID(), stopOf(c))
	}
}

// stopOf is the payload of a subagentStop taking back what the subagent
// session read: outcome completed, as the take-backs of an agent still at
// work send it too.
func stopOf(session string) map[string]any {
	return map[string]any{"subagent_session_id": session, "outcome": "completed"}
}

// subagentEvent plans an event of a subagent (Claude Code's agent_id):
// its tool calls in the subagent's own session, which the parent's
// subagentStart opens — at the subagent's first event, in the parent's
// open turn (one opened as the agent's own work if none is) — and whose
// turn SubagentStart opens and SubagentStop ends, the parent's
// subagentStop then taking back what the subagent read. Claude Code
// fires the pair once per turn of the subagent: one woken again
// (SendMessage, a resumed agent) opens another turn of the same session,
// as the agent's own work, which ages no window.
func (p *planner) subagentEvent() {
	e := p.e
	view := Session{}
	if p.s.Subagent != nil {
		view = *p.s.Subagent
	}
	c := &planner{e: e, s: view, newID: p.newID, session: e.SubagentSession()}
	if e.Name == SubagentStop {
		if !c.s.Started {
			return // nothing of it was seen: nothing to take back
		}
		// The parent's stop first, in its open turn or in none: a step
		// before it that was denied (a turn opened for it, over the turn
		// rate) would drop it, and what the subagent read with it.
		p.start(p.e.sessionStartPayload())
		p.add("steps/subagentStop", p.newID(), stopOf(c.session))
		c.endTurn("completed")
		p.steps = append(p.steps, c.steps...)
		return
	}
	switch e.Name {
	case SubagentStart, PreToolUse, PostToolUse, PostToolUseFailure:
	default:
		return // nothing a subagent's other events say is sent
	}
	if !c.s.Started {
		p.inTurn()
		p.add("steps/subagentStart", p.newID(), map[string]any{"subagent_session_id": c.session,
			"parent_session_id": e.Session, "parent_step_id": p.s.OpenTurn, "intent_derivation": "derived_from_parent"})
		payload := map[string]any{}
		if e.AgentType != "" {
			payload["platform_context"] = map[string]any{"agent_type": e.AgentType}
		}
		c.start(payload)
		id := c.newID()
		c.steps = append(c.steps, Step{Method: "steps/turnStart", RequestID: id, TurnID: id, Session: c.session, Hook: e.Name,
			Payload: map[string]any{"turn_id": id, "triggered_by": "subagent_return", "parent_turn_id": p.s.OpenTurn}})
		c.s.OpenTurn = id
	}
	c.inTurnAs("agent_loop")
	// What other agents did comes back to it, as to a main agent
	// (takeBack): a nested agent it launched, which the hooks open as the
	// root's (a sibling, whose taint a subagentStop takes back too), or
	// a sibling whose output it reads.
	c.takeBack()
	if e.Name != SubagentStart {
		c.toolEvent()
	}
	p.steps = append(p.steps, c.steps...)
	if e.MessagesAgents() {
		// A message it sends reaches the main agent's context (or a
		// teammate's) with no hook of its own: what it read goes with it,
		// taken back by the parent as its report would be — after its
		// call, which inside its own window is denied, and then nothing
		// is sent; again after its result, should the call have been
		// asked about and approved.
		p.add("steps/subagentStop", p.newID(), stopOf(c.session))
		for _, r := range c.s.Recipients {
			p.steps = append(p.steps, Step{Method: "steps/subagentStop", RequestID: p.newID(), TurnID: r.OpenTurn,
				Payload: stopOf(c.session), Hook: e.Name, Session: r.Session})
		}
	}
}

// planner builds an event's steps over what the session's state says,
// keeping it up to date as the steps start the session or open a turn.
type planner struct {
	e     *Event
	s     Session
	newID func() string
	steps []Step
	// session is the subagent's session the steps belong to, "" for the
	// event's own.
	session string
}

// add appends an in-turn step (or a session-level one outside any turn).
func (p *planner) add(method, id string, payload map[string]any) {
	p.steps = append(p.steps, Step{Method: method, RequestID: id, TurnID: p.s.OpenTurn, Payload: payload, Hook: p.e.Name, Session: p.session})
}

// start starts the session unless it started.
func (p *planner) start(payload map[string]any) {
	if !p.s.Started {
		p.steps = append(p.steps, Step{Method: "steps/sessionStart", RequestID: p.newID(), Payload: payload, Hook: p.e.Name, Session: p.session})
		p.s.Started = true
	}
}

func (p *planner) openTurn(trigger string) {
	id := p.newID()
	p.steps = append(p.steps, Step{Method: "steps/turnStart", RequestID: id, TurnID: id,
		Payload: map[string]any{"turn_id": id, "triggered_by": trigger}, Hook: p.e.Name, Session: p.session})
	p.s.OpenTurn = id
}

// inTurn makes sure the session started and a turn is open: a step that
// finds none opens one — the session's first (a host configured without
// a prompt hook) as a user's, one after a turn ended as the agent's
// continuation (Session.TurnEnded).
func (p *planner) inTurn() {
	trigger := "user_message"
	if p.s.TurnEnded {
		trigger = "agent_loop"
	}
	p.inTurnAs(trigger)
}

// inTurnAs makes sure the session started and a turn is open, opening one
// triggered_by trigger if none is.
func (p *planner) inTurnAs(trigger string) {
	p.start(p.e.sessionStartPayload())
	if p.s.OpenTurn == "" {
		p.openTurn(trigger)
	}
}

// prompt opens a turn with the user's prompt, ending one still open.
func (p *planner) prompt(text string, attached ...any) {
	p.message("user_message", append([]any{map[string]any{"type": "text", "value": text}}, attached...))
}

// message opens a turn triggered_by trigger with a userMessage of content,
// ending a turn still open.
func (p *planner) message(trigger string, content []any) {
	p.start(p.e.sessionStartPayload())
	p.endTurn("completed")
	p.openTurn(trigger)
	p.add("steps/userMessage", p.newID(), map[string]any{"content": content})
}

// taskNotification reports whether a prompt is Claude Code's notice that a
// background task (a shell, a subagent) finished, which it submits as a
// prompt of its own: <task-notification>… (or with attributes), no user
// typed it.
func taskNotification(prompt string) bool {
	rest, ok := strings.CutPrefix(strings.TrimSpace(prompt), "<task-notification")
	return ok && (strings.HasPrefix(rest, ">") || rest != "" && strings.ContainsAny(rest[:1], " \t\r\n"))
}

// peerTags are the wrappers in which Claude Code submits, through
// UserPromptSubmit, a message nobody typed into this session, and the ACS
// origin of what they hold: another session's (cross-session messaging),
// an agent's or a teammate's message (SendMessage), a channel's (a chat
// bridge: whoever writes in the chat).
var peerTags = []struct{ tag, origin string }{
	{"<cross-session-message", "a2a_inbound"},
	{"<agent-message", "a2a_inbound"},
	{"<teammate-message", "a2a_inbound"},
	{"<channel source=", "external"},
	{"<channel\tsource=", "external"},
	{"<channel\nsource=", "external"},
}

// peerMessage is the ACS origin of a prompt that holds another agent's,
// session's or channel's message, "" for one that holds none. Anywhere in
// the prompt, not only first (Claude Code puts a line before some, and
// may batch what arrived while the agent worked): the whole prompt is
// then taken for the peer's, so a user who types such a tag is only judged
// more strictly.
func peerMessage(prompt string) string {
	for _, p := range peerTags {
		if strings.Contains(prompt, p.tag) {
			return p.origin
		}
	}
	return ""
}

// peerReport opens the turn a peer's or a channel's message wakes the
// agent for — an external_event, no user's message — with the message
// labelled with its origin (ACS §7.2: a2a_inbound, external), untrusted:
// the command or the address it quotes is what someone else wrote, not
// what the user typed, and the session is tainted as by a page.
func (p *planner) peerReport(text, origin string) {
	p.message("external_event", []any{map[string]any{"type": "text", "value": text,
		"provenance": map[string]any{"provenance_id": p.newID(), "origin": origin}}})
}

// taskReport opens the turn a background task's notice wakes the agent
// for — a subagent_return, which ages no taint window — with the notice
// as what the agent's own work produced (provenance agent_generated), not
// a user's words: a subagent's report quoted there is not a command the
// user typed.
func (p *planner) taskReport(text string) {
	p.message("subagent_return", []any{map[string]any{"type": "text", "value": text,
		"provenance": map[string]any{"provenance_id": p.newID(), "origin": "agent_generated"}}})
}

// endTurn ends the open turn, if any.
func (p *planner) endTurn(outcome string) {
	if p.s.Started && p.s.OpenTurn != "" {
		p.add("steps/turnEnd", p.newID(), map[string]any{"turn_id": p.s.OpenTurn, "outcome": outcome})
		p.s.OpenTurn, p.s.TurnEnded = "", true
	}
}

// end ends the session, and a turn still open.
func (p *planner) end(reason string) {
	if p.s.Started {
		p.endTurn("completed")
		p.add("steps/sessionEnd", p.newID(), map[string]any{"reason": reason})
	}
}

// respond records what the agent said.
func (p *planner) respond(text string) {
	if p.s.Started && text != "" {
		p.add("steps/agentResponse", p.newID(), map[string]any{"content": []any{map[string]any{"type": "text", "value": text}}})
	}
}

// TimestampFormat is the envelopes' params.timestamp: RFC 3339 UTC with
// milliseconds, as the ACS adapters write it.
const TimestampFormat = "2006-01-02T15:04:05.000Z07:00"

// Envelope is the step as an ACS JSON-RPC request of the session, sent for
// agentID at timestamp, from the working directory cwd (metadata.cwd, a
// turnguard extension; "" for none); the JSON-RPC id is the request id.
func (s Step) Envelope(host Host, session, agentID, cwd, timestamp string) ([]byte, error) {
	md := map[string]any{"agent_id": agentID, "session_id": session, "platform": string(host)}
	if s.TurnID != "" {
		md["turn_id"] = s.TurnID
	}
	if cwd != "" {
		md["cwd"] = cwd
	}
	return json.Marshal(map[string]any{"jsonrpc": "2.0", "method": s.Method, "id": s.RequestID, "params": map[string]any{
		"acs_version": "0.1.0", "request_id": s.RequestID, "timestamp": timestamp, "metadata": md, "payload": s.Payload,
	}})
}

// callID is the request id of a tool call's request ("tool_use") or
// result ("tool_result"): derived from tool_use_id, as the adapter derives
// the request's, so that the result can name it and a call reported twice
// is a replay; a fresh one without tool_use_id.
func (e *Event) callID(kind string, newID func() string) string {
	if e.ToolUseID == "" {
		return newID()
	}
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte(string(e.Host)+":"+kind+":"+e.ToolUseID)).String()
}

// toolUseRef is the request_id_ref of a call's result: its request's id,
// "" without tool_use_id.
func (e *Event) toolUseRef() string {
	if e.ToolUseID == "" {
		return ""
	}
	return e.callID("tool_use", nil)
}

func (e *Event) sessionStartPayload() map[string]any {
	ctx := map[string]any{}
	if e.Host == Cursor {
		// What the ACS Cursor adapter carries.
		for _, k := range []string{"workspace_roots", "composer_mode", "is_background_agent", "cursor_version"} {
			if v, ok := e.fields[k]; ok && v != nil {
				ctx[k] = v
			}
		}
	}
	if e.Source != "" {
		ctx["source"] = e.Source
	}
	if e.Model != "" {
		ctx["model"] = e.Model
	}
	if len(ctx) == 0 {
		return map[string]any{}
	}
	return map[string]any{"platform_context": ctx}
}

// blobBytes is the length past which a string of base64 alone is taken
// for encoded data (an image, a file) rather than text, and shortened.
const blobBytes = 1 << 10

// elideBlobs returns a copy of v whose long base64 strings (a data: URI
// keeps its header) are cut to their first 64 bytes and a note, or nil
// when v holds none.
func elideBlobs(v any) any {
	switch x := v.(type) {
	case string:
		if len(x) <= blobBytes {
			return nil
		}
		body := x
		if strings.HasPrefix(body, "data:") {
			if i := strings.IndexByte(body, ','); i > 0 {
				body = body[i+1:]
			}
		}
		if len(body) <= blobBytes || strings.TrimLeft(body, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_\r\n") != "" {
			return nil
		}
		return x[:len(x)-len(body)] + body[:64] + policy.LeftOut(len(body))
	case []any:
		var out []any
		for i, item := range x {
			if e := elideBlobs(item); e != nil {
				if out == nil {
					out = slices.Clone(x)
				}
				out[i] = e
			}
		}
		if out == nil {
			return nil
		}
		return out
	case map[string]any:
		var out map[string]any
		for k, item := range x {
			if e := elideBlobs(item); e != nil {
				if out == nil {
					out = maps.Clone(x)
				}
				out[k] = e
			}
		}
		if out == nil {
			return nil
		}
		return out
	}
	return nil
}

// bounded is an output within MaxOutputBytes: itself, or the start of its
// JSON text (a string as it is) with how much was cut.
func bounded(v any) any {
	var text string
	if s, ok := v.(string); ok {
		if len(s) <= MaxOutputBytes {
			return v
		}
		text = s
	} else {
		raw, err := plainJSON(v)
		if err != nil || len(raw) <= MaxOutputBytes {
			return v
		}
		// An image's or a file's base64 is what makes most outputs
		// large, and nothing in it can be read: shortened, the output
		// keeps its shape — the image block the rules must see, the
		// text around it whole.
		if short := elideBlobs(v); short != nil {
			if raw, err = plainJSON(short); err == nil && len(raw) <= MaxOutputBytes {
				return short
			}
		}
		text = string(raw)
	}
	cut := MaxOutputBytes
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	// The note tells lineage that the model read more than it did.
	return text[:cut] + policy.CutShort(cut, len(text))
}

// plainJSON is v's JSON as the envelope will carry it, without
// encoding/json's HTML escapes: a '<' counted as the six bytes of \u003c
// would let 22 KB of them pass for an output over MaxOutputBytes and cut
// off what follows.
func plainJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// wrap gives each tool input its ACS argument form, {value}: no
// provenance, as the adapter sends them (the model wrote them).
func wrap(in map[string]any) map[string]any {
	out := make(map[string]any, len(in))
	for k, v := range in {
		out[k] = map[string]any{"value": v}
	}
	return out
}

// ClearReason is SessionEnd's reason, and SessionStart's source, of a
// /clear: the conversation starts over under a new session id while the
// background tasks it started run on.
const ClearReason = "clear"

// endReason maps SessionEnd's reason as the adapter does.
func endReason(r string) string {
	switch r {
	case "logout", "prompt_input_exit":
		return "abandoned"
	default:
		return "completed"
	}
}

// Outcome is what the event's steps got.
type Outcome struct {
	// Decision is the first decision that was not allow (deny, ask,
	// modify, defer), or allow when every step was allowed.
	Decision string
	// Reason is that decision's reasoning, or why there is none.
	Reason string
	// Failed: no decision was had (the processor refused a step, or did
	// not answer in time); Reason says why.
	Failed bool
}

// Answer is Claude Code's answer to the event: nil when it has nothing to
// say (Claude Code then proceeds as it would without the hook).
//
// Unlike the ACS adapter, an allowed tool call gets no answer rather than
// permissionDecision allow, which would skip Claude Code's own permission
// prompt: turnguard denies or asks, it does not grant. Only PreToolUse,
// UserPromptSubmit, PostToolUse and PostToolUseFailure can be blocked; a
// block on Stop means "keep going" to Claude Code, so none is sent there.
// failClosed says what a Failed outcome gets: a deny (true), or nothing.
func (e *Event) Answer(o Outcome, failClosed bool) []byte {
	decision := o.Decision
	if o.Failed {
		if !failClosed {
			return nil
		}
		decision = "deny"
	}
	reason := "turnguard: " + o.Reason
	if o.Failed {
		reason = "turnguard could not decide, and fails closed: " + o.Reason
	}
	if e.Host == Cursor {
		return marshal(e.cursorAnswer(decision, reason))
	}
	var out map[string]any
	switch e.Name {
	case PreToolUse:
		var permission string
		switch decision {
		case "allow", "":
			return nil
		case "ask":
			permission = "ask"
			switch {
			case e.Host == Codex:
				// Codex does not support ask: it reports a hook error
				// and runs the call (the ACS Codex adapter's finding).
				permission = "deny"
			case e.askedNobody():
				permission = "deny"
				reason += " (turnguard would ask you, but this session runs in permission mode " + e.PermissionMode +
					", where nobody is asked: the call is refused)"
			}
		default:
			// deny; and modify or defer, which Claude Code's answer
			// cannot carry: refused rather than let through.
			permission = "deny"
		}
		out = map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": PreToolUse,
			"permissionDecision": permission, "permissionDecisionReason": reason}}
	case UserPromptSubmit, PostToolUse, PostToolUseFailure:
		if decision == "allow" || decision == "" {
			return nil
		}
		out = map[string]any{"decision": "block", "reason": reason}
	default:
		return nil
	}
	return marshal(out)
}

// askingModes are Claude Code's permission modes in which an ask reaches
// a person: the permission prompt of default, acceptEdits and plan mode,
// and of auto mode, where a hook's ask "floors the decision at a prompt"
// (Claude Code's CHANGELOG) rather than going to its classifier; ""
// for a version that does not say.
var askingModes = []string{"", "default", "acceptEdits", "plan", "auto"}

// askedNobody reports whether Claude Code would answer an ask without
// asking anyone: in bypassPermissions mode (--dangerously-skip-permissions)
// every call not denied runs, so an ask would let the call through
// unseen — and its result would then count as a person's approval of its
// values; in dontAsk mode a call that would prompt is refused anyway. A
// mode turnguard does not know counts as one that asks nobody.
func (e *Event) askedNobody() bool {
	return e.Host == ClaudeCode && !slices.Contains(askingModes, e.PermissionMode)
}

// marshal is an answer's JSON; nil for none.
func marshal(out map[string]any) []byte {
	if out == nil {
		return nil
	}
	raw, err := json.Marshal(out)
	if err != nil {
		// Maps of strings and booleans: cannot fail.
		panic(err)
	}
	return raw
}

// String is the event as logs name it.
func (e *Event) String() string {
	if e.Tool != "" {
		return e.Name + " " + strings.TrimSpace(e.Tool)
	}
	return e.Name
}
