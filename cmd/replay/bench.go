package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/turnguard/turnguard/internal/agentdojo"
	"github.com/turnguard/turnguard/internal/cliflag"
)

const benchUsage = `Usage: replay bench SUITE [flags] FILE|DIR...

Benchmarks: decide recorded agent runs in-process with the processor's core
and score the decisions against the runs' labels.

  agentdojo   AgentDojo's recorded runs (*.jsonl.gz, *.jsonl, or AgentDojo's
              runs/<pipeline>/<suite>/<user_task>/<attack>/<task>.json tree)

Run "replay bench agentdojo --help" for its flags.
`

func benchCommand(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) == 0 {
		fmt.Fprint(stderr, benchUsage)
		return exitError, errors.New("a benchmark is required")
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, benchUsage)
		return exitOK, nil
	case "agentdojo":
		return benchAgentDojo(ctx, args[1:], stdout, stderr)
	}
	fmt.Fprint(stderr, benchUsage)
	return exitError, fmt.Errorf("unknown benchmark %q", args[0])
}

func benchAgentDojo(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	var (
		core      cliflag.Core
		ruleFiles cliflag.List
		jsonOut   bool
		workers   int
		output    string
		live      string
		token     string
	)
	// Not newFlagSet: a benchmark connects to no NATS server.
	fs := flag.NewFlagSet("replay bench agentdojo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = cliflag.Usage(fs, "Usage: replay bench agentdojo [--rules FILE...] [--json] [--workers N] [--live URL [--token T]] FILE|DIR...\n\n"+
		"Decides AgentDojo's recorded runs (*.jsonl.gz, *.jsonl, or AgentDojo's runs/ tree) and scores them:\n"+
		"docs/EFFECTIVENESS.md has the mapping, the scoring and the baseline.\n\n"+
		"Flags (each can also be set as "+cliflag.EnvPrefix+"<FLAG_NAME>):\n", "")
	core.Register(fs)
	fs.Var(&ruleFiles, "rules", "rule files to decide with; repeat or separate with commas (default builtin:default,builtin:agentdojo: the default pack and the embedded examples/agentdojo/rules.yaml)")
	fs.BoolVar(&jsonOut, "json", false, "write the whole report as JSON: the table's rows and every run's calls with their decisions and reasons")
	fs.IntVar(&workers, "workers", 0, "sessions decided in parallel (default: one per CPU)")
	fs.StringVar(&output, "output", "", "write to this file instead of standard output")
	fs.StringVar(&live, "live", "", "send the sessions to a running processor's HTTP endpoint (e.g. http://127.0.0.1:8787/acs) instead of deciding in-process; --rules must then be the processor's rules (the scorer reads their catalog)")
	fs.StringVar(&token, "token", "", "with --live, the caller's bearer token (better in the environment, "+cliflag.EnvPrefix+"TOKEN)")
	if err := cliflag.ApplyEnv(fs); err != nil {
		return exitError, err
	}
	if err := fs.Parse(args); err != nil {
		return exitError, err
	}
	paths := fs.Args()
	if len(paths) == 0 {
		return exitError, errors.New("give the AgentDojo run files or directories to read")
	}
	if workers < 0 {
		return exitError, errors.New("--workers must not be negative")
	}
	g, _, err := newGuardian(core)
	if err != nil {
		return exitError, err
	}
	files := []string(ruleFiles)
	if len(files) == 0 {
		files = agentdojo.DefaultRules
	}
	rs, err := agentdojo.LoadRules(files...)
	if err != nil {
		return exitError, fmt.Errorf("rules:\n%w", err)
	}
	var decider agentdojo.Decider = agentdojo.InProcess{Guardian: g, Rules: rs}
	if live != "" {
		// Session ids of this run's own: the processor keeps the sessions
		// of earlier runs, and refuses request ids it has seen.
		decider = &agentdojo.Live{URL: live, Token: token, Client: &http.Client{Timeout: time.Minute}, Salt: time.Now().UTC().Format(time.RFC3339Nano)}
	} else if token != "" {
		return exitError, errors.New("--token needs --live")
	}
	began := time.Now()
	rep, err := agentdojo.Bench(ctx, decider, rs, paths, agentdojo.Options{Workers: workers, Progress: stderr})
	if err != nil {
		return exitError, err
	}
	elapsed := time.Since(began)
	if werr := writeTo(output, stdout, func(w io.Writer) error {
		if jsonOut {
			return writeJSON(w, rep)
		}
		return agentdojo.WriteTable(w, rep)
	}); werr != nil {
		return exitError, werr
	}
	fmt.Fprintf(stderr, "%d runs decided in %s\n", len(rep.Runs), elapsed.Round(time.Millisecond))
	for _, u := range rep.Unreadable {
		fmt.Fprintf(stderr, "unreadable: %s\n", u.Error)
	}
	if len(rep.Unreadable) > 0 {
		return exitError, nil
	}
	return exitOK, nil
}
