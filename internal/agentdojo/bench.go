package agentdojo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"

	"github.com/mattn/go-isatty"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/replay"
	rulepack "github.com/turnguard/turnguard/rules"
)

// Options tune a benchmark.
type Options struct {
	// Workers decide sessions in parallel (default: one per CPU). Each
	// session is decided whole by one worker in its own state.
	Workers int
	// Progress, when a terminal, shows a progress line (the runs are
	// counted first, to know the total).
	Progress io.Writer
}

// RunResult is one run's decisions and score.
type RunResult struct {
	*Run
	Session string       `json:"session_id,omitempty"`
	Calls   []CallResult `json:"calls"`
	Score   Score        `json:"score"`
	// Refused and Others: see Decided.
	Refused    int    `json:"refused,omitempty"`
	FirstError string `json:"first_error,omitempty"`
	Others     int    `json:"others_not_allowed,omitempty"`
	FirstOther string `json:"first_other,omitempty"`
}

// CallResult is one tool call and its decision.
type CallResult struct {
	Call
	Decision
}

// Unreadable is a run that could not be read or mapped.
type Unreadable struct {
	Source string `json:"source"`
	// Error says why, beginning with the source (ParseRun's and Build's
	// errors name it).
	Error string `json:"error"`
}

// Report is a benchmark's result: every run's, in the order read, and the
// table.
type Report struct {
	Runs       []RunResult  `json:"runs"`
	Unreadable []Unreadable `json:"unreadable,omitempty"`
	Rows       []Row        `json:"rows"`
	// Rules names the rule set (its files' metadata names) and Revision
	// its content.
	Rules    string `json:"rules"`
	Revision string `json:"revision"`
}

// Bench reads the runs in paths (see Read), decides each with d, scores it
// with rs's catalog (which calls are read-only: rs should be the rules d
// decides with) and tabulates the scores. A run that cannot be read or
// mapped is listed in Report.Unreadable; a file that cannot be read, a
// decider's failure, or ctx ending stops the benchmark with an error.
func Bench(ctx context.Context, d Decider, rs *policy.Set, paths []string, opts Options) (*Report, error) {
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var bar *replay.Progress
	if f, ok := opts.Progress.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
		total := 0
		if err := Read(ctx, paths, func(Item) error { total++; return nil }); err != nil {
			return nil, err
		}
		bar = replay.NewCountProgress(f, uint64(total), "runs")
		defer bar.Done()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type job struct {
		n    int
		item Item
	}
	type result struct {
		n   int
		res *RunResult
		bad *Unreadable
		err error
	}
	jobs := make(chan job, 4*workers)
	results := make(chan result, 4*workers)
	var readErr, decideErr error
	go func() {
		defer close(jobs)
		n := 0
		readErr = Read(ctx, paths, func(it Item) error {
			select {
			case jobs <- job{n, it}:
				n++
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for j := range jobs {
				res, bad, err := One(ctx, d, rs, j.item)
				r := result{n: j.n, res: res, err: err}
				if bad != nil {
					r.bad = &Unreadable{Source: j.item.Source, Error: bad.Error()}
				}
				results <- r
			}
		})
	}
	go func() { wg.Wait(); close(results) }()
	var all []result
	for r := range results {
		if r.err != nil {
			if decideErr == nil {
				decideErr = r.err
				cancel()
			}
			continue
		}
		all = append(all, r)
		if bar != nil {
			bar.At(uint64(len(all)))
		}
	}
	if decideErr != nil {
		return nil, decideErr
	}
	if readErr != nil {
		return nil, readErr
	}
	// Results come back in any order; the report lists them as read.
	slices.SortFunc(all, func(a, b result) int { return a.n - b.n })
	rep := &Report{Rules: rs.Name, Revision: rs.Revision}
	for _, r := range all {
		if r.bad != nil {
			rep.Unreadable = append(rep.Unreadable, *r.bad)
			continue
		}
		rep.Runs = append(rep.Runs, *r.res)
	}
	rep.Rows = Tabulate(rep.Runs)
	return rep, nil
}

// One parses, decides and scores one run. A run that cannot be read or
// mapped is bad (an error for Report.Unreadable); err is the decider's
// failure, which ends a benchmark.
func One(ctx context.Context, d Decider, rs *policy.Set, it Item) (res *RunResult, bad, err error) {
	run, perr := ParseRun(it.Source, it.Data)
	if perr != nil {
		return nil, perr, nil
	}
	s, dec, err := d.DecideRun(ctx, run)
	if err != nil {
		var b badRun
		if errors.As(err, &b) {
			return nil, b.err, nil
		}
		return nil, nil, fmt.Errorf("%s: %w", it.Source, err)
	}
	res = &RunResult{Run: run, Session: s.ID, Calls: make([]CallResult, len(s.Calls)),
		Refused: dec.Refused, FirstError: dec.FirstError, Others: dec.Others, FirstOther: dec.FirstOther}
	for i, c := range s.Calls {
		res.Calls[i] = CallResult{Call: c, Decision: dec.Calls[i]}
	}
	res.Score = ScoreRun(run, s, dec.Calls, rs)
	// The report keeps a run's labels, not its conversation: a corpus of
	// tens of thousands of runs stays small in memory.
	run.Messages, run.Injections = nil, nil
	return res, nil, nil
}

// DefaultRules are the rule files a benchmark uses unless told otherwise:
// the default pack and the AgentDojo operator file.
var DefaultRules = []string{rulepack.DefaultPath, examples.AgentDojoRulesPath}

// LoadRules reads and compiles rule files like policy.LoadFiles, where
// builtin:agentdojo also names the embedded AgentDojo operator file.
func LoadRules(paths ...string) (*policy.Set, error) {
	return rulepack.LoadWith(map[string][]byte{examples.AgentDojoRulesPath: examples.AgentDojoRules()}, paths...)
}
