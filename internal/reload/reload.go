// Package reload keeps the processor's rule set current without a restart:
// on SIGHUP or when a rule file changes it loads the files again and swaps
// the new set in whole. A set that does not load is refused whole; the last
// good one keeps running and the failure is reported.
package reload

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/core/policy"
	rulepack "github.com/turnguard/turnguard/rules"
)

// debounce lets an editor finish writing (truncate, write, rename) before
// the files are read.
const debounce = 250 * time.Millisecond

// Config says what to reload and whom to tell.
type Config struct {
	// Paths are the rule files as given on the command line;
	// builtin:default is not watched.
	Paths  []string
	Source *policy.Source
	// Signals delivers SIGHUP (or anything else that should trigger a
	// reload); nil disables it.
	Signals <-chan os.Signal
	// Failed is called with the load error of a refused rule set.
	Failed func(error)
	// Loaded is called with a rule set that loaded and is now in force
	// (nil: nobody is told).
	Loaded func(*policy.Set)
	Log    zerolog.Logger
}

// Run reloads until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	var watched []string
	dirs := map[string]bool{}
	for _, p := range cfg.Paths {
		if p == "builtin:default" {
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return err
		}
		watched = append(watched, abs)
		// Watch the directory: editors replace files, which a watch on the
		// file itself would lose.
		if dir := filepath.Dir(abs); !dirs[dir] {
			if err := w.Add(dir); err != nil {
				return err
			}
			dirs[dir] = true
		}
	}
	var timer <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-cfg.Signals:
			cfg.Log.Info().Msg("SIGHUP: reloading rules")
			load(cfg)
		case ev := <-w.Events:
			if slices.Contains(watched, filepath.Clean(ev.Name)) && ev.Op&(fsnotify.Write|fsnotify.Create|fsnotify.Rename|fsnotify.Remove) != 0 {
				timer = time.After(debounce)
			}
		case err := <-w.Errors:
			cfg.Log.Warn().Err(err).Msg("watching rule files")
		case <-timer:
			timer = nil
			cfg.Log.Info().Msg("rule file changed: reloading rules")
			load(cfg)
		}
	}
}

func load(cfg Config) {
	rs, err := rulepack.Load(cfg.Paths...)
	if err != nil {
		cfg.Log.Error().Err(err).Str("keeping", cfg.Source.Current().Revision).Msg("rule set refused; the last good one keeps running")
		if cfg.Failed != nil {
			cfg.Failed(err)
		}
		return
	}
	prev := cfg.Source.Swap(rs)
	cfg.Log.Info().Str("ruleset", rs.Name).Str("revision", rs.Revision).Str("previous", prev.Revision).Int("rules", len(rs.Rules)).Msg("rules reloaded")
	if cfg.Loaded != nil {
		cfg.Loaded(rs)
	}
}
