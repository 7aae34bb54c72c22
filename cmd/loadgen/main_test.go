package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// A short sync run against the embedded target reports both phases, every
// envelope decided, none from the posture.
func TestSyncReport(t *testing.T) {
	rep, _, _ := runJSON[syncReport](t, context.Background(), "sync", "--rate", "100", "--duration", "1s", "--sessions", "5", "--partitions", "4", "--json")
	if rep.Raw.Count != 100 || rep.Decide.Count != 100 || rep.FromPosture != 0 || rep.Errors != 0 || rep.Decisions["allow"] != 100 ||
		rep.Raw.P99 <= 0 || rep.Decide.P99 <= 0 || rep.P99Ratio <= 0 {
		t.Fatalf("report %+v", rep)
	}
}

func TestUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), nil, &out, &errOut); code != 2 {
		t.Fatalf("no command: exit %d", code)
	}
	if code := run(context.Background(), []string{"sync", "--rate", "0"}, &out, &errOut); code != 1 {
		t.Fatalf("zero rate: exit %d", code)
	}
	// Every help spells flags --flag and says how the connection is found.
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"sync", "--help"}} {
		out.Reset()
		errOut.Reset()
		if code := run(context.Background(), args, &out, &errOut); code != 0 {
			t.Fatalf("%v: exit %d", args, code)
		}
		help := out.String() + errOut.String()
		if !strings.Contains(help, "NATS connection") || !strings.Contains(help, "TURNGUARD_LOADGEN_NATS_CONTEXT") ||
			(len(args) > 1 && (!strings.Contains(help, "\n  --nats-context name") || strings.Contains(help, "\n  -nats"))) {
			t.Fatalf("%v: help\n%s", args, help)
		}
	}
}
