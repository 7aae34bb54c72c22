package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/turnguard/turnguard/internal/guardian"
	"github.com/turnguard/turnguard/internal/rules"
	"github.com/turnguard/turnguard/internal/ruletest"
	rulepack "github.com/turnguard/turnguard/rules"
	"github.com/turnguard/turnguard/schema"
)

const rulesUsage = `Usage:
  processor rules check [FILE...]   check rule files; exit 1 with file:line:col messages
  processor rules test [FILE...]    run the test cases the files carry; exit 1 on a failure

The files are merged into one rule set, as --rules merges them. Without a
FILE, the embedded default pack (builtin:default) is used.
`

// rulesCommand runs "processor rules …" and returns the exit code.
func rulesCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, rulesUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	files := args[1:]
	if len(files) == 0 {
		files = []string{rulepack.DefaultPath}
	}
	switch args[0] {
	case "check":
		rs, err := loadRules(files, stderr)
		if err != nil {
			return 1
		}
		fmt.Fprintf(stdout, "ok: %s (%s): %d rules, %d taint labels, %d test cases in %d file(s)\n",
			rs.Name, rs.Revision, len(rs.Rules), len(rs.Taints), len(rs.Tests), len(rs.Files))
		return 0
	case "test":
		rs, err := loadRules(files, stderr)
		if err != nil {
			return 1
		}
		v, err := schema.New()
		if err != nil {
			fmt.Fprintln(stderr, "processor:", err)
			return 1
		}
		results := ruletest.RunSet(guardian.New(v, guardian.Config{}), rs)
		failed := 0
		for _, r := range results {
			status := "PASS"
			if !r.Passed() {
				status = "FAIL"
				failed++
			}
			fmt.Fprintf(stdout, "%s %s:%d: %s\n", status, r.File, r.Pos.Line, r.Name)
			for _, f := range r.Failures {
				fmt.Fprintf(stdout, "    %s\n", f)
			}
		}
		fmt.Fprintf(stdout, "%d passed, %d failed\n", len(results)-failed, failed)
		if len(results) == 0 {
			fmt.Fprintln(stderr, "processor: the rule files carry no test cases")
			return 1
		}
		if failed > 0 {
			return 1
		}
		return 0
	}
	fmt.Fprintf(stderr, "processor: unknown rules command %q\n%s", args[0], rulesUsage)
	return 2
}

// loadRules loads rule files, printing every diagnostic on a line of its
// own.
func loadRules(files []string, stderr io.Writer) (*rules.Set, error) {
	rs, err := rules.LoadFiles(files...)
	if err != nil {
		var ds rules.Diagnostics
		if errors.As(err, &ds) {
			for _, d := range ds {
				fmt.Fprintln(stderr, d)
			}
			fmt.Fprintf(stderr, "%d problem(s)\n", len(ds))
		} else {
			fmt.Fprintln(stderr, "processor:", err)
		}
		return nil, err
	}
	return rs, nil
}
