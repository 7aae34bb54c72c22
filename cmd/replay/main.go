// Command replay reads what turnguard recorded — ACS_HOOKS, ACS_DECISIONS
// and ACS_ALERTS — for incident analysis and rule back-testing. It runs
// the processor's pure decision core and never publishes.
//
//	replay sessions  [--tenant T] [range] [--agent A]
//	replay timeline  [--tenant T] --session S [--format table|json|html] [--output FILE]
//	replay run       --rules FILE... [--tenant T] [range | --session S] [--diff] [--fail-on-diff [--allow-empty]]
//	replay verify    [--tenant T] --session S [--keys FILE] [--receipt-key PEM] [--system-alerts]
//	replay verify    --all [--tenant T] [range] [--receipt-key PEM]
//	replay tail      [--tenant T] [--session S] [--since D] [--json] [--count N]
//	replay bench agentdojo [--rules FILE...] [--json] [--workers N] FILE|DIR...
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/turnguard/turnguard/internal/version"
)

// Exit codes.
const (
	exitOK          = 0
	exitDifferences = 1 // run --fail-on-diff found changes; verify found problems
	exitError       = 2
	// exitNothingCompared: run --fail-on-diff compared no envelope (a
	// wrong tenant or range), so it proved nothing; --allow-empty makes
	// that exit 0.
	exitNothingCompared = 3
	exitInterrupted     = 130
)

const usage = `Usage: replay COMMAND [flags]

Commands:
  sessions   the sessions in a time range: first/last time, agent, turns,
             envelopes, denies, alerts, open/closed
  timeline   one session step by step: turns, tools, decisions, taint,
             alerts, violations and the hash-chain check (table, json, html)
  run        re-decide history with other rules and report what changes
  verify     recompute a session's hash chain, check every decision's HMAC
             signature and Ed25519 receipt offline, and report every message
             on its decision subject and every alert that is not verified;
             --all audits every decision and alert in range, of all tenants
  tail       follow decisions and alerts live, one line each, receipts
             verified as they arrive (--json for one object per line)
  bench      benchmark rules on recorded agent runs: "bench agentdojo" decides
             AgentDojo's runs in-process and scores stopped attacks against
             the user's tasks denied (no connection needed)
  version    print the version (also --version)

Connect with --nats-url (and --nats-creds) or --nats-context, or open the
embedded server's store with --data-dir (default ./data) when no processor
runs on it.
Run "replay COMMAND --help" for a command's flags.

--tenant T limits any command to one tenant; "*", the default everywhere,
is every tenant (for --session: the one tenant that has the session).

Exit codes: 0 ok; 1 run --fail-on-diff found changes, or verify's result
is not "verified"; 2 error; 3 run --fail-on-diff compared nothing (no
envelope selected in range: a wrong tenant or range?), unless
--allow-empty; 130 interrupted.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitError
	}
	commands := map[string]func(context.Context, []string, io.Writer, io.Writer) (int, error){
		"sessions": sessionsCommand,
		"timeline": timelineCommand,
		"run":      runCommand,
		"verify":   verifyCommand,
		"tail":     tailCommand,
		"bench":    benchCommand,
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage+"\n"+replayNATSHelp)
		return exitOK
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, version.String("replay"))
		return exitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "replay: unknown command %q\n\n%s", args[0], usage)
		return exitError
	}
	code, err := cmd(ctx, args[1:], stdout, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "replay: interrupted")
		return exitInterrupted
	case err != nil:
		fmt.Fprintf(stderr, "replay %s: %v\n", args[0], err)
		return exitError
	}
	return code
}
