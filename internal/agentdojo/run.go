// Package agentdojo benchmarks a rule set on AgentDojo's recorded agent
// runs (Debenedetti et al., NeurIPS 2024): it reads the runs, turns each
// into the ACS session an adapter inside AgentDojo's agent loop would have
// sent, decides it with the processor's own core, and scores the
// decisions against AgentDojo's labels — which only the scorer reads,
// after deciding.
package agentdojo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Run is one recorded AgentDojo run: one model (pipeline) on one user task
// of a suite, under one attack (or none).
type Run struct {
	// Source says where the run was read: a file, and for a JSON Lines
	// file the line ("file.jsonl.gz:12").
	Source        string `json:"source"`
	Suite         string `json:"suite"`
	Pipeline      string `json:"pipeline"`
	UserTask      string `json:"user_task"`
	InjectionTask string `json:"injection_task,omitempty"`
	// AttackType is "" for a run without an attack (AgentDojo writes
	// null or "none").
	AttackType string `json:"attack_type,omitempty"`
	// Injections maps an injection placeholder to the text injected.
	Injections map[string]string `json:"-"`
	Messages   []Message         `json:"-"`
	// Error is AgentDojo's note on a run that failed.
	Error string `json:"error,omitempty"`
	// Utility: the user's task was done. Security: the injection's goal
	// was reached (the attack succeeded).
	Utility  bool `json:"utility"`
	Security bool `json:"security"`
}

// Attacked reports whether the run was under attack.
func (r *Run) Attacked() bool { return r.AttackType != "" }

// Message is one message of a run's conversation.
type Message struct {
	// Role is system, user, assistant or tool.
	Role string
	// Text is the message's text: the content string, or the text parts
	// of a content list joined by newlines.
	Text string
	// ToolCalls are an assistant message's calls.
	ToolCalls []ToolCall
	// ToolCallID and Call are what a tool message answers (either may be
	// missing: some pipelines recorded no call ids); Error is the tool's
	// error, nil when it succeeded.
	ToolCallID string
	Call       *ToolCall
	Error      *string
}

// ToolCall is one call of a tool by the model.
type ToolCall struct {
	Function string
	// Args are the call's arguments, sorted by name, with their JSON
	// values as recorded.
	Args []Arg
	ID   string
}

// Arg is one argument of a call.
type Arg struct {
	Name  string
	Value json.RawMessage
}

// The roles of AgentDojo's messages.
const (
	roleSystem    = "system"
	roleUser      = "user"
	roleAssistant = "assistant"
	roleTool      = "tool"
)

// rawRun is a run file as AgentDojo writes it.
type rawRun struct {
	Suite         string            `json:"suite_name"`
	Pipeline      string            `json:"pipeline_name"`
	UserTask      string            `json:"user_task_id"`
	InjectionTask *string           `json:"injection_task_id"`
	AttackType    *string           `json:"attack_type"`
	Injections    map[string]string `json:"injections"`
	Messages      []rawMessage      `json:"messages"`
	Error         *string           `json:"error"`
	Utility       *bool             `json:"utility"`
	Security      *bool             `json:"security"`
}

type rawMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []rawToolCall   `json:"tool_calls"`
	ToolCallID *string         `json:"tool_call_id"`
	ToolCall   *rawToolCall    `json:"tool_call"`
	Error      *string         `json:"error"`
}

type rawToolCall struct {
	Function string                     `json:"function"`
	Args     map[string]json.RawMessage `json:"args"`
	ID       *string                    `json:"id"`
}

// contentPart is one part of a content list (AgentDojo ≥ 0.1.30 writes
// [{"type": "text", "content": "…"}]).
type contentPart struct {
	Type    string  `json:"type"`
	Content *string `json:"content"`
}

// ParseRun reads one run file's JSON. source names it in errors and in
// the Run.
func ParseRun(source string, data []byte) (*Run, error) {
	var raw rawRun
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%s: not an AgentDojo run: %w", source, err)
	}
	r, err := raw.run(source)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return r, nil
}

func (raw *rawRun) run(source string) (*Run, error) {
	if raw.Suite == "" || raw.Pipeline == "" || raw.UserTask == "" {
		return nil, errors.New("suite_name, pipeline_name and user_task_id are required")
	}
	if raw.Utility == nil || raw.Security == nil {
		return nil, errors.New("utility and security are required (true or false)")
	}
	if len(raw.Messages) == 0 {
		return nil, errors.New("no messages")
	}
	r := &Run{Source: source, Suite: raw.Suite, Pipeline: raw.Pipeline, UserTask: raw.UserTask,
		Injections: raw.Injections, Utility: *raw.Utility, Security: *raw.Security}
	if raw.InjectionTask != nil {
		r.InjectionTask = *raw.InjectionTask
	}
	if raw.AttackType != nil && *raw.AttackType != "none" {
		r.AttackType = *raw.AttackType
	}
	if raw.Error != nil {
		r.Error = *raw.Error
	}
	if r.Attacked() && len(r.Injections) == 0 {
		return nil, fmt.Errorf("attack %q without injections", r.AttackType)
	}
	r.Messages = make([]Message, 0, len(raw.Messages))
	user := false
	for i, rm := range raw.Messages {
		m, err := rm.message()
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i+1, err)
		}
		switch {
		case m.Role == roleUser:
			user = true
		case m.Role != roleSystem && !user:
			// An adapter opens turns at user messages: an agent step
			// before the first has no turn to go in.
			return nil, fmt.Errorf("message %d: %s message before the first user message", i+1, m.Role)
		}
		r.Messages = append(r.Messages, m)
	}
	if !user {
		return nil, errors.New("no user message")
	}
	return r, nil
}

func (rm *rawMessage) message() (Message, error) {
	m := Message{Role: rm.Role, Error: rm.Error}
	switch rm.Role {
	case roleSystem, roleUser, roleAssistant, roleTool:
	default:
		return m, fmt.Errorf("role %q: want system, user, assistant or tool", rm.Role)
	}
	text, err := contentText(rm.Content)
	if err != nil {
		return m, err
	}
	m.Text = text
	if len(rm.ToolCalls) > 0 && rm.Role != roleAssistant {
		return m, fmt.Errorf("a %s message with tool_calls", rm.Role)
	}
	for i := range rm.ToolCalls {
		c, err := rm.ToolCalls[i].call()
		if err != nil {
			return m, fmt.Errorf("tool call %d: %w", i+1, err)
		}
		m.ToolCalls = append(m.ToolCalls, c)
	}
	if rm.Role == roleTool {
		if rm.ToolCallID != nil {
			m.ToolCallID = *rm.ToolCallID
		}
		if rm.ToolCall != nil {
			c, err := rm.ToolCall.call()
			if err != nil {
				return m, fmt.Errorf("tool_call: %w", err)
			}
			m.Call = &c
		}
	}
	return m, nil
}

// contentText reads a message's content: null, a string, or a list of
// parts whose text parts it joins.
func contentText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("content: %w", err)
		}
		return s, nil
	}
	var parts []contentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("content: want a string or a list of parts: %w", err)
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" && p.Content != nil {
			texts = append(texts, *p.Content)
		}
	}
	return strings.Join(texts, "\n"), nil
}

func (rc *rawToolCall) call() (ToolCall, error) {
	if rc.Function == "" {
		return ToolCall{}, errors.New("no function name")
	}
	c := ToolCall{Function: rc.Function, Args: make([]Arg, 0, len(rc.Args))}
	if rc.ID != nil {
		c.ID = *rc.ID
	}
	for name, v := range rc.Args {
		if name == "" {
			return ToolCall{}, errors.New("an argument without a name")
		}
		c.Args = append(c.Args, Arg{Name: name, Value: v})
	}
	slices.SortFunc(c.Args, func(a, b Arg) int { return strings.Compare(a.Name, b.Name) })
	return c, nil
}
