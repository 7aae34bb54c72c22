package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/testkit/versiontest"
)

func TestVersionFlag(t *testing.T) {
	versiontest.Check(t, "turnguard", func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		return run(ctx, args, strings.NewReader(""), stdout, stderr)
	}, "--version", "version")
}
