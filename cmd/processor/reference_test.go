package main

import (
	"bytes"
	"context"
	"flag"
	"path/filepath"
	"testing"

	"github.com/turnguard/turnguard/internal/clidoc"
)

var updateReference = flag.Bool("update", false, "rewrite docs/reference/processor.md from the flag definitions")

// TestHelpReference: docs/reference/processor.md is what --help prints for
// the processor and each of its subcommands (go test -update rewrites it).
func TestHelpReference(t *testing.T) {
	commands := [][]string{
		{"--help"}, {"rules", "--help"}, {"creds", "--help"}, {"http-token", "add", "--help"},
		{"connect", "claude-code", "--help"}, {"config", "--help"}, {"init", "--help"},
	}
	page := clidoc.Reference("processor", "What `--help` prints, generated from the flag definitions (`go test ./cmd/processor -run TestHelpReference -update`);\n"+
		"the test fails when the two differ. Every flag is also a `TURNGUARD_<FLAG_NAME>` variable and a key of\n"+
		"the `--config` file ([OPERATING.md](../OPERATING.md#configuration)).", commands, func(args []string) string {
		var out bytes.Buffer
		run(context.Background(), args, &out, &out)
		return out.String()
	})
	clidoc.Check(t, filepath.Join("..", "..", "docs", "reference", "processor.md"), page, *updateReference)
}
