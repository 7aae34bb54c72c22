package reload

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/rules"
	"github.com/turnguard/turnguard/internal/stream"
	rulepack "github.com/turnguard/turnguard/rules"
)

// TestResults: a reload that loads is reported to Loaded and swapped in, one
// that does not to Failed, and the last good set keeps running.
func TestResults(t *testing.T) {
	first, err := rules.LoadFiles(rulepack.DefaultPath)
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
			src := stream.NewRuleSource(first)
			results := make(chan error, 1)
			hup := make(chan os.Signal, 1)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- Run(ctx, Config{Paths: tc.paths, Source: src, Signals: hup, Log: zerolog.Nop(),
					Failed: func(err error) { results <- err },
					Loaded: func(*rules.Set) { results <- nil }})
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
