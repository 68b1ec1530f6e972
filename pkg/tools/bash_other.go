//go:build !unix

package tools

import (
	"os"
	"os/exec"
)

// bashSetGroup is a no-op where there are no process groups.
func bashSetGroup(*exec.Cmd) {}

// bashKillGroup kills the shell; what it started may outlive it here.
func bashKillGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

// bashLimitNote is "": the sandbox's limits are Linux's.
func bashLimitNote(*os.ProcessState, string) string { return "" }
