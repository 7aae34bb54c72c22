// Package cliflag holds what turnguard's commands share on their command
// lines: environment variables standing in for flags, and repeatable list
// flags.
package cliflag

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
)

// EnvPrefix is the prefix of the environment variables that stand in for
// flags: --nats-url is TURNGUARD_NATS_URL.
const EnvPrefix = "TURNGUARD_"

// EnvName is the environment variable standing in for a flag.
func EnvName(flagName string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// ApplyEnv sets every flag of fs that has a TURNGUARD_* variable. Call it
// before fs.Parse so that the command line overrides the environment.
func ApplyEnv(fs *flag.FlagSet) error { return ApplyEnvAs(fs, nil) }

// ApplyEnvAs is ApplyEnv with some flags read from variables of other
// names (renames: flag name → variable): a command whose credential is
// not the processor's reads it from a variable of its own, so that one
// variable never names two credentials (TURNGUARD_NATS_CREDS is the
// processor's; replay's is TURNGUARD_REPLAY_NATS_CREDS).
func ApplyEnvAs(fs *flag.FlagSet, renames map[string]string) error {
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		name := EnvName(f.Name)
		if r, ok := renames[f.Name]; ok {
			name = r
		}
		if v, ok := os.LookupEnv(name); ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", name, v, err))
				return
			}
			// The command line replaces a list the environment set, as
			// it replaces any other value: TURNGUARD_RULES=a.yaml with
			// --rules b.yaml is b.yaml alone.
			replaceable(f)
		}
	})
	return errors.Join(errs...)
}

// envList is a List the config file or the environment set: the next
// source's first value replaces it, its later ones add to that.
type envList struct {
	l        *List
	replaced bool
}

func (e *envList) String() string { return e.l.String() }

func (e *envList) Set(v string) error {
	if !e.replaced {
		*e.l, e.replaced = nil, true
	}
	return e.l.Set(v)
}

// List is a repeatable flag; each value may also hold several
// comma-separated entries.
type List []string

func (l *List) String() string { return strings.Join(*l, ",") }

// Set adds a value's entries.
func (l *List) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}
