package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/turnguard/turnguard/internal/cliflag"
	"github.com/turnguard/turnguard/internal/gateway"
)

const connectUsage = `Usage:
  processor connect claude-code --tokens FILE [--url URL] [--settings FILE] [--tenant T] [--name N]

Connects Claude Code to turnguard with no adapter to install: adds a caller
with a fresh bearer token to the callers file given to --http-tokens (as
processor http-token add does), and merges into a Claude Code settings file
an http hook for each of its events, posting to URL/hooks/claude-code with
"Authorization: Bearer $TURNGUARD_HOOK_TOKEN". The token is printed once, on
standard output, so that

  export TURNGUARD_HOOK_TOKEN=$(processor connect claude-code --tokens callers.yaml)

sets it for the claude started from that shell; the settings file holds no
secret. The hooks that can stop something (PreToolUse, UserPromptSubmit,
PostToolUse, PostToolUseFailure) have onFailure "block" (Claude Code 2.1.295
or later): an unreachable processor blocks them instead of letting them
through. The processor reads the callers file at start: (re)start it with
--http and --http-tokens FILE afterwards.

Flags:
`

// connectHookEvents are the Claude Code events the settings hook, and
// whether a failure of the hook blocks (Claude Code's onFailure).
var connectHookEvents = []struct {
	event string
	block bool
}{
	{"SessionStart", false}, {"UserPromptSubmit", true}, {"PreToolUse", true}, {"PostToolUse", true},
	{"PostToolUseFailure", true}, {"Notification", false}, {"Stop", false}, {"SessionEnd", false},
}

// tokenEnvVar is the variable the hooks' Authorization header reads.
const tokenEnvVar = "TURNGUARD_HOOK_TOKEN"

// connectCommand runs "processor connect …" and returns the exit code.
func connectCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "claude-code" {
		fmt.Fprint(stderr, connectUsage)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			return 0
		}
		if len(args) > 0 {
			fmt.Fprintf(stderr, "processor: connect: unknown host %q (claude-code)\n", args[0])
		}
		return 2
	}
	var tokens, url, settings string
	var c gateway.Caller
	fs := flag.NewFlagSet("connect claude-code", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&tokens, "tokens", "", "the callers file of the processor's --http-tokens (default $"+cliflag.EnvName("http-tokens")+")")
	fs.StringVar(&url, "url", "http://127.0.0.1:8787", "the processor's HTTP endpoint (--http) as Claude Code reaches it")
	fs.StringVar(&settings, "settings", filepath.Join(".claude", "settings.local.json"), "the Claude Code settings file to merge the hooks into (created when missing; .claude/settings.local.json is the project's, kept out of git)")
	fs.StringVar(&c.Tenant, "tenant", "default", "the tenant of the sessions Claude Code sends")
	fs.StringVar(&c.Name, "name", "", "the caller's name, unique in the callers file (default claude-code-<8 hex digits of the token's hash>)")
	fs.Usage = cliflag.Usage(fs, connectUsage, "")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if tokens == "" {
		tokens = os.Getenv(cliflag.EnvName("http-tokens"))
	}
	if tokens == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "processor: connect claude-code needs --tokens (see --help)")
		return 2
	}
	hookURL := strings.TrimRight(url, "/") + "/hooks/claude-code"
	if !strings.HasPrefix(hookURL, "http://") && !strings.HasPrefix(hookURL, "https://") {
		fmt.Fprintf(stderr, "processor: --url %q: want http:// or https://\n", url)
		return 2
	}
	token, sum, err := gateway.NewToken()
	if err != nil {
		fmt.Fprintln(stderr, "processor:", err)
		return 1
	}
	c.TokenSHA256 = sum
	if c.Name == "" {
		c.Name = "claude-code-" + sum[:8]
	}
	// The settings first: a file that cannot be merged leaves the callers
	// file untouched.
	if err := mergeClaudeSettings(settings, hookURL); err != nil {
		fmt.Fprintln(stderr, "processor:", err)
		return 1
	}
	if err := gateway.AppendCaller(tokens, c); err != nil {
		fmt.Fprintln(stderr, "processor:", err)
		return 1
	}
	fmt.Fprintf(stderr, "added caller %q (tenant %s) to %s and Claude Code's hooks posting to %s to %s\n"+
		"its bearer token, shown this once, is on standard output: Claude Code reads it from $%s\n",
		c.Name, c.Tenant, tokens, hookURL, settings, tokenEnvVar)
	fmt.Fprintln(stdout, token)
	return 0
}

// claudeHook is one http hook of Claude Code's settings.
func claudeHook(url string, block bool) map[string]any {
	h := map[string]any{"type": "http", "url": url, "headers": map[string]any{"Authorization": "Bearer $" + tokenEnvVar},
		"allowedEnvVars": []any{tokenEnvVar}, "timeout": 10}
	if block {
		h["onFailure"] = "block"
	}
	return h
}

// mergeClaudeSettings adds turnguard's hooks to a Claude Code settings
// file, keeping everything else in it; hooks posting to url that are
// already there are replaced, so that connecting again does not hook an
// event twice.
func mergeClaudeSettings(path, url string) error {
	doc := map[string]any{}
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	case len(bytes.TrimSpace(raw)) > 0:
		if err := json.Unmarshal(raw, &doc); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	hooks := map[string]any{}
	if v, ok := doc["hooks"]; ok {
		if hooks, ok = v.(map[string]any); !ok {
			return fmt.Errorf("%s: hooks is not an object", path)
		}
	}
	for _, e := range connectHookEvents {
		var groups []any
		if v, ok := hooks[e.event]; ok {
			if groups, ok = v.([]any); !ok {
				return fmt.Errorf("%s: hooks.%s is not a list", path, e.event)
			}
		}
		kept := groups[:0]
		for _, g := range groups {
			if !postsTo(g, url) {
				kept = append(kept, g)
			}
		}
		hooks[e.event] = append(kept, map[string]any{"hooks": []any{claudeHook(url, e.block)}})
	}
	doc["hooks"] = hooks
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return os.WriteFile(path, append(out, '\n'), 0o600)
}

// postsTo reports whether a hook group holds an http hook posting to url.
func postsTo(group any, url string) bool {
	g, _ := group.(map[string]any)
	hs, _ := g["hooks"].([]any)
	for _, h := range hs {
		if m, _ := h.(map[string]any); m["type"] == "http" && m["url"] == url {
			return true
		}
	}
	return false
}
