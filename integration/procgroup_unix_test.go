//go:build unix

package integration

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup makes cmd lead a process group of its own, and its
// cancellation kill the whole group.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
