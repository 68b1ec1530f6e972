//go:build unix

package tools

import (
	"os"
	"os/exec"
	"strings"
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

// bashTerminate sends SIGTERM to cmd's process alone (a confined
// command's helper, which then ends everything below it).
func bashTerminate(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
}

// bashLimitNote explains an end that a sandbox limit caused, or is "".
// A process stopped by a limit dies of SIGXFSZ or SIGXCPU, which the
// shell reports as exit status 128+signal.
func bashLimitNote(state *os.ProcessState, output string) string {
	code := -1
	if state != nil {
		code = state.ExitCode()
		if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	}
	switch {
	case code == 128+int(syscall.SIGXFSZ) || strings.Contains(output, "File size limit exceeded"):
		return "stopped by the sandbox: a file reached the size limit for one file"
	case code == 128+int(syscall.SIGXCPU) || strings.Contains(output, "CPU time limit exceeded"):
		return "stopped by the sandbox: a process used up its CPU time limit"
	case strings.Contains(output, "fork: Resource temporarily unavailable") ||
		strings.Contains(output, "fork: retry: Resource temporarily unavailable"):
		return "stopped by the sandbox: the command started more processes than the sandbox allows"
	}
	return ""
}
