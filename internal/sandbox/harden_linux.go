//go:build linux

package sandbox

import "golang.org/x/sys/unix"

// HardenProcess makes the runtime non-dumpable, so that no process of the
// same user — nothing the agent runs, sandboxed or not — can read its
// /proc/<pid>/environ, mem or fd/, or attach to it. (Root's
// CAP_SYS_PTRACE still can: the sandbox keeps /proc out of reach too.)
func HardenProcess() error {
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}

// Dumpable reports the runtime's dumpable flag.
func Dumpable() bool {
	v, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	return err == nil && v != 0
}
