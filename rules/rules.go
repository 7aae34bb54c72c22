// Package rules ships turnguard's embedded default rule pack (default.yaml,
// documented in README.md) and reads rule files by name for the commands:
// a path on disk, or builtin:default for the pack. The rule engine that
// compiles and evaluates them is internal/core/policy, which reads no
// files.
package rules

import (
	_ "embed"
	"fmt"
	"os"

	"github.com/turnguard/turnguard/internal/core/policy"
)

// DefaultPath is how the default pack is named on the command line and in
// diagnostics.
const DefaultPath = "builtin:default"

//go:embed default.yaml
var defaultPack []byte

// Default returns the default pack's source.
func Default() []byte { return defaultPack }

// Load reads and compiles the rule files at paths; the path
// builtin:default names the embedded default pack.
func Load(paths ...string) (*policy.Set, error) { return LoadWith(nil, paths...) }

// LoadWith is Load where the paths that are keys of builtins name the
// sources given there (embedded files of other packages).
func LoadWith(builtins map[string][]byte, paths ...string) (*policy.Set, error) {
	sources := make([]policy.RawFile, 0, len(paths))
	for _, p := range paths {
		src, ok := builtins[p]
		if !ok {
			var err error
			if src, err = read(p); err != nil {
				return nil, err
			}
		}
		sources = append(sources, policy.RawFile{Path: p, Bytes: src})
	}
	return policy.CompileRaw(sources...)
}

// DefaultSet compiles the embedded default pack.
func DefaultSet() (*policy.Set, error) { return Load(DefaultPath) }

func read(p string) ([]byte, error) {
	if p == DefaultPath {
		return defaultPack, nil
	}
	src, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("read rule file: %w", err)
	}
	return src, nil
}
