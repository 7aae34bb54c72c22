package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConfigFileDrivesProcessorAndReplay: one --config file gives the
// processor its rules, keys and intake settings, and replay the same, so
// that replay run re-decides a recorded session exactly as the processor
// did and replay verify checks it; without the file, replay decides with
// other rules and the same session changes.
func TestConfigFileDrivesProcessorAndReplay(t *testing.T) {
	dir := t.TempDir()
	keys := pythonAdapterKeys()
	rulesFile := filepath.Join(dir, "deploys.yaml")
	if err := os.WriteFile(rulesFile, []byte(`apiVersion: turnguard/v1
kind: RuleSet
metadata: {name: deploys}
rules:
  - id: OPS-001
    title: Deploys go through the release pipeline
    severity: medium
    on: [toolCallRequest]
    when: 'tool.name == "deploy"'
    decision: deny
    reason_codes: [deploy_outside_pipeline]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "turnguard.yaml")
	body := fmt.Sprintf("rules: [builtin:default, %s]\nkeys: %s\nrequire-signatures: true\nskew-window: 10m\nhandshake: optional\n", rulesFile, keys.write(t, dir))
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startGuardian(t, nil, false, "--config", cfg)
	g.keys = keys
	sid := newUUID()
	s := &acsSession{c: g.acsClient, id: sid}
	meta := map[string]any{"agent_id": "claude-code:1a2b3c4d", "session_id": sid}
	turn := newUUID()
	in := with(meta, "turn_id", turn)
	s.decide(t, envelopeFor("steps/sessionStart", newUUID(), meta, map[string]any{}), "allow")
	s.decide(t, envelopeFor("steps/turnStart", turn, in, map[string]any{"turn_id": turn, "triggered_by": "user_message"}), "allow")
	s.decide(t, envelopeFor("steps/toolCallRequest", newUUID(), in, obj(`{"tool":{"name":"deploy"},"arguments":{"env":{"value":"prod"}}}`)), "deny")
	s.decide(t, envelopeFor("steps/toolCallRequest", newUUID(), in, obj(`{"tool":{"name":"Read"},"arguments":{"file_path":{"value":"README.md"}}}`)), "allow")
	// Unsigned: the file's require-signatures refuses it.
	if r := s.send(t, envelopeFor("steps/toolCallRequest", newUUID(), in, obj(`{"tool":{"name":"Read"},"arguments":{"file_path":{"value":"a"}}}`))); !r.has("error") {
		t.Fatalf("an unsigned step was decided: %s", r)
	}
	g.p.stop(t)

	replay := func(args ...string) (int, string) {
		t.Helper()
		p := start(t, "replay", args...)
		code := p.wait(t, time.Minute)
		return code, p.out.String()
	}
	if code, out := replay("run", "--config", cfg, "--data-dir", g.dataDir, "--session", sid, "--fail-on-diff"); code != 0 || !strings.Contains(out, "deploys") {
		t.Fatalf("replay run with the processor's config: exit %d, want 0 (nothing changes)\n%s", code, out)
	}
	if code, out := replay("run", "--rules", "builtin:default", "--keys", filepath.Join(dir, "keys.yaml"), "--require-signatures",
		"--data-dir", g.dataDir, "--session", sid, "--fail-on-diff"); code != 1 || !strings.Contains(out, "deploy") {
		t.Fatalf("replay run without the file's rules: exit %d, want 1 (the deploy is allowed now)\n%s", code, out)
	}
	if code, out := replay("verify", "--config", cfg, "--data-dir", g.dataDir, "--session", sid); code != 0 || !strings.Contains(out, "result     verified") {
		t.Fatalf("replay verify with the processor's config: exit %d\n%s", code, out)
	}
}
