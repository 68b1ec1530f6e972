//go:build linux

package sandbox

import (
	"fmt"
	"syscall"
	"testing"
)

// Below Landlock ABI 6 the kernel does not scope signals: a command can
// kill its helper (its parent) before the helper ends what it started.
// What left the command's group (setsid, directly or from a subshell that
// exited) is killed all the same when the runtime cleans up, without a
// cgroup; and the command cannot write the helper's report (its "done"
// would spare the groups).
func TestKilledHelperBelowABI6(t *testing.T) {
	w := newReapWorld(t, true)
	w.sb.abi = min(w.sb.abi, 5) // as a kernel that does not scope signals (ABI 6)
	// The command kills its helper a second after starting what leaves its
	// group: the helper reports new groups every 10 ms, but under a loaded
	// -race run (CI) 0.3 s was once not enough for it to be scheduled.
	arg := func(k int) string { return fmt.Sprintf("3219.%d", k) }
	script := fmt.Sprintf("{ echo %s >&3; } 2>/dev/null || echo no report; setsid sleep %s & (setsid sleep %s &); sleep 1; echo started; kill -9 $PPID; sleep %s",
		watchDoneLine, arg(1), arg(2), arg(3))
	cmd, out, cleanup := w.start(t, script)
	for _, want := range []string{"no report\n", "started\n"} {
		if line, err := out.ReadString('\n'); line != want {
			t.Fatalf("command said %q (%v), want %q", line, err, want)
		}
	}
	_ = cmd.Wait()
	killGroup(cmd) // as Bash does once its command has ended
	cleanup()
	for k := 1; k <= 3; k++ {
		for _, pid := range survivors(t, arg(k)) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("sleep %s outlived its command: pid %d", arg(k), pid)
		}
	}
}
