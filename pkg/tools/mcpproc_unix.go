//go:build unix

package tools

import (
	"os/exec"
	"syscall"
	"time"
)

// mcpGroupGrace is how long what a stdio server left behind in its process
// group (npx's node child, say) gets between SIGTERM and SIGKILL.
const mcpGroupGrace = time.Second

// processHandle is a stdio server's process, started in a process group of
// its own so that Close can end its descendants too: the SDK signals only
// the process it started.
type processHandle struct{ cmd *exec.Cmd }

// prepare makes cmd start in a new process group.
func (p *processHandle) prepare(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.cmd = cmd
}

// endGroup terminates, then kills, whatever is left in the group once the
// SDK has closed the session. It returns at once when the group is empty.
func (p *processHandle) endGroup() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	pgid := -p.cmd.Process.Pid
	if syscall.Kill(pgid, syscall.SIGTERM) != nil {
		return // ESRCH: nothing left
	}
	for deadline := time.Now().Add(mcpGroupGrace); time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		if syscall.Kill(pgid, 0) != nil {
			return
		}
	}
	_ = syscall.Kill(pgid, syscall.SIGKILL)
}
