package cliflag_test

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/cliflag"
)

// settings is a flag set as a command defines it, with what it parsed.
type settings struct {
	fs      *flag.FlagSet
	url     *string
	window  *time.Duration
	require *bool
	rules   cliflag.List
}

func newSettings() *settings {
	s := &settings{fs: flag.NewFlagSet("x", flag.ContinueOnError)}
	s.fs.SetOutput(io.Discard)
	s.fs.String(cliflag.ConfigFlag, "", "")
	s.url = s.fs.String("nats-url", "", "")
	s.window = s.fs.Duration("skew-window", time.Minute, "")
	s.require = s.fs.Bool("require-signatures", false, "")
	s.fs.Var(&s.rules, "rules", "")
	return s
}

// The file comes first, the environment overrides it, the command line
// both; a list any of them sets replaces the one before.
func TestConfigPrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "turnguard.yaml")
	body := "nats-url: nats://file:4222\nskew_window: 5m\nrequire-signatures: true\nrules: [builtin:default, ours.yaml]\n"
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		env        map[string]string
		args       []string
		wantURL    string
		wantWindow time.Duration
		wantRules  []string
	}{
		{"the file", nil, nil, "nats://file:4222", 5 * time.Minute, []string{"builtin:default", "ours.yaml"}},
		{"the environment over the file", map[string]string{"TURNGUARD_NATS_URL": "nats://env:4222", "TURNGUARD_RULES": "env.yaml"}, nil,
			"nats://env:4222", 5 * time.Minute, []string{"env.yaml"}},
		{"the command line over both", map[string]string{"TURNGUARD_RULES": "env.yaml"}, []string{"--skew-window", "0", "--rules", "a.yaml", "--rules", "b.yaml"},
			"nats://file:4222", 0, []string{"a.yaml", "b.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			s := newSettings()
			args := append([]string{"--config", file}, tt.args...)
			if got := cliflag.ConfigPath(args); got != file {
				t.Fatalf("ConfigPath = %q", got)
			}
			if err := cliflag.ApplyConfig(s.fs, file, nil); err != nil {
				t.Fatal(err)
			}
			if err := cliflag.ApplyEnv(s.fs); err != nil {
				t.Fatal(err)
			}
			if err := s.fs.Parse(args); err != nil {
				t.Fatal(err)
			}
			if *s.url != tt.wantURL || *s.window != tt.wantWindow || !*s.require || !slices.Equal(s.rules, tt.wantRules) {
				t.Fatalf("url %q window %v require %v rules %v, want %q %v true %v", *s.url, *s.window, *s.require, s.rules, tt.wantURL, tt.wantWindow, tt.wantRules)
			}
		})
	}
}

func TestConfigRefuses(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"an unknown setting, with its line", "nats-url: x\nskew-windw: 1m\n", "line 2: skew-windw: no such setting"},
		{"a list for a single value", "nats-url: [a, b]\n", "takes one value, not a list"},
		{"a mapping", "rules: {a: b}\n", "want a value or a list"},
		{"a bad value", "skew-window: soon\n", "line 1: skew-window"},
		{"set twice", "nats-url: a\nnats_url: b\n", "set twice"},
		{"another config", "config: other.yaml\n", "cannot name another"},
		{"not a mapping", "- a\n", "want a mapping"},
		{"not YAML", "a: [\n", "--config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(file, []byte(tt.body), 0o600); err != nil {
				t.Fatal(err)
			}
			err := cliflag.ApplyConfig(newSettings().fs, file, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
	if err := cliflag.ApplyConfig(newSettings().fs, filepath.Join(t.TempDir(), "missing.yaml"), nil); err == nil {
		t.Fatal("a missing file was taken")
	}
}

// A command that takes only some settings from the file ignores the rest,
// flags of its own included.
func TestConfigOnly(t *testing.T) {
	file := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(file, []byte("partitions: 16\nnats-url: a\nskew-window: 3m\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := newSettings()
	if err := cliflag.ApplyConfig(s.fs, file, func(name string) bool { return name == "skew-window" }); err != nil || *s.url != "" || *s.window != 3*time.Minute {
		t.Fatalf("%v, url %q window %v", err, *s.url, *s.window)
	}
}

func TestConfigPath(t *testing.T) {
	t.Setenv("TURNGUARD_CONFIG", "env.yaml")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", "a.yaml"}, "a.yaml"},
		{[]string{"-config=b.yaml", "--rules", "x"}, "b.yaml"},
		{[]string{"--rules", "x"}, "env.yaml"},
		{[]string{"--", "--config", "c.yaml"}, "env.yaml"},
	} {
		if got := cliflag.ConfigPath(tt.args); got != tt.want {
			t.Errorf("ConfigPath(%q) = %q, want %q", tt.args, got, tt.want)
		}
	}
}
