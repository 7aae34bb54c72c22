package policy_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/turnguard/turnguard/internal/core/policy"
	rulepack "github.com/turnguard/turnguard/rules"
)

// A deployment file can put a default rule in shadow mode or turn it off
// without copying the pack.
func TestOverrides(t *testing.T) {
	local := filepath.Join(t.TempDir(), "local.yaml")
	src := "apiVersion: turnguard/v1\nkind: RuleSet\nmetadata: {name: local}\noverrides:\n  - {rule: TG-TAINT-001, mode: shadow}\n  - {rule: TG-RATE-002, mode: off}\n"
	if err := os.WriteFile(local, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	rs, err := rulepack.Load(rulepack.DefaultPath, local)
	if err != nil {
		t.Fatal(err)
	}
	modes := map[string]policy.Mode{}
	for _, r := range rs.Rules {
		modes[r.ID] = r.Mode
	}
	if modes["TG-TAINT-001"] != policy.Shadow || modes["TG-RATE-002"] != policy.Off || modes["TG-RATE-001"] != policy.Enforce {
		t.Fatalf("modes after overrides: %v", modes)
	}
	if rs.Name != "turnguard-default+local" || len(rs.Files) != 2 {
		t.Fatalf("merged set %q of %v", rs.Name, rs.Files)
	}
}
