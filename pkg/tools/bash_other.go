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

// bashTerminate kills the shell: there is no helper to ask here.
func bashTerminate(cmd *exec.Cmd) { bashKillGroup(cmd) }

// bashLimitNote is "": the sandbox's limits are Linux's.
func bashLimitNote(*os.ProcessState, string) string { return "" }
