// Package natsconn resolves the one NATS connection setting every turnguard
// command and example shares: the --nats-url, --nats-creds, --nats-ca and
// --nats-context flags (each also a TURNGUARD_* variable, see cliflag),
// then NATS_URL and the nats CLI's contexts.
package natsconn

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/turnguard/turnguard/pkg/client"
)

// Help says where a command's NATS server and credentials come from, in
// the order they are looked at; otherwise is what the command does when
// none of them names a server. Every command prints it in its --help, so
// that the README and the binaries describe one precedence.
func Help(o Options, otherwise string) string {
	prefix := o.EnvPrefix
	if prefix == "" {
		prefix = "TURNGUARD_"
	}
	var b strings.Builder
	b.WriteString(`NATS connection. The server is the first of:
  1. --nats-url (or TURNGUARD_NATS_URL; a flag wins over its variable)
  2. --nats-context NAME (or ` + prefix + `NATS_CONTEXT): a context of the nats CLI,
     $XDG_CONFIG_HOME/nats/context/NAME.json (default ~/.config/nats/context/...):
     its url (default nats://127.0.0.1:4222), creds, nkey, user and password,
     token, cert and key, ca, inbox_prefix and tls_first
`)
	if o.Implicit {
		b.WriteString(`  3. NATS_URL
  4. the nats CLI's selected context: NATS_CONTEXT, else the one named in
     context.txt next to the context directory
`)
	}
	b.WriteString("  otherwise " + otherwise + "\n")
	if !o.Implicit {
		// Only commands with nowhere else to go follow the nats CLI's
		// environment: one that did would leave its embedded server for
		// whatever a shell's NATS_URL or selected context names.
		b.WriteString("  (NATS_URL and the nats CLI's selected context are not used)\n")
	}
	b.WriteString(`Credentials: --nats-creds FILE (` + prefix + `NATS_CREDS; "none": none), else
the context's; TLS roots: --nats-ca FILE (TURNGUARD_NATS_CA), else the context's.
`)
	return b.String()
}

// EnvRenames are the variables a command with its own credential reads
// the credential flags from: prefix + NATS_CREDS and NATS_CONTEXT (for
// --context too), for cliflag.ApplyEnvAs.
func EnvRenames(prefix string) map[string]string {
	return map[string]string{"nats-creds": prefix + "NATS_CREDS", "nats-context": prefix + "NATS_CONTEXT", "context": prefix + "NATS_CONTEXT"}
}

// NoCreds as --nats-creds connects without credentials, whatever a context
// says.
const NoCreds = "none"

// Flags are the connection flags, filled by Register and the command line.
type Flags struct {
	URL     string
	Creds   string
	CA      string
	Context string
}

// Register adds --nats-url, --nats-creds, --nats-ca and --nats-context to
// fs. creds describes the credential the command needs, e.g. "an admin
// credential".
func (f *Flags) Register(fs *flag.FlagSet, creds string) {
	fs.StringVar(&f.URL, "nats-url", "", "NATS server or cluster URL(s), comma-separated (see \"NATS connection\" below)")
	fs.StringVar(&f.Creds, "nats-creds", "", "NATS credentials `file`: "+creds+"; \"none\": connect without credentials")
	fs.StringVar(&f.CA, "nats-ca", "", "PEM CA bundle `file` verifying the NATS servers' TLS certificates")
	fs.StringVar(&f.Context, "nats-context", "", "the nats CLI's context `name` to connect with (~/.config/nats/context/NAME.json)")
	// As the nats CLI spells it, for hands used to it.
	fs.StringVar(&f.Context, "context", "", "the same as --nats-context")
}

// Options say how a command resolves what its flags leave open.
type Options struct {
	// EnvPrefix is the prefix of the variables of the command's
	// credential (NATS_CREDS, NATS_CONTEXT): TURNGUARD_ for the processor,
	// a prefix of its own for a command whose credential is another
	// (EnvRenames).
	EnvPrefix string
	// Implicit lets NATS_URL and the nats CLI's selected context
	// (NATS_CONTEXT, context.txt) name the server. Only for commands
	// without an embedded server: see HelpImplicit.
	Implicit bool
	// DefaultURL is the server when nothing names one; empty: none (the
	// command runs its embedded server).
	DefaultURL string
	// DefaultCreds is the credentials file when nothing gives credentials;
	// it must exist then.
	DefaultCreds string
}

// Target is a resolved connection.
type Target struct {
	// URL is the server or cluster; empty when nothing named one and
	// Options.DefaultURL is empty: the caller's embedded server.
	URL string
	// Options authenticate and secure the connection; the caller adds its
	// own (name, reconnects).
	Options []nats.Option
	// Source says what named the server, for logs and errors.
	Source string
	// Authenticated says credentials of some kind were given.
	Authenticated bool
}

// Resolve settles the connection of f (values from the command line and
// TURNGUARD_* variables) with the nats CLI's environment and contexts,
// and checks that every file it names can be read, so that a command
// fails on a bad setting before it starts anything.
func Resolve(f Flags, o Options) (Target, error) {
	var t Target
	var ctx *natsContext
	if f.Context != "" {
		c, err := loadContext(f.Context)
		if err != nil {
			return t, fmt.Errorf("--nats-context: %w", err)
		}
		ctx = c
	}
	switch {
	case f.URL != "":
		t.URL, t.Source = f.URL, "--nats-url"
	case ctx != nil:
		t.URL, t.Source = ctx.serverURL(), ctx.describe()
	case o.Implicit && os.Getenv("NATS_URL") != "":
		t.URL, t.Source = os.Getenv("NATS_URL"), "NATS_URL"
	case o.Implicit:
		name, from, err := selectedContext()
		if err != nil {
			return t, err
		}
		if name != "" {
			if ctx, err = loadContext(name); err != nil {
				return t, fmt.Errorf("%s: %w", from, err)
			}
			t.URL, t.Source = ctx.serverURL(), ctx.describe()+", selected by "+from
		}
	}
	if t.URL == "" && o.DefaultURL != "" {
		t.URL, t.Source = o.DefaultURL, "default"
	}
	if t.URL == "" {
		// The embedded server: settings for another one are a mistake the
		// user should hear about, not a silent no-op.
		if f.Creds != "" || f.CA != "" {
			return t, errors.New("--nats-creds and --nats-ca are for a NATS server named by --nats-url or --nats-context; without one the embedded server is used")
		}
		return t, nil
	}
	if err := t.auth(f, ctx, o); err != nil {
		return t, err
	}
	ca := f.CA
	if ca == "" && ctx != nil {
		ca = ctx.CA
	}
	if ca != "" {
		if err := readable("CA bundle", ca); err != nil {
			return t, err
		}
		t.Options = append(t.Options, nats.RootCAs(ca))
	}
	if ctx != nil {
		opts, err := ctx.tlsOptions()
		if err != nil {
			return t, err
		}
		t.Options = append(t.Options, opts...)
		// The context's inbox prefix goes with its credentials (it is where
		// their server lets replies arrive) and wins over the one a
		// credential's JWT implies, as in the nats CLI.
		if ctx.InboxPrefix != "" && f.Creds == "" {
			t.Options = append(t.Options, nats.CustomInboxPrefix(ctx.InboxPrefix))
		}
	}
	return t, nil
}

// auth adds the credentials: --nats-creds, else the context's, else the
// command's default.
func (t *Target) auth(f Flags, ctx *natsContext, o Options) error {
	switch {
	case f.Creds == NoCreds:
		return nil
	case f.Creds != "":
		return t.creds(f.Creds)
	case ctx != nil && ctx.hasAuth():
		opts, err := ctx.authOptions()
		if err != nil {
			return err
		}
		t.Options = append(t.Options, opts...)
		t.Authenticated = true
		return nil
	case o.DefaultCreds != "":
		return t.creds(o.DefaultCreds)
	}
	return nil
}

func (t *Target) creds(path string) error {
	// CredentialsOptions also sets the inbox prefix the credential's JWT
	// confines it to; it reads the file, so a missing one fails here.
	opts, err := client.CredentialsOptions(path)
	if err != nil {
		return err
	}
	t.Options = append(t.Options, opts...)
	t.Authenticated = true
	return nil
}

// readable checks that a file a connection needs can be opened now rather
// than at the first (re)connect.
func readable(what, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("NATS %s: %w", what, err)
	}
	return f.Close()
}
