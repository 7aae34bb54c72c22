package reload

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/core/policy"
	rulepack "github.com/turnguard/turnguard/rules"
)

// TestResults: a reload that loads is reported to Loaded and swapped in, one
// that does not to Failed, and the last good set keeps running.
func TestResults(t *testing.T) {
	first, err := rulepack.Load(rulepack.DefaultPath)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("rules: [oops\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		paths  []string
		loaded bool
	}{{"good", []string{rulepack.DefaultPath}, true}, {"bad", []string{bad}, false}} {
		t.Run(tc.name, func(t *testing.T) {
			src := policy.NewSource(first)
			results := make(chan error, 1)
			hup := make(chan os.Signal, 1)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- Run(ctx, Config{Paths: tc.paths, Source: src, Signals: hup, Log: zerolog.Nop(),
					Failed: func(err error) { results <- err },
					Loaded: func(*policy.Set) { results <- nil }})
			}()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Error(err)
				}
			}()
			hup <- os.Interrupt
			select {
			case err := <-results:
				if (err == nil) != tc.loaded {
					t.Fatalf("reload result %v, want loaded %v", err, tc.loaded)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no reload result")
			}
			if swapped := src.Current() != first; swapped != tc.loaded {
				t.Fatalf("the rule set was swapped: %v, want %v", swapped, tc.loaded)
			}
		})
	}
}

// TestReloadRevision: a reload cites the revision of the content it
// loaded, whatever the file is called — a copy of the default pack
// reloads as the revision the processor started with, so its decisions'
// policy_version does not change — and an edit gives another.
func TestReloadRevision(t *testing.T) {
	start, err := rulepack.Load(rulepack.DefaultPath)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	same, edited := filepath.Join(dir, "default.yaml"), filepath.Join(dir, "edited.yaml")
	if err := os.WriteFile(same, rulepack.Default(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(edited, append(slices.Clone(rulepack.Default()), "\n# edited\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		path string
		same bool
	}{{"a copy elsewhere", same, true}, {"an edited copy", edited, false}} {
		t.Run(tc.name, func(t *testing.T) {
			src := policy.NewSource(start)
			loaded := make(chan *policy.Set, 1)
			hup := make(chan os.Signal, 1)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- Run(ctx, Config{Paths: []string{tc.path}, Source: src, Signals: hup, Log: zerolog.Nop(),
					Failed: func(err error) { t.Errorf("reload failed: %v", err) },
					Loaded: func(rs *policy.Set) { loaded <- rs }})
			}()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Error(err)
				}
			}()
			hup <- os.Interrupt
			select {
			case rs := <-loaded:
				if (rs.Revision == start.Revision) != tc.same {
					t.Errorf("reloaded revision %s, started with %s; want same=%v", rs.Revision, start.Revision, tc.same)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no reload")
			}
		})
	}
}
