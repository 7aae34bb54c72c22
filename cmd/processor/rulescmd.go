package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/turnguard/turnguard/internal/cliflag"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/ruletest"
	rulepack "github.com/turnguard/turnguard/rules"
	"github.com/turnguard/turnguard/schema"
)

const rulesUsage = `Usage:
  processor rules check [FILE...]              check rule files, and their test cases' envelopes
                                               against the ACS schemas; exit 1 with file:line messages
  processor rules test [--only FILE] [FILE...] run the test cases the files carry; exit 1 on a failure

The files are merged into one rule set, as --rules merges them. Without a
FILE, the embedded default pack (builtin:default) is used. --only (repeatable)
runs only the cases of that file, against the whole merged set: your file's
cases next to the default pack, without the pack's own.

A failing case prints what the step got: its decision's reason codes and
reasoning, the turn-state violations, or the refusal.
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
	var only cliflag.List
	fs := flag.NewFlagSet("rules "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	if args[0] == "test" {
		fs.Var(&only, "only", "run only this file's test cases (repeatable), against the whole merged set")
	}
	fs.Usage = func() { fmt.Fprint(stderr, rulesUsage) }
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	files := fs.Args()
	if len(files) == 0 {
		files = []string{rulepack.DefaultPath}
	}
	switch args[0] {
	case "check":
		rs, err := loadRules(files, stderr)
		if err != nil {
			return 1
		}
		v, err := schema.New()
		if err != nil {
			fmt.Fprintln(stderr, "processor:", err)
			return 1
		}
		if problems := ruletest.CheckPayloads(v, rs); len(problems) > 0 {
			for _, p := range problems {
				fmt.Fprintln(stderr, p)
			}
			fmt.Fprintf(stderr, "%d test step(s) that the core would refuse or answer payload_invalid; a case that means to test bad input expects it (code, dead_letter, or reason_codes [payload_invalid])\n", len(problems))
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
		if len(only) > 0 {
			kept := results[:0]
			for _, r := range results {
				if slices.ContainsFunc(only, func(f string) bool { return sameFile(f, r.File) }) {
					kept = append(kept, r)
				}
			}
			results = kept
		}
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
			if len(only) > 0 {
				fmt.Fprintf(stderr, "processor: %s carries no test cases (or is not among the files)\n", strings.Join(only, ", "))
				return 1
			}
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

// sameFile reports whether two spellings name one rule file.
func sameFile(a, b string) bool {
	if a == b {
		return true
	}
	fa, errA := filepath.Abs(a)
	fb, errB := filepath.Abs(b)
	return errA == nil && errB == nil && fa == fb
}

// loadRules loads rule files, printing every diagnostic on a line of its
// own.
func loadRules(files []string, stderr io.Writer) (*policy.Set, error) {
	rs, err := rulepack.Load(files...)
	if err == nil {
		// The engine keeps the files' test cases as written; a case that
		// does not read is the file's problem all the same.
		if _, ds := ruletest.Cases(rs); len(ds) > 0 {
			err = ds
		}
	}
	if err != nil {
		var ds policy.Diagnostics
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
