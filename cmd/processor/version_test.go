package main

import (
	"bytes"
	"testing"

	"github.com/turnguard/turnguard/internal/testkit/versiontest"
)

func TestVersionFlag(t *testing.T) {
	versiontest.Check(t, "processor", run, "--version", "version")
}

// --version wins over flags that would otherwise stop the processor.
func TestVersionFlagBeforeValidation(t *testing.T) {
	versiontest.Check(t, "processor", run, "--on-decision-failure maybe --version")
}

// TURNGUARD_VERSION is scripts/build-images.sh's input, not --version: a
// processor started with it set must still serve.
func TestVersionFlagIgnoresEnvironment(t *testing.T) {
	t.Setenv("TURNGUARD_VERSION", "true")
	c, err := parseFlags(nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c.showVersion {
		t.Fatal("TURNGUARD_VERSION set --version")
	}
}
