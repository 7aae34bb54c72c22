package natsconn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/nats-io/nats.go"
)

// natsContext is a context file of the nats CLI (nats context add), in the
// format of github.com/nats-io/jsm.go/natscontext.
type natsContext struct {
	name, path string

	URL         string `json:"url"`
	Creds       string `json:"creds"`
	NKey        string `json:"nkey"`
	User        string `json:"user"`
	Password    string `json:"password"`
	Token       string `json:"token"`
	Cert        string `json:"cert"`
	Key         string `json:"key"`
	CA          string `json:"ca"`
	InboxPrefix string `json:"inbox_prefix"`
	TLSFirst    bool   `json:"tls_first"`
}

// supportedFields are the context fields that map onto nats.go options;
// ignoredFields say nothing about the connection.
var (
	supportedFields = []string{"url", "creds", "nkey", "user", "password", "token", "cert", "key", "ca", "inbox_prefix", "tls_first"}
	ignoredFields   = []string{"name", "description", "color_scheme"}
)

// configDir is the nats CLI's configuration directory: $XDG_CONFIG_HOME/nats
// or ~/.config/nats.
func configDir() (string, error) {
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "nats"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("nats contexts: %w", err)
	}
	return filepath.Join(home, ".config", "nats"), nil
}

// selectedContext is the nats CLI's selected context: NATS_CONTEXT, else
// the name in context.txt; from says which. Empty when none is selected.
func selectedContext() (name, from string, err error) {
	if n := os.Getenv("NATS_CONTEXT"); n != "" {
		return n, "NATS_CONTEXT", nil
	}
	dir, err := configDir()
	if err != nil {
		return "", "", err
	}
	path := filepath.Join(dir, "context.txt")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("nats CLI's selected context: %w", err)
	}
	return strings.TrimSpace(string(b)), path, nil
}

// loadContext reads the context called name. Fields that would change the
// connection in ways turnguard does not reproduce (nsc lookups, JetStream
// domains and prefixes, SOCKS proxies, …) are refused rather than
// ignored: connecting without them would reach another server or account
// than the nats CLI does.
func loadContext(name string) (*natsContext, error) {
	if name == "" || strings.Contains(name, "..") || strings.ContainsAny(name, `/\`) {
		return nil, fmt.Errorf("invalid context name %q", name)
	}
	dir, err := configDir()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "context", name+".json")
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no nats context %q: %s does not exist (nats context ls lists them)", name, path)
	}
	if err != nil {
		return nil, fmt.Errorf("nats context %q: %w", name, err)
	}
	c := &natsContext{name: name, path: path}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("nats context %q (%s): %w", name, path, err)
	}
	var unsupported []string
	for k, v := range fields {
		if !slices.Contains(supportedFields, k) && !slices.Contains(ignoredFields, k) && !zeroJSON(v) {
			unsupported = append(unsupported, k)
		}
	}
	if len(unsupported) > 0 {
		sort.Strings(unsupported)
		return nil, fmt.Errorf("nats context %q (%s): turnguard does not support %s (it supports %s)",
			name, path, strings.Join(unsupported, ", "), strings.Join(supportedFields, ", "))
	}
	if err := json.Unmarshal(raw, c); err != nil {
		return nil, fmt.Errorf("nats context %q (%s): %w", name, path, err)
	}
	home, _ := os.UserHomeDir()
	for _, p := range []*string{&c.Creds, &c.NKey, &c.Cert, &c.Key, &c.CA} {
		*p = expandHome(*p, home)
	}
	if n := c.authKinds(); len(n) > 1 {
		return nil, fmt.Errorf("nats context %q (%s): more than one kind of credential (%s); keep one", name, path, strings.Join(n, ", "))
	}
	if (c.Cert == "") != (c.Key == "") {
		return nil, fmt.Errorf("nats context %q (%s): cert and key go together", name, path)
	}
	return c, nil
}

// zeroJSON reports whether a field's value is empty: the nats CLI writes
// every field, set or not.
func zeroJSON(v json.RawMessage) bool {
	switch string(bytes.TrimSpace(v)) {
	case `""`, "null", "false", "0", "[]", "{}":
		return true
	}
	return false
}

// expandHome expands a leading ~/ as the nats CLI does for its paths.
func expandHome(p, home string) string {
	if home != "" && (p == "~" || strings.HasPrefix(p, "~/")) {
		return filepath.Join(home, strings.TrimPrefix(p, "~"))
	}
	return p
}

func (c *natsContext) describe() string {
	return fmt.Sprintf("nats context %q (%s)", c.name, c.path)
}

// serverURL is the context's server; the nats CLI's default when it names
// none.
func (c *natsContext) serverURL() string {
	if c.URL == "" {
		return nats.DefaultURL
	}
	return c.URL
}

func (c *natsContext) authKinds() []string {
	var kinds []string
	for _, k := range []struct{ name, v string }{{"creds", c.Creds}, {"nkey", c.NKey}, {"user", c.User}, {"token", c.Token}} {
		if k.v != "" {
			kinds = append(kinds, k.name)
		}
	}
	return kinds
}

func (c *natsContext) hasAuth() bool { return len(c.authKinds()) > 0 }

// authOptions are the context's credentials.
func (c *natsContext) authOptions() ([]nats.Option, error) {
	var opts []nats.Option
	var t Target
	switch {
	case c.Creds != "":
		if err := t.creds(c.Creds); err != nil {
			return nil, fmt.Errorf("%s: %w", c.describe(), err)
		}
		opts = t.Options
	case c.NKey != "":
		o, err := nats.NkeyOptionFromSeed(c.NKey)
		if err != nil {
			return nil, fmt.Errorf("%s: nkey: %w", c.describe(), err)
		}
		opts = append(opts, o)
	case c.User != "":
		opts = append(opts, nats.UserInfo(c.User, c.Password))
	case c.Token != "":
		opts = append(opts, nats.Token(c.Token))
	}
	return opts, nil
}

// tlsOptions are the context's client certificate and TLS-first
// handshake.
func (c *natsContext) tlsOptions() ([]nats.Option, error) {
	var opts []nats.Option
	if c.Cert != "" {
		for _, f := range []struct{ what, path string }{{"client certificate", c.Cert}, {"client key", c.Key}} {
			if err := readable(f.what, f.path); err != nil {
				return nil, fmt.Errorf("%s: %w", c.describe(), err)
			}
		}
		opts = append(opts, nats.ClientCert(c.Cert, c.Key))
	}
	if c.TLSFirst {
		opts = append(opts, nats.TLSHandshakeFirst())
	}
	return opts, nil
}
