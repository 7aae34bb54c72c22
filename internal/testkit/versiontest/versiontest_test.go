package versiontest

import (
	"context"
	"fmt"
	"io"
	"testing"
)

// recorder is a testing.TB that notes failures instead of failing the test.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		name    string
		run     Run
		wantErr int
	}{
		{"the version line", printing("tool v1 go1.26\n", 0), 0},
		{"a failing exit", printing("tool v1 go1.26\n", 2), 2},
		{"another name", printing("other v1 go1.26\n", 0), 2},
		{"the name without a space", printing("toolbox v1\n", 0), 2},
		{"two lines", printing("tool v1\ngo1.26\n", 0), 2},
		{"no newline", printing("tool v1", 0), 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &recorder{TB: t}
			Check(r, "tool", c.run, "--version", "version")
			if len(r.errors) != c.wantErr {
				t.Fatalf("%d failures %q, want %d", len(r.errors), r.errors, c.wantErr)
			}
		})
	}
}

func TestCheckSplitsTheCommandLine(t *testing.T) {
	var got [][]string
	run := func(_ context.Context, args []string, stdout, _ io.Writer) int {
		got = append(got, args)
		fmt.Fprintln(stdout, "tool v1")
		return 0
	}
	Check(t, "tool", run, "--log-level x --version", "version")
	if fmt.Sprint(got) != "[[--log-level x --version] [version]]" {
		t.Fatalf("ran with %q", got)
	}
}

func printing(out string, code int) Run {
	return func(_ context.Context, _ []string, stdout, _ io.Writer) int {
		fmt.Fprint(stdout, out)
		return code
	}
}
