package cliflag

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ConfigFlag is the flag (and TURNGUARD_CONFIG the variable) naming the
// config file the processor and replay read: one file, so that replay
// decides with the intake settings the processor had.
const ConfigFlag = "config"

// maxConfigBytes bounds a config file read.
const maxConfigBytes = 1 << 20

// ConfigPath is the config file the command line names (--config FILE,
// --config=FILE, one dash or two, before a "--"), else $TURNGUARD_CONFIG;
// "" for none. It is read before the flags are parsed, since the file's
// values come first and the command line's override them.
func ConfigPath(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != ConfigFlag {
			continue
		}
		if hasValue {
			return value
		}
		if i+1 < len(args) {
			return args[i+1]
		}
	}
	return os.Getenv(EnvName(ConfigFlag))
}

// ApplyConfig sets fs's flags from a config file: a YAML mapping of flag
// names (nats-url, or nats_url) to values — a scalar, or a list for a
// repeatable flag. The environment and the command line override it (a
// list they set replaces the file's). A name that is no flag of fs is an
// error. only, when set, names the settings the command takes from the
// file: the others are another command's, and ignored (replay reads the
// processor's file for its intake settings, not its credential).
func ApplyConfig(fs *flag.FlagSet, path string, only func(name string) bool) error {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return fmt.Errorf("--config %s: %w", path, err)
	}
	if len(raw) > maxConfigBytes {
		return fmt.Errorf("--config %s: larger than %d bytes", path, maxConfigBytes)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("--config %s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("--config %s: line %d: want a mapping of flag names to values", path, root.Line)
	}
	var errs []error
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		name := strings.ReplaceAll(k.Value, "_", "-")
		at := fmt.Sprintf("--config %s: line %d: %s", path, k.Line, k.Value)
		switch {
		case name == ConfigFlag:
			errs = append(errs, fmt.Errorf("%s: a config file cannot name another", at))
			continue
		case seen[name]:
			errs = append(errs, fmt.Errorf("%s: set twice", at))
			continue
		}
		seen[name] = true
		if only != nil && !only(name) {
			continue
		}
		fl := fs.Lookup(name)
		if fl == nil {
			errs = append(errs, fmt.Errorf("%s: no such setting (the flags are the settings: --help lists them)", at))
			continue
		}
		var values []string
		switch v.Kind {
		case yaml.ScalarNode:
			values = []string{v.Value}
		case yaml.SequenceNode:
			if _, ok := listOf(fl.Value); !ok {
				errs = append(errs, fmt.Errorf("%s: takes one value, not a list", at))
				continue
			}
			for _, item := range v.Content {
				if item.Kind != yaml.ScalarNode {
					errs = append(errs, fmt.Errorf("%s: line %d: a list of plain values", at, item.Line))
					continue
				}
				values = append(values, item.Value)
			}
		default:
			errs = append(errs, fmt.Errorf("%s: want a value or a list", at))
			continue
		}
		for _, value := range values {
			if err := fs.Set(name, value); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", at, err))
			}
		}
		replaceable(fl)
	}
	return errors.Join(errs...)
}

// listOf is the List under a flag's value.
func listOf(v flag.Value) (*List, bool) {
	switch l := v.(type) {
	case *List:
		return l, true
	case *envList:
		return l.l, true
	}
	return nil, false
}

// replaceable makes a list flag that was just set from the file or the
// environment replaced, not added to, by the next source's values.
func replaceable(f *flag.Flag) {
	if l, ok := listOf(f.Value); ok {
		f.Value = &envList{l: l}
	}
}
