//go:build unix

package tools

import (
	"os/exec"
	"syscall"
)

// bashSetGroup makes cmd start in a process group of its own, so that a
// timeout ends what the command started too (a pipeline, a sleep in the
// background), not just the shell.
func bashSetGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// bashKillGroup kills cmd's process group; it is a no-op once the group
// is empty.
func bashKillGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
