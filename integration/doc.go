// Package integration runs turnguard as its users do: the processor binary
// against real nats-server processes (built from the module versions pinned
// in go.mod), or with its embedded server on a real TCP port. Its tests take
// minutes; `go test -short ./...` skips them (.ci/run does not).
//
// Its code is all in its tests: this file is here for the doc, which go
// list and go doc do not read from test files.
package integration
