package main

import (
	"bytes"
	"context"
	"reflect"
	"runtime"
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
	// Every answered round trip is split in three, and no part outlasts
	// the whole.
	if rep.BeforeCall.Count != 100 || rep.UntilStored.Count != 100 || rep.AfterStored.Count != 100 || rep.UntilStored.P50 <= 0 || rep.AfterStored.P50 <= 0 ||
		rep.BeforeCall.Max > rep.Decide.Max || rep.UntilStored.Max > rep.Decide.Max || rep.AfterStored.Max > rep.Decide.Max {
		t.Fatalf("legs of the report %+v", rep)
	}
	if p := rep.Process; (runtime.GOOS == "linux" && (p.CPUBusy <= 0 || p.CPUBusy > 1 || p.CPUMicrosPer <= 0)) || p.GCShare < 0 || p.GCShare > 1 {
		t.Fatalf("the process's use: %+v", p)
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

// Every field the reports print with --json is named in its command's
// help, so that the help cannot drift from the report.
func TestHelpNamesEveryReportField(t *testing.T) {
	for _, tc := range []struct {
		help   string
		report any
	}{
		{syncHelp, syncReport{}}, {syncHelp, latencies{}}, {runHelp, processUse{}},
		{runHelp, runReport{}}, {runHelp, reconcileReport{}}, {runHelp, baselineReport{}}, {runHelp, tally{}},
		{curveHelp, curveReport{}}, {curveHelp, curveStep{}},
	} {
		rt := reflect.TypeOf(tc.report)
		for i := range rt.NumField() {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			if !strings.Contains(tc.help, name) {
				t.Errorf("%s.%s: %q is not in the help", rt.Name(), rt.Field(i).Name, name)
			}
		}
	}
}
