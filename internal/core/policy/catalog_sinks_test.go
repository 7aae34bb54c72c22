package policy_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

const sinkCatalog = `apiVersion: turnguard/v1
kind: RuleSet
metadata: {name: t}
tools:
  - {match: "send_email", classes: [consequential], sinks: [recipients, cc, bcc, "attach*"]}
  - {match: "send_*", sinks: [to]}
  - {match: "Bash", sinks: [command, raw_command]}
  - {match: "Grep", classes: [read_only]}
  - {match: "Grep", args: [pre], sinks: [pre]}
  - {capability: "network.egress", sinks: ["*_url", url]}
  - {match: "Read", sinks: []}
`

// ToolSinks: the arguments of a call that carry data or authority out, by
// the sink globs of every catalog entry that matches the call (names
// compared as words), returned as the call spells them; when no matching
// entry declares sinks, every argument carried is one (fail closed).
func TestToolSinks(t *testing.T) {
	rs := compile(t, sinkCatalog)
	tests := []struct {
		name, capability string
		args             []string
		want             []string
		known            bool
	}{
		{"send_email", "", []string{"recipients", "subject", "body"}, []string{"recipients"}, true},
		{"send_email", "", []string{"Recipients", "CC", "--bcc", "attachments", "body"}, []string{"Recipients", "CC", "--bcc", "attachments"}, true},
		// Two entries match send_email: the union of their sinks.
		{"send_email", "", []string{"to", "recipients"}, []string{"to", "recipients"}, true},
		{"sendEmail", "", []string{"recipients"}, []string{"recipients"}, true},
		{"send_sms", "", []string{"to", "text"}, []string{"to"}, true},
		// An entry that declares sinks and matches, with none carried.
		{"send_sms", "", []string{"text"}, []string{}, true},
		{"send_sms", "", nil, []string{}, true},
		{"Bash", "", []string{"command", "description"}, []string{"command"}, true},
		{"bash", "", []string{"rawCommand"}, []string{"rawCommand"}, true},
		{"Bash", "", []string{"raw_command"}, []string{"raw_command"}, true},
		// Fail closed: no matching entry declares sinks.
		{"Grep", "", []string{"pattern", "path"}, []string{"pattern", "path"}, false},
		{"unknown_tool", "", []string{"a", "b"}, []string{"a", "b"}, false},
		{"unknown_tool", "", nil, nil, false},
		// An entry with args matches only when its argument is carried.
		{"Grep", "", []string{"pattern", "--pre"}, []string{"--pre"}, true},
		// An entry with sinks alone, matched by capability.
		{"fetch", "network.egress", []string{"callback_url", "url", "headers"}, []string{"callback_url", "url"}, true},
		{"fetch", "Network.Egress", []string{"URL"}, []string{"URL"}, true},
		{"fetch", "filesystem.read", []string{"url"}, []string{"url"}, false},
		// sinks: [] declares that the tool carries nothing out.
		{"Read", "", []string{"file_path"}, []string{}, true},
	}
	for _, tc := range tests {
		got, known := rs.ToolSinks(tc.name, tc.capability, tc.args...)
		if !slices.Equal(got, tc.want) || known != tc.known || (got == nil) != (tc.want == nil) {
			t.Errorf("ToolSinks(%q, %q, %q) = %q, %v; want %q, %v", tc.name, tc.capability, tc.args, got, known, tc.want, tc.known)
		}
	}
	// Sinks do not change classes: an entry with sinks alone gives none.
	if got := rs.ToolClasses("send_sms", "", "to"); len(got) != 0 {
		t.Errorf("send_sms classes %v, want none", got)
	}
	if got := rs.ToolClasses("send_email", "", "to"); !slices.Equal(got, []string{"consequential"}) {
		t.Errorf("send_email classes %v, want [consequential]", got)
	}
}

// A sink glob is checked like an args glob, at its position, and an entry
// with sinks alone still needs a matcher.
func TestToolSinksBadGlobs(t *testing.T) {
	for _, tc := range []struct{ entry, want string }{
		{`{match: "send_*", sinks: ["["]}`, `inline.yaml:5:31: sink glob "[": syntax error in pattern`},
		{`{match: "send_*", sinks: [to, "  "]}`, `inline.yaml:5:35: sink glob "  " is empty`},
		{`{sinks: [to]}`, `inline.yaml:5:14: a tool class entry needs match`},
		{`{match: "send_*"}`, `inline.yaml:5:13: a tool class entry needs classes or sinks`},
	} {
		f, err := policy.ParseFile("inline.yaml", []byte("apiVersion: turnguard/v1\nkind: RuleSet\nmetadata: {name: t}\ntools:\n  - "+tc.entry+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = policy.Compile([]*policy.File{f})
		var ds policy.Diagnostics
		if !errors.As(err, &ds) || len(ds) != 1 || !strings.HasPrefix(ds[0].String(), tc.want) {
			t.Errorf("%s: %v, want one diagnostic %q", tc.entry, err, tc.want)
		}
	}
}

// tool.sinks and tool.sinks_known evaluate in conditions: the sinks the
// call carries, sorted, with the payload's raw_command as an argument of
// that name; every argument carried when the catalog declares none.
func TestToolSinksInConditions(t *testing.T) {
	tests := []struct {
		name    string
		payload map[string]any
		when    string
	}{
		{"known sinks", map[string]any{"tool": map[string]any{"name": "send_email"}, "arguments": args("subject", "s", "recipients", "a@example.com", "cc", "b@example.com")},
			`tool.sinks == ["cc", "recipients"] && tool.sinks_known`},
		{"sinks after other arguments", map[string]any{"tool": map[string]any{"name": "send_email"}, "arguments": args("body", "b", "attachments", "f1", "recipients", "a@example.com", "zz", "z")},
			`tool.sinks == ["attachments", "recipients"] && tool.sinks_known && size(tool.args) == 4`},
		{"raw_command", map[string]any{"tool": map[string]any{"name": "Bash"}, "arguments": args("description", "d"), "raw_command": "ls"},
			`tool.sinks == ["raw_command"] && tool.sinks_known`},
		{"not carried", map[string]any{"tool": map[string]any{"name": "send_email"}, "arguments": map[string]any{
			"recipients": map[string]any{"value": ""}, "cc": map[string]any{"value": nil}, "bcc": map[string]any{"value": false}, "subject": map[string]any{"value": "s"}}},
			`tool.sinks == [] && tool.sinks_known`},
		{"fail closed", map[string]any{"tool": map[string]any{"name": "unknown"}, "arguments": args("b", "1", "a", "2")},
			`tool.sinks == ["a", "b"] && !tool.sinks_known`},
		{"no arguments", map[string]any{"tool": map[string]any{"name": "unknown"}},
			`size(tool.sinks) == 0 && !tool.sinks_known`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := compile(t, sinkCatalog+`rules:
  - id: SINKS
    title: sinks
    severity: low
    on: [toolCallRequest]
    when: '`+tc.when+`'
    decision: deny
    message: 'sinks {{.tool.sinks}} known {{.tool.sinks_known}}'
`)
			in := step(t, "toolCallRequest", 1, tc.payload)
			ev := rs.Evaluate(turnstate.New("t", "s"), nil, in)
			if len(ev.Hits) != 1 || ev.Hits[0].Rule.ID != "SINKS" {
				t.Fatalf("condition %s did not hold: %+v", tc.when, ev.Hits)
			}
			// The message template sees what the condition saw.
			if m := ev.Hits[0].Message; !strings.HasPrefix(m, "sinks [") || !strings.HasSuffix(m, "known "+fmt.Sprint(strings.Contains(tc.when, "&& tool.sinks_known"))) {
				t.Errorf("message %q", m)
			}
		})
	}
}
