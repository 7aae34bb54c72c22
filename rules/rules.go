// Package rules ships turnguard's embedded default rule pack
// (default.yaml, documented in README.md).
package rules

import _ "embed"

// DefaultPath is how the default pack is named on the command line and in
// diagnostics.
const DefaultPath = "builtin:default"

//go:embed default.yaml
var defaultPack []byte

// Default returns the default pack's source.
func Default() []byte { return defaultPack }
