//go:build !unix

package tools

import "os/exec"

// processHandle is a no-op where process groups are not available: Close
// ends only the server's own process, as the SDK does.
type processHandle struct{}

func (p *processHandle) prepare(*exec.Cmd) {}

func (p *processHandle) endGroup() {}
