// Command healthcheck is the container images' HEALTHCHECK: it GETs one URL
// and exits 0 if the answer is 2xx, 1 otherwise (Docker reads 1 as
// unhealthy), with one line on stderr saying why.
//
//	healthcheck http://127.0.0.1:9464/readyz
//
// It waits at most 2 s, follows no redirect and uses no proxy. The images
// are built FROM scratch, with no shell, curl or wget to do this instead.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/turnguard/turnguard/internal/version"
)

// timeout bounds the whole check: connecting, sending, and reading the answer.
const timeout = 2 * time.Second

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, timeout))
}

// run checks the URL in args and returns the exit code.
func run(args []string, stdout, stderr io.Writer, timeout time.Duration) int {
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version") {
		fmt.Fprintln(stdout, version.String("healthcheck"))
		return 0
	}
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: healthcheck URL | --version")
		return 1
	}
	if err := check(args[0], timeout); err != nil {
		fmt.Fprintln(stderr, "healthcheck:", err)
		return 1
	}
	return 0
}

// check GETs rawURL and returns nil for a 2xx answer.
func check(rawURL string, timeout time.Duration) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q: want an http or https URL", rawURL)
	}
	if u.Host == "" {
		return fmt.Errorf("%q: no host", rawURL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	client := &http.Client{
		Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("GET %s: no answer within %s", rawURL, timeout)
		}
		return err
	}
	defer resp.Body.Close()
	// The beginning of the body says why, as /readyz's 503 does.
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		why := strings.Join(strings.Fields(string(body)), " ")
		if why == "" {
			return fmt.Errorf("GET %s: %s", rawURL, resp.Status)
		}
		return fmt.Errorf("GET %s: %s: %s", rawURL, resp.Status, why)
	}
	return nil
}
