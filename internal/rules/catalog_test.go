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
		// Case and space are all that is forgiven.
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
