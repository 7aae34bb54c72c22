package rules_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/rules"
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
		f, err := rules.ParseFile("inline.yaml", []byte("apiVersion: turnguard/v1\nkind: RuleSet\nmetadata: {name: t}\ntools:\n  - "+entry+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = rules.Compile([]*rules.File{f})
		var ds rules.Diagnostics
		if !errors.As(err, &ds) || len(ds) != 1 || !strings.Contains(ds[0].Msg, "is empty") {
			t.Errorf("%s: %v, want one diagnostic about an empty glob", entry, err)
		}
	}
}
