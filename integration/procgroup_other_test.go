//go:build !unix

package integration

import "os/exec"

// ownProcessGroup leaves cmd as it is: without process groups, its
// cancellation kills the process alone.
func ownProcessGroup(*exec.Cmd) {}
