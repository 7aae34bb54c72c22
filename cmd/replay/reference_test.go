package main

import (
	"bytes"
	"context"
	"flag"
	"path/filepath"
	"testing"

	"github.com/turnguard/turnguard/internal/clidoc"
)

var update = flag.Bool("update", false, "rewrite docs/reference/replay.md from the flag definitions")

// TestHelpReference: docs/reference/replay.md is what --help prints for
// replay and each of its commands (go test -update rewrites it).
func TestHelpReference(t *testing.T) {
	commands := [][]string{
		{"--help"}, {"sessions", "--help"}, {"timeline", "--help"}, {"run", "--help"}, {"verify", "--help"},
		{"tail", "--help"}, {"bench", "agentdojo", "--help"},
	}
	page := clidoc.Reference("replay", "What `--help` prints, generated from the flag definitions (`go test ./cmd/replay -run TestHelpReference -update`);\n"+
		"the test fails when the two differ. Every flag is also a `TURNGUARD_<FLAG_NAME>` variable, but replay's credential and\n"+
		"receipt key, which are `TURNGUARD_REPLAY_NATS_CREDS`, `_NATS_CONTEXT` and `_RECEIPT_KEY`; `run`, `timeline` and `verify` read\n"+
		"the processor's `--config` file ([OPERATING.md](../OPERATING.md#configuration)).", commands, func(args []string) string {
		var out bytes.Buffer
		run(context.Background(), args, &out, &out)
		return out.String()
	})
	clidoc.Check(t, filepath.Join("..", "..", "docs", "reference", "replay.md"), page, *update)
}
