// Command loadgen drives turnguard with ACS traffic and measures it, next
// to raw JetStream baselines taken in the same run against the same server,
// so every figure is also a ratio.
//
//	loadgen run [flags]    generated sessions (internal/traffic) as fast as
//	                       possible or at a rate, decision latency, and an
//	                       exact reconciliation from the streams; raw async
//	                       publish / durable consume baselines
//	loadgen curve [flags]  the live capacity (closed loop), the backlog
//	                       capacity, and decision latency at fractions of
//	                       the live capacity, each on a fresh embedded
//	                       target
//	loadgen sync [flags]   synchronous decisions (pkg/client) at a fixed
//	                       rate vs. raw synchronous JetStream publishes
//
// Without --nats-url it starts an embedded NATS server and an in-process
// processor (default rule pack) in a temporary directory, so one command
// measures the whole path on this machine.
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

	"github.com/turnguard/turnguard/internal/cliflag"
	"github.com/turnguard/turnguard/internal/natsconn"
	"github.com/turnguard/turnguard/internal/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `Usage:
  loadgen run [flags]     streaming load with expected decisions, reconciled from the streams
  loadgen curve [flags]   live and backlog capacity, then latency at fractions of the live capacity
  loadgen sync [flags]    synchronous decision round trips at a fixed rate
  loadgen version         print the version (also --version)

Run "loadgen run -h", "loadgen curve -h" or "loadgen sync -h" for their flags.
`

// parseFlags applies the TURNGUARD_* variables, then the command line, as
// every turnguard command does.
func parseFlags(fs *flag.FlagSet, args []string) error {
	// Its credential is an admin's, not the processor's: variables of its
	// own (TURNGUARD_LOADGEN_NATS_CREDS, _NATS_CONTEXT).
	if err := cliflag.ApplyEnvAs(fs, natsconn.EnvRenames(loadgenEnvPrefix)); err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "run":
		err = runRun(ctx, args[1:], stdout, stderr)
	case "curve":
		err = runCurve(ctx, args[1:], stdout, stderr)
	case "sync":
		err = runSync(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage+"\n"+loadgenNATSHelp)
		return 0
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, version.String("loadgen"))
		return 0
	default:
		fmt.Fprintf(stderr, "loadgen: unknown command %q\n%s", args[0], usage)
		return 2
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}

	if err != nil {
		fmt.Fprintln(stderr, "loadgen:", err)
		return 1
	}
	return 0
}

// loadgenNATSHelp ends every loadgen --help.
var loadgenNATSHelp = natsconn.Help(natsconn.Options{EnvPrefix: loadgenEnvPrefix}, "an embedded server with in-process processors")

// loadgenEnvPrefix names the variables of loadgen's credential.
const loadgenEnvPrefix = "TURNGUARD_LOADGEN_"
