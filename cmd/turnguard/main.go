// Command turnguard is what an agent host runs as a command hook:
//
//	turnguard hook claude-code|codex|cursor
//
// reads the host's hook input on standard input, posts it to the
// processor's native hook endpoint (POST <url>/hooks/<host>) with the
// caller's bearer token, and prints the host's answer. When the processor
// cannot be reached, answers with an error, or takes too long, it fails
// closed: the answer denies (or blocks) whatever the event could stop, so a
// host that only runs commands — Codex, Cursor — is guarded as Claude
// Code's http hook with onFailure "block" is.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/turnguard/turnguard/internal/cliflag"
	"github.com/turnguard/turnguard/internal/hosthook"
	"github.com/turnguard/turnguard/internal/version"
)

// maxInput bounds the hook input read, as the endpoint bounds its body.
const maxInput = 1 << 20

const usage = `Usage:
  turnguard hook claude-code|codex|cursor [--url URL] [--timeout D] [--ca-file FILE]
  turnguard version

turnguard hook reads a host's hook input on standard input, asks the
processor (POST URL/hooks/HOST, "Authorization: Bearer $TURNGUARD_HOOK_TOKEN")
and prints the host's answer on standard output. Without an answer — the
processor down, an HTTP error, no answer within --timeout — it fails closed:
a tool call is denied and a prompt or a result blocked, with the reason;
events that stop nothing get no answer. Input that is no hook event exits 2
(a blocking error to the host). Flags can also be set as TURNGUARD_HOOK_<FLAG>
(TURNGUARD_HOOK_URL, TURNGUARD_HOOK_TIMEOUT, TURNGUARD_HOOK_CA_FILE); a flag
on the command line wins.

Flags:
`

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "version" || args[0] == "--version") {
		fmt.Fprintln(stdout, version.String("turnguard"))
		return 0
	}
	if len(args) < 2 || args[0] != "hook" {
		fmt.Fprint(stderr, usage)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			return 0
		}
		return 2
	}
	host, ok := hosthook.ParseHost(args[1])
	if !ok {
		fmt.Fprintf(stderr, "turnguard: hook: unknown host %q (claude-code, codex, cursor)\n", args[1])
		return 2
	}
	var url, caFile string
	var timeout time.Duration
	fs := flag.NewFlagSet("turnguard hook", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&url, "url", "http://127.0.0.1:8787", "the processor's HTTP endpoint (--http)")
	fs.DurationVar(&timeout, "timeout", 8*time.Second, "how long to wait for the answer; keep it under the host's hook timeout")
	fs.StringVar(&caFile, "ca-file", "", "CA bundle (PEM) verifying an https endpoint's certificate (e.g. the processor's http-tls.pem)")
	fs.Usage = cliflag.Usage(fs, usage, "")
	if err := applyHookEnv(fs); err != nil {
		fmt.Fprintln(stderr, "turnguard:", err)
		return 2
	}
	if err := fs.Parse(args[2:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	input, err := io.ReadAll(io.LimitReader(stdin, maxInput+1))
	if err != nil || len(input) > maxInput {
		fmt.Fprintf(stderr, "turnguard: the hook input could not be read whole (at most %d bytes): %v\n", maxInput, err)
		return 2
	}
	ev, err := hosthook.Parse(host, input)
	if err != nil {
		// Which event this is is unknown: a blocking error is all that
		// can fail closed.
		fmt.Fprintln(stderr, "turnguard:", err)
		return 2
	}
	answer, err := ask(ctx, url, host, caFile, os.Getenv("TURNGUARD_HOOK_TOKEN"), timeout, input)
	if err != nil {
		fmt.Fprintf(stderr, "turnguard: %s %s: %v\n", host, ev, err)
		answer = ev.Answer(hosthook.Outcome{Failed: true, Reason: err.Error()}, true)
	}
	if len(answer) > 0 {
		_, _ = stdout.Write(answer)
		fmt.Fprintln(stdout)
	}
	return 0
}

// applyHookEnv sets each flag from TURNGUARD_HOOK_<FLAG>, where set: names
// of their own, so that no variable means one thing to the processor and
// another here.
func applyHookEnv(fs *flag.FlagSet) error {
	renames := map[string]string{}
	fs.VisitAll(func(f *flag.Flag) {
		renames[f.Name] = "TURNGUARD_HOOK_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
	})
	return cliflag.ApplyEnvAs(fs, renames)
}

// ask posts the hook input and returns the endpoint's answer.
func ask(ctx context.Context, url string, host hosthook.Host, caFile, token string, timeout time.Duration, input []byte) ([]byte, error) {
	if token == "" {
		return nil, errors.New("TURNGUARD_HOOK_TOKEN is not set (processor connect prints it)")
	}
	client := &http.Client{Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate", caFile)
		}
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(url, "/")+"/hooks/"+string(host), bytes.NewReader(input))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxInput))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(body))
	}
	return bytes.TrimSpace(body), nil
}
