package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/testkit/versiontest"
)

func TestVersionFlag(t *testing.T) {
	versiontest.Check(t, "healthcheck", func(_ context.Context, args []string, stdout, stderr io.Writer) int {
		return run(args, stdout, stderr, time.Second)
	}, "--version")
}
