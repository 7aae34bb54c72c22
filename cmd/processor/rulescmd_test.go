package main

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRulesCommand(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		code       int
		out, error []string
	}{
		{"check the default pack", []string{"rules", "check"}, 0, []string{"ok: turnguard-default (sha256:", "13 rules"}, nil},
		{"check a broken file", []string{"rules", "check", "../../internal/core/policy/testdata/broken/cel-type-error.yaml"}, 1, nil,
			[]string{"cel-type-error.yaml:9:22: when: found no matching overload for '_==_' applied to '(string, int)'", "1 problem(s)"}},
		{"check several broken files at once", []string{"rules", "check", "../../internal/core/policy/testdata/broken/unknown-hook.yaml", "../../internal/core/policy/testdata/broken/bad-enums.yaml"}, 1, nil,
			[]string{"unknown-hook.yaml:8:27:", `bad-enums.yaml:5:9: rule "R1" is declared twice`, "bad-enums.yaml:7:15:", "5 problem(s)"}},
		{"test the default pack", []string{"rules", "test"}, 0, []string{"PASS builtin:default:", " passed, 0 failed"}, nil},
		{"test the window edge cases", []string{"rules", "test", "../../internal/ruletest/testdata/windows.yaml"}, 0, []string{"PASS", "11 passed, 0 failed"}, nil},
		{"a failing case", []string{"rules", "test", "testdata/failing-test.yaml"}, 1,
			[]string{"PASS testdata/failing-test.yaml:12: shell is denied", "FAIL testdata/failing-test.yaml:15: this expectation is wrong on purpose", "decision deny, want allow", "1 passed, 1 failed"}, nil},
		{"a failing case says what it got", []string{"rules", "test", "testdata/failing-test.yaml"}, 1,
			[]string{`got: reason_codes session_start_missing`, `reasoning "No shell"`, "violation session_start_missing: "}, nil},
		{"check finds a test payload the schema refuses, and leaves one that means it", []string{"rules", "check", "builtin:default", "testdata/string-argument.yaml"}, 1, nil,
			[]string{`string-argument.yaml:6: test "an argument given as a bare string", step 3 (toolCallRequest)`, "/params/payload/arguments/command: got string, want object", "1 test step(s)"}},
		{"a payload_invalid failure shows its cause", []string{"rules", "test", "--only", "testdata/string-argument.yaml", "builtin:default", "testdata/string-argument.yaml"}, 1,
			[]string{"FAIL testdata/string-argument.yaml:6", "/params/payload/arguments/command: got string, want object", "1 passed, 1 failed"}, nil},
		{"--only a file with no cases", []string{"rules", "test", "--only", "nope.yaml", "builtin:default"}, 1, nil, []string{"nope.yaml carries no test cases"}},
		{"a missing file", []string{"rules", "check", "nope.yaml"}, 1, nil, []string{"nope.yaml"}},
		{"an unknown subcommand", []string{"rules", "lint"}, 2, nil, []string{`unknown rules command "lint"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), tc.args, &out, &errOut)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out.String(), errOut.String())
			}
			for _, want := range tc.out {
				if !strings.Contains(out.String(), want) {
					t.Errorf("stdout lacks %q:\n%s", want, out.String())
				}
			}
			for _, want := range tc.error {
				if !strings.Contains(errOut.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
				}
			}
		})
	}
}

// TestExampleRuleFiles: every rule file under examples/rules — the files
// the README's replay examples name — loads next to the default pack, as
// the README loads it, carries test cases of its own, and passes them and
// the pack's (`processor rules check` and `rules test`).
func TestExampleRuleFiles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "rules", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The README names these two; more may come.
	for _, want := range []string{"stricter.yaml", "ours.yaml"} {
		if !slices.ContainsFunc(files, func(f string) bool { return filepath.Base(f) == want }) {
			t.Errorf("examples/rules/%s is missing (the README uses it)", want)
		}
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			for _, cmd := range []string{"check", "test"} {
				var out, errOut bytes.Buffer
				if code := run(context.Background(), []string{"rules", cmd, "builtin:default", f}, &out, &errOut); code != 0 {
					t.Fatalf("rules %s: exit %d\n%s%s", cmd, code, out.String(), errOut.String())
				}
				if cmd == "test" && !strings.Contains(out.String(), "PASS "+f+":") {
					t.Errorf("%s carries no test case of its own:\n%s", f, out.String())
				}
			}
		})
	}
}
