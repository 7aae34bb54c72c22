// Package internal holds turnguard's packages that are not its public API
// (pkg/client is). It has no code of its own: its test (deps_test.go)
// holds two boundaries docs/ARCHITECTURE.md draws — the decision core
// depends on no NATS, HTTP, logger or file watcher, and no product package
// imports internal/testkit.
package internal
