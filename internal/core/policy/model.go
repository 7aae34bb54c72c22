package policy

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// The types below are what rule conditions see. CEL type-checks field
// access against them, so a misspelt field is a load error, not a silent
// false at run time.

// ToolView is the tool of a toolCallRequest or toolCallResult.
type ToolView struct {
	Name       string         `cel:"name"`
	Version    string         `cel:"version"`
	Provider   string         `cel:"provider"`
	Operation  string         `cel:"operation"`
	Capability string         `cel:"capability"`
	RawCommand string         `cel:"raw_command"`
	ExitStatus string         `cel:"exit_status"`
	Classes    []string       `cel:"classes"`
	Args       map[string]any `cel:"args"`
	// Sinks are the names, as the call spells them and sorted, of the
	// arguments the call carries that carry data or authority out of the
	// session (raw_command for the payload's raw_command). SinksKnown: a
	// catalog entry matching the call declares sinks; when none does,
	// every argument carried is a sink (see Set.ToolSinks).
	Sinks      []string `cel:"sinks"`
	SinksKnown bool     `cel:"sinks_known"`
	// Others are the names of the arguments the call carries that are
	// not sinks — a message's body under whatever name, an amount, a
	// date — sorted.
	Others []string `cel:"others"`
	// NestedDestinations has the names of the arguments the call carries
	// whose value is an object or a list with a field named like a
	// destination (nestedDestination): a message object can hold its own
	// recipients (Graph's toRecipients, emailAddress.address), a block its
	// image's URL. A map, so that a condition asking of each argument
	// whether it is one costs no more than the arguments; nil (read as
	// empty) when none is.
	NestedDestinations map[string]bool `cel:"nested_destinations"`
	// Programs are the programs the call's command lines run — those of
	// its sinks named command, cmd, cmdline, command_line or raw_command
	// (the payload's), a shell line or an argument vector — as lower-cased
	// base names, sorted (internal/core/shellcmd): "?" for one named through
	// a variable or a substitution, and every word of a wrapper (sudo,
	// env, xargs, find -exec) or of a line the shell parser refuses.
	Programs []string `cel:"programs"`
	// ReadsOnly: every sink of the call is a command line or an argument
	// vector (Programs' arguments), each only reads (shellcmd.ReadsOnly:
	// ls, cat, rg, git status … with no option, redirection or expansion
	// that writes, runs another program or talks to another host), and
	// the call carries no other argument but a description, a timeout,
	// output limits or a sandbox setting — or a working directory, for a
	// line that runs no git. Computed only when a condition reads it.
	ReadsOnly bool `cel:"reads_only"`
	// PathParts are the directory and file names of the paths the call
	// names — every word of its string arguments and command line with a
	// '/' or a '\' in it, split there (~, ., .. and a URL's words left
	// out) — distinct and sorted: "Downloads" for a Read of
	// ~/Downloads/invoice.pdf or a cat of C:\Users\me\Downloads\x.
	PathParts []string `cel:"path_parts"`
	// Interactive: a command line (or argument vector) among the call's
	// sinks starts a program that reads what to do from the terminal —
	// a shell, an interpreter's REPL, a database client, ssh to a host
	// with no command, an editor — with its standard input neither piped
	// nor redirected (shellcmd.Interactive). Computed only when a
	// condition reads it.
	Interactive bool `cel:"interactive"`
}

// SessionView is the session the envelope belongs to, after the envelope
// was applied to it.
type SessionView struct {
	ID           string `cel:"id"`
	Tenant       string `cel:"tenant"`
	AgentID      string `cel:"agent_id"`
	Started      bool   `cel:"started"`
	Envelopes    int64  `cel:"envelopes"`
	TurnsStarted int64  `cel:"turns_started"`
	// WindowTurns counts the turns that age taint windows
	// (turnstate.Session.WindowTurns).
	WindowTurns    int64 `cel:"window_turns"`
	OpenTurns      int64 `cel:"open_turns"`
	ProvenanceSeen bool  `cel:"provenance_seen"`
	// ActivatedBy: a2a_inbound or external_event when an agentTrigger of
	// that type activated the session (turnstate.Session.ActivatedBy),
	// else empty.
	ActivatedBy string `cel:"activated_by"`
	// Platform is the host the envelope says it comes from (ACS
	// metadata.platform: claude-code, codex, cursor, as the native hook
	// endpoints send it), "" when it names none.
	Platform string `cel:"platform"`
}

// TurnView is the turn the envelope belongs to (or opened, or closed).
type TurnView struct {
	ID          string `cel:"id"`
	Index       int64  `cel:"index"`
	ParentID    string `cel:"parent_id"`
	TriggeredBy string `cel:"triggered_by"`
	Steps       int64  `cel:"steps"`
	ToolCalls   int64  `cel:"tool_calls"`
	Depth       int64  `cel:"depth"`
	Denied      bool   `cel:"denied"`
	// Implicit: no turnStart opened the turn (see turnstate.Turn).
	Implicit bool `cel:"implicit"`
}

// ProvenanceView summarises the provenance the envelope carries.
type ProvenanceView struct {
	Present bool `cel:"present"`
	// Untrusted is set when any data-bearing field's effective trust is
	// untrusted (ACS §7.2; agent_generated takes the minimum of its
	// lineage).
	Untrusted    bool     `cel:"untrusted"`
	Origins      []string `cel:"origins"`
	IDs          []string `cel:"ids"`
	UntrustedIDs []string `cel:"untrusted_ids"`
	SourceIDs    []string `cel:"source_ids"`
}

// ViolationView is a turn-state violation found in the envelope.
type ViolationView struct {
	Name     string `cel:"name"`
	Severity string `cel:"severity"`
	Message  string `cel:"message"`
}

// TaintView is a taint label as seen from the envelope being evaluated.
type TaintView struct {
	// Set: the label is on the session; Active: and its default window
	// (if it has one) has not ended.
	Set      bool  `cel:"set"`
	Active   bool  `cel:"active"`
	AgeTurns int64 `cel:"age_turns"`
	// AgeSteps counts the session's envelopes since the newest hit.
	AgeSteps  int64         `cel:"age_steps"`
	Age       time.Duration `cel:"age"`
	SinceTurn int64         `cel:"since_turn"`
	Hits      int64         `cel:"hits"`
	Origins   []string      `cel:"origins"`
	SourceIDs []string      `cel:"source_ids"`
	// Held: a source that feeds the session without a call still runs
	// (a tool classed streams): the window does not end while it does.
	Held bool `cel:"held"`
}

// Input is one applied envelope as the rules engine needs it.
type Input struct {
	Spec *acs.MethodSpec
	Req  *acs.Request
	// Payload is the decoded payload (numbers as json.Number).
	Payload    any
	Seq        uint64
	Time       time.Time
	Violations []turnstate.Violation
	// Partition is the partition the envelope was consumed from: agent
	// counts remember per partition what they already counted.
	Partition int
	// Provenance is acs.ProvenanceOf(Payload) when the caller already
	// walked the payload for it (non-nil, empty when there is none); nil:
	// Evaluate walks the payload itself.
	Provenance []acs.Provenance
	// Subagent is the state of the subagent session a subagentStop names,
	// when the caller has it; Evaluate only reads it.
	Subagent *turnstate.Session
	// Spawned is the first state of the subagent session a subagentStart
	// announces (turnstate.Result.Spawned), when there is one: Evaluate
	// gives it the labels live in this session (inheritTaints).
	Spawned *turnstate.Session
}

// SubagentView is what a condition sees of the subagent session a
// subagentStop names: present when that session is known and was spawned
// by this one; taints lists the labels set in it (active or not: whatever
// it read may be in what it returns).
type SubagentView struct {
	Present   bool     `cel:"present"`
	SessionID string   `cel:"session_id"`
	Taints    []string `cel:"taints"`
}

// untrustedOrigin is the default trust mapping of ACS §7.2.
func untrustedOrigin(origin string) bool {
	switch origin {
	case "tool_output", "retrieved", "a2a_inbound", "external":
		return true
	}
	return false
}

// plain converts decoded JSON into values CEL and templates handle:
// json.Number becomes int64 when integral, else float64.
func plain(v any) any {
	switch t := v.(type) {
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = plain(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = plain(x)
		}
		return out
	}
	return v
}

// contentText joins the text a payload carries (message content, tool
// outputs, retrieved results, memory) so a rule can search it.
func contentText(payload any) string {
	m, _ := payload.(map[string]any)
	var parts []string
	add := func(v any) {
		if s, ok := v.(string); ok {
			parts = append(parts, s)
		}
	}
	for _, key := range []string{"content", "outputs", "results"} {
		switch t := m[key].(type) {
		case []any:
			for _, item := range t {
				if im, ok := item.(map[string]any); ok {
					add(im["value"])
				}
			}
		case map[string]any:
			add(t["value"])
		}
	}
	if s, ok := m["summary"].(map[string]any); ok {
		add(s["value"])
	}
	return strings.Join(parts, "\n")
}
