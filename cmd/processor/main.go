// Command processor runs turnguard: the streaming ACS Guardian on NATS
// JetStream. Without --nats-url it starts an embedded NATS JetStream server
// with its data under --data-dir and a client port on --listen.
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

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "version":
			fmt.Fprintln(stdout, version.String("processor"))
			return 0
		case "rules":
			return rulesCommand(args[1:], stdout, stderr)
		case "creds":
			return credsCommand(args[1:], stdout, stderr)
		case "http-token":
			return httpTokenCommand(args[1:], stdout, stderr)
		case "connect":
			return connectCommand(args[1:], stdout, stderr)
		case "config":
			return configCommand(args[1:], stdout, stderr)
		case "help":
			// As --help: the usage, every flag, and the subcommands.
			args = []string{"--help"}
		case "init":
			return initCommand(args[1:], stdout, stderr)
		}
	}
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "processor:", err)
		return 2
	}
	if cfg.showVersion {
		fmt.Fprintln(stdout, version.String("processor"))
		return 0
	}
	if err := serve(ctx, cfg, stderr); err != nil {
		fmt.Fprintln(stderr, "processor:", err)
		return 1
	}
	return 0
}
