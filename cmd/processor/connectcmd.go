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
  processor connect codex|cursor --tokens FILE [--url URL] [--settings FILE] [--hook-command CMD] [--tenant T] [--name N]

Connects an agent host to turnguard with no adapter to install: adds a caller
with a fresh bearer token to the callers file given to --http-tokens (as
processor http-token add does), and merges the host's hooks into its settings
file, keeping what is there:

  claude-code  an http hook for each Claude Code event, posting to
               URL/hooks/claude-code with "Authorization: Bearer
               $TURNGUARD_HOOK_TOKEN" (.claude/settings.local.json)
  codex        a command hook on UserPromptSubmit, PreToolUse and PostToolUse running
               "turnguard hook codex --url URL" (.codex/hooks.json), which
               posts to URL/hooks/codex and fails closed
  cursor       a command hook on Cursor's agent events running "turnguard
               hook cursor --url URL" (.cursor/hooks.json), failClosed on
               preToolUse and beforeSubmitPrompt

The token is printed once, on standard output, so that

  export TURNGUARD_HOOK_TOKEN=$(processor connect claude-code --tokens callers.yaml)

sets it for the agent started from that shell; the settings hold no secret.
Hooks that can stop something fail closed when the processor cannot be
reached (Claude Code: onFailure "block", 2.1.295 or later; Codex and
Cursor: the turnguard command denies; Cursor: failClosed too). The processor reads the callers file at start:
(re)start it with --http and --http-tokens FILE afterwards.

Flags:
`

// tokenEnvVar is the variable the hooks read the token from.
const tokenEnvVar = "TURNGUARD_HOOK_TOKEN"

// hostHooks is how one host's settings file hooks turnguard.
type hostHooks struct {
	settings string
	// events are the host's events hooked, and whether a failure of the
	// hook blocks (Claude Code's onFailure).
	events []hookEvent
	// hook is turnguard's hook of an event; ours tells turnguard's hooks
	// already in the file.
	hook func(c connectConfig, block bool) map[string]any
	ours func(c connectConfig, h map[string]any) bool
	// flat: an event lists its hooks (Cursor), rather than groups of them
	// with a matcher (Claude Code, Codex); version is the file's
	// "version" when it has none.
	flat    bool
	version int
}

type hookEvent struct {
	event string
	block bool
}

type connectConfig struct {
	url, command string
}

var connectHosts = map[string]hostHooks{
	"claude-code": {
		settings: filepath.Join(".claude", "settings.local.json"),
		events: []hookEvent{{"SessionStart", false}, {"UserPromptSubmit", true}, {"PreToolUse", true}, {"PostToolUse", true},
			{"PostToolUseFailure", true}, {"Notification", false}, {"Stop", false}, {"SubagentStart", false}, {"SubagentStop", false},
			{"SessionEnd", false}},
		hook: func(c connectConfig, block bool) map[string]any {
			h := map[string]any{"type": "http", "url": c.url + "/hooks/claude-code", "headers": map[string]any{"Authorization": "Bearer $" + tokenEnvVar},
				"allowedEnvVars": []any{tokenEnvVar}, "timeout": 10}
			if block {
				h["onFailure"] = "block"
			}
			return h
		},
		ours: func(c connectConfig, h map[string]any) bool {
			return h["type"] == "http" && h["url"] == c.url+"/hooks/claude-code"
		},
	},
	"codex": {
		settings: filepath.Join(".codex", "hooks.json"),
		events:   []hookEvent{{"UserPromptSubmit", true}, {"PreToolUse", true}, {"PostToolUse", true}},
		hook: func(c connectConfig, _ bool) map[string]any {
			return map[string]any{"type": "command", "command": c.command + " hook codex --url " + c.url, "timeout": 30,
				"statusMessage": "Checking with turnguard"}
		},
		ours: func(c connectConfig, h map[string]any) bool {
			cmd, _ := h["command"].(string)
			return h["type"] == "command" && strings.Contains(cmd, " hook codex ")
		},
	},
	"cursor": {
		settings: filepath.Join(".cursor", "hooks.json"),
		events: []hookEvent{{"sessionStart", false}, {"beforeSubmitPrompt", true}, {"preToolUse", true}, {"postToolUse", false},
			{"postToolUseFailure", false}, {"afterMCPExecution", false}, {"stop", false}, {"sessionEnd", false}},
		hook: func(c connectConfig, block bool) map[string]any {
			h := map[string]any{"command": c.command + " hook cursor --url " + c.url}
			if block {
				h["failClosed"] = true
			}
			return h
		},
		ours: func(c connectConfig, h map[string]any) bool {
			cmd, _ := h["command"].(string)
			return strings.Contains(cmd, " hook cursor ")
		},
		flat:    true,
		version: 1,
	},
}

// connectCommand runs "processor connect …" and returns the exit code.
func connectCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, connectUsage)
		if len(args) > 0 {
			return 0
		}
		return 2
	}
	host, ok := connectHosts[args[0]]
	if !ok {
		fmt.Fprint(stderr, connectUsage)
		fmt.Fprintf(stderr, "processor: connect: unknown host %q (claude-code, codex, cursor)\n", args[0])
		return 2
	}
	var tokens, settings string
	var cc connectConfig
	var c gateway.Caller
	fs := flag.NewFlagSet("connect "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&tokens, "tokens", "", "the callers file of the processor's --http-tokens (default $"+cliflag.EnvName("http-tokens")+")")
	fs.StringVar(&cc.url, "url", "http://127.0.0.1:8787", "the processor's HTTP endpoint (--http) as the host reaches it")
	fs.StringVar(&settings, "settings", host.settings, "the host's settings file to merge the hooks into (created when missing)")
	fs.StringVar(&cc.command, "hook-command", "turnguard", "codex, cursor: the turnguard command the hooks run (an absolute path when it is not on the host's PATH)")
	fs.StringVar(&c.Tenant, "tenant", "default", "the tenant of the sessions the host sends")
	fs.StringVar(&c.Name, "name", "", "the caller's name, unique in the callers file (default <host>-<8 hex digits of the token's hash>)")
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
		fmt.Fprintf(stderr, "processor: connect %s needs --tokens (see --help)\n", args[0])
		return 2
	}
	cc.url = strings.TrimRight(cc.url, "/")
	if !strings.HasPrefix(cc.url, "http://") && !strings.HasPrefix(cc.url, "https://") {
		fmt.Fprintf(stderr, "processor: --url %q: want http:// or https://\n", cc.url)
		return 2
	}
	token, sum, err := gateway.NewToken()
	if err != nil {
		fmt.Fprintln(stderr, "processor:", err)
		return 1
	}
	c.TokenSHA256 = sum
	if c.Name == "" {
		c.Name = args[0] + "-" + sum[:8]
	}
	// The settings first: a file that cannot be merged leaves the callers
	// file untouched.
	if err := mergeHooks(settings, host, cc); err != nil {
		fmt.Fprintln(stderr, "processor:", err)
		return 1
	}
	if err := gateway.AppendCaller(tokens, c); err != nil {
		fmt.Fprintln(stderr, "processor:", err)
		return 1
	}
	fmt.Fprintf(stderr, "added caller %q (tenant %s) to %s, and %s's hooks to %s (endpoint %s)\n"+
		"its bearer token, shown this once, is on standard output: the hooks read it from $%s\n",
		c.Name, c.Tenant, tokens, args[0], settings, cc.url, tokenEnvVar)
	fmt.Fprintln(stdout, token)
	return 0
}

// mergeHooks adds turnguard's hooks to a host's settings file, keeping
// everything else in it; turnguard's hooks already there are replaced, so
// that connecting again does not hook an event twice.
func mergeHooks(path string, host hostHooks, cc connectConfig) error {
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
	for _, e := range host.events {
		var groups []any
		if v, ok := hooks[e.event]; ok {
			if groups, ok = v.([]any); !ok {
				return fmt.Errorf("%s: hooks.%s is not a list", path, e.event)
			}
		}
		kept := groups[:0]
		for _, g := range groups {
			if !holdsOurs(g, host, cc) {
				kept = append(kept, g)
			}
		}
		if host.flat {
			hooks[e.event] = append(kept, host.hook(cc, e.block))
		} else {
			hooks[e.event] = append(kept, map[string]any{"hooks": []any{host.hook(cc, e.block)}})
		}
	}
	doc["hooks"] = hooks
	if _, ok := doc["version"]; !ok && host.version != 0 {
		doc["version"] = host.version
	}
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

// holdsOurs reports whether a hook group holds one of turnguard's hooks
// (or, in a flat list, is one).
func holdsOurs(group any, host hostHooks, cc connectConfig) bool {
	g, _ := group.(map[string]any)
	if host.flat {
		return g != nil && host.ours(cc, g)
	}
	hs, _ := g["hooks"].([]any)
	for _, h := range hs {
		if m, ok := h.(map[string]any); ok && host.ours(cc, m) {
			return true
		}
	}
	return false
}
