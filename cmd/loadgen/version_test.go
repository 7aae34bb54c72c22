package main

import (
	"testing"

	"github.com/turnguard/turnguard/internal/testkit/versiontest"
)

func TestVersionFlag(t *testing.T) {
	versiontest.Check(t, "loadgen", run, "--version", "version")
}
