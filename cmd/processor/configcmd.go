package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/rs/zerolog"
)

const configUsage = `Usage:
  processor config check [--config FILE] [flags]

Checks the processor's settings as a start would — the config file, the
TURNGUARD_* variables and the flags, then the files they name (rules, keys,
callers, certificates) — without starting anything, and prints what it
found. Exit status 0: a start would get past them; 1 or 2: it would not,
and why is on standard error.
`

// configCommand runs "processor config …" and returns the exit code.
func configCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprint(stderr, configUsage)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			return 0
		}
		return 2
	}
	cfg, err := parseFlags(args[1:], stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "processor: config check:", err)
		return 2
	}
	pre, err := preflight(cfg, zerolog.Nop())
	if err != nil {
		fmt.Fprintln(stderr, "processor: config check:", err)
		return 1
	}
	fmt.Fprintf(stdout, "rules      %s (%s, revision %s)\n", strings.Join(cfg.rules, ", "), pre.rules.Name, pre.rules.Revision)
	keys := "none: requests are not verified"
	if cfg.core.KeysFile != "" {
		keys = cfg.core.KeysFile
		if cfg.core.RequireSignatures {
			keys += ", unsigned requests refused"
		}
	}
	fmt.Fprintf(stdout, "keys       %s\n", keys)
	fmt.Fprintf(stdout, "intake     max-envelope-bytes %d, skew-window %s, on-rule-error %s\n", cfg.core.MaxEnvelopeBytes, cfg.core.SkewWindow, cfg.core.OnRuleError)
	nats := "embedded, data under " + cfg.dataDir
	if cfg.target.URL != "" {
		nats = cfg.target.URL
	}
	fmt.Fprintf(stdout, "nats       %s\n", nats)
	http := "off"
	if cfg.httpAddr != "" {
		http = cfg.httpAddr
	}
	fmt.Fprintf(stdout, "http       %s\n", http)
	fmt.Fprintln(stdout, "ok")
	return 0
}
