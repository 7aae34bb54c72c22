package policy_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/core/policy"
	rulepack "github.com/turnguard/turnguard/rules"
)

// The catalog matches tool names and capabilities whatever their case and
// surrounding whitespace: frameworks spell the same tool differently, and a
// spelling the catalog misses would make a consequential call look
// harmless.
func TestCatalogMatchIgnoresCaseAndSpace(t *testing.T) {
	rs := compile(t, `apiVersion: turnguard/v1
kind: RuleSet
metadata: {name: t}
tools:
  - {match: "Bash", classes: [consequential]}
  - {match: "shell*", classes: [consequential]}
  - {match: "mcp__*__fetch*", classes: [untrusted_source]}
  - {match: "run_[a-z]*", classes: [runner]}
  - {capability: "Payments.*", classes: [consequential]}
  - {match: "http*", capability: "network.egress", classes: [egress]}
`)
	tests := []struct {
		name, capability string
		want             []string
	}{
		{"Bash", "", []string{"consequential"}},
		{"bash", "", []string{"consequential"}},
		{"BASH", "", []string{"consequential"}},
		{"Bash ", "", []string{"consequential"}},
		{"\tbash\n", "", []string{"consequential"}},
		{"Shell", "", []string{"consequential"}},
		{"SHELL_EXEC", "", []string{"consequential"}},
		{"mcp__Browser__Fetch_Page", "", []string{"untrusted_source"}},
		{"RUN_Tests", "", []string{"runner"}},
		{"pay", "payments.transfer", []string{"consequential"}},
		{"pay", " PAYMENTS.Transfer ", []string{"consequential"}},
		{"HTTP_Post", "Network.Egress", []string{"egress"}},
		{"http_post", "", []string{}},
		// Only the spelling of the words is forgiven, not the words.
		{"Bas", "", []string{}},
		{"Bash2", "", []string{}},
		{"TodoWrite", "", []string{}},
		{"myshell", "", []string{}},
		{" ", "", []string{}},
		{"", "", []string{}},
	}
	for _, tc := range tests {
		if got := rs.ToolClasses(tc.name, tc.capability); !slices.Equal(got, tc.want) {
			t.Errorf("ToolClasses(%q, %q) = %v, want %v", tc.name, tc.capability, got, tc.want)
		}
	}
}

// Names, capabilities and globs are compared as words: case, surrounding
// space, the separators _ - . / : and camelCase boundaries never decide a
// match, and a glob's '*' matches across what was a '/'.
func TestCatalogMatchIgnoresSpelling(t *testing.T) {
	rs := compile(t, `apiVersion: turnguard/v1
kind: RuleSet
metadata: {name: t}
tools:
  - {match: "WebFetch*", classes: [untrusted_source]}
  - {match: "exec*", classes: [consequential]}
  - {match: "mcp__*__write*", classes: [consequential]}
  - {match: "NotebookEdit", classes: [consequential]}
  - {match: "run_[a-z]*", classes: [runner]}
  - {match: "a\\*b", classes: [literal_star]}
  - {capability: "process.execute", classes: [consequential]}
  - {capability: "shell.*", classes: [consequential]}
`)
	tests := []struct {
		name, capability string
		want             []string
	}{
		{"web_fetch", "", []string{"untrusted_source"}},
		{"WEB_FETCH", "", []string{"untrusted_source"}},
		{"web-fetch", "", []string{"untrusted_source"}},
		{"webFetch", "", []string{"untrusted_source"}},
		{"web.fetch.page", "", []string{"untrusted_source"}},
		{"exec/run", "", []string{"consequential"}},
		{"exec:run", "", []string{"consequential"}},
		{"Exec", "", []string{"consequential"}},
		{"mcp__filesystem__write_file", "", []string{"consequential"}},
		{"mcp.filesystem.writeFile", "", []string{"consequential"}},
		{"notebook_edit", "", []string{"consequential"}},
		{"NOTEBOOK-EDIT", "", []string{"consequential"}},
		{"run-tests", "", []string{"runner"}}, // [a-z] stays a range
		{"a*b", "", []string{"literal_star"}},
		{"x", "Process.Execute", []string{"consequential"}},
		{"x", "process-execute", []string{"consequential"}},
		{"x", "processExecute", []string{"consequential"}},
		{"x", "shell.execute", []string{"consequential"}},
		{"x", "Shell/Run", []string{"consequential"}},
		// Words still decide.
		{"webfetch", "", []string{}},
		{"notebook_edit_v2", "", []string{}},
		{"executor", "", []string{"consequential"}}, // exec* is a prefix glob
		{"x", "process.exec", []string{}},
		{"aXb", "", []string{}},
		{"_", "", []string{}},
	}
	for _, tc := range tests {
		if got := rs.ToolClasses(tc.name, tc.capability); !slices.Equal(got, tc.want) {
			t.Errorf("ToolClasses(%q, %q) = %v, want %v", tc.name, tc.capability, got, tc.want)
		}
	}
}

// A glob that is empty once trimmed would class every tool; it is refused.
func TestCatalogRefusesBlankGlobs(t *testing.T) {
	for _, entry := range []string{`{match: " ", classes: [x]}`, `{match: "", classes: [x]}`, `{match: "a", capability: "  ", classes: [x]}`} {
		f, err := policy.ParseFile("inline.yaml", []byte("apiVersion: turnguard/v1\nkind: RuleSet\nmetadata: {name: t}\ntools:\n  - "+entry+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = policy.Compile([]*policy.File{f})
		var ds policy.Diagnostics
		if !errors.As(err, &ds) || len(ds) != 1 || !strings.Contains(ds[0].Msg, "is empty") {
			t.Errorf("%s: %v, want one diagnostic about an empty glob", entry, err)
		}
	}
}

// args and verbs are matchers of a catalog entry like match and
// capability: an entry with args matches a call carrying an argument whose
// name matches one of its globs (names compared as words, like tool
// names); an entry with verbs matches a name with one of them in verb
// position — the first word of the tool's own name (after the last "__")
// or a word after and, or, then — not anywhere in the name.
func TestCatalogArgsAndVerbs(t *testing.T) {
	rs := compile(t, `apiVersion: turnguard/v1
kind: RuleSet
metadata: {name: t}
tools:
  - {match: "Grep", classes: [read_only]}
  - {match: "Grep", args: [pre], classes: [consequential]}
  - {args: ["*_command", Script], classes: [executes]}
  - {match: "mcp__*", verbs: [merge, Delete], classes: [acts]}
  - {verbs: [wipe], capability: "disk.*", classes: [wipes]}
`)
	tests := []struct {
		name, capability string
		args             []string
		want             []string
	}{
		{"Grep", "", nil, []string{"read_only"}},
		{"Grep", "", []string{"pattern", "path", "-A", "output_mode"}, []string{"read_only"}},
		{"Grep", "", []string{"pattern", "pre"}, []string{"consequential", "read_only"}},
		{"grep", "", []string{"--pre"}, []string{"consequential", "read_only"}},
		{"Grep", "", []string{"PRE "}, []string{"consequential", "read_only"}},
		{"Grep", "", []string{"pre_glob"}, []string{"read_only"}},
		{"Read", "", []string{"raw_command"}, []string{"executes"}},
		{"Read", "", []string{"rawCommand"}, []string{"executes"}},
		{"Read", "", []string{"shell-command"}, []string{"executes"}},
		{"Read", "", []string{"script"}, []string{"executes"}},
		{"Read", "", []string{"command"}, []string{}}, // *_command needs a word before
		{"Read", "", []string{"", " "}, []string{}},
		{"mcp__github__get_and_merge_pull_request", "", nil, []string{"acts"}},
		{"mcp__github__getAndMergePullRequest", "", nil, []string{"acts"}},
		{"mcp__github__merge_pull_request", "", nil, []string{"acts"}},
		{"mcp__fs__read_then_delete", "", nil, []string{"acts"}},
		{"mcp__x__list_or_DELETE", "", nil, []string{"acts"}},
		{"mcp__gitlab__get_merge_request", "", nil, []string{}},
		{"mcp__merge__get_status", "", nil, []string{}}, // the server's name is not the tool's verb
		{"mcp__x__get_and", "", nil, []string{}},
		{"merge_pull_request", "", nil, []string{}}, // not mcp__*
		{"wipe_disk", "disk.erase", nil, []string{"wipes"}},
		{"wipe_disk", "", nil, []string{}},
		{"disk_wipe", "disk.erase", nil, []string{}},
	}
	for _, tc := range tests {
		if got := rs.ToolClasses(tc.name, tc.capability, tc.args...); !slices.Equal(got, tc.want) {
			t.Errorf("ToolClasses(%q, %q, %q) = %v, want %v", tc.name, tc.capability, tc.args, got, tc.want)
		}
	}
}

// FuzzToolClasses: tool names, capabilities and argument names come from
// agents. Whatever they are, classing never panics, returns classes
// sorted and without duplicates, and an extra argument never takes a
// class away (an argument can make a call act, never make it read).
func FuzzToolClasses(f *testing.F) {
	rs, err := rulepack.DefaultSet()
	if err != nil {
		f.Fatal(err)
	}
	f.Add("mcp__github__get_and_merge_pull_request", "", "pre")
	f.Add("Grep", "process.spawn", "--pre")
	f.Add("mcp____", "..", "_")
	f.Add("Read", "FileSystem.Read", "rawCommand")
	f.Add("Bash", "", "command")
	f.Add("mcp__mail__send_email", "", "Recipients")
	f.Add("mcp__x__\u00c9DIT_and_\u0130", "a.\u212a", "\u017fcript")
	f.Fuzz(func(t *testing.T, name, capability, arg string) {
		without := rs.ToolClasses(name, capability)
		with := rs.ToolClasses(name, capability, arg)
		for _, got := range [][]string{without, with} {
			if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
				t.Fatalf("classes not sorted and unique: %v", got)
			}
		}
		for _, c := range without {
			if !slices.Contains(with, c) {
				t.Fatalf("argument %q took class %q away: %v -> %v", arg, c, without, with)
			}
		}
		// Sinks are arguments of the call; without a declaration, all.
		sinks, known := rs.ToolSinks(name, capability, arg)
		if len(sinks) > 1 || len(sinks) == 1 && sinks[0] != arg || !known && len(sinks) != 1 {
			t.Fatalf("ToolSinks(%q, %q, %q) = %q, %v", name, capability, arg, sinks, known)
		}
	})
}
