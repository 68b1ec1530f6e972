//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// supervise is the helper's first process (see Main): it starts the
// second with args and --inner, waits for it, kills what it left behind,
// and exits with its exit status, or dies by its signal. It returns only
// an error, before the command started.
func (p *policy) supervise(args []string) error {
	if err := p.limit(); err != nil {
		return err
	}
	// Orphans below the supervisor become its children, not init's.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("become a subreaper: %w", err)
	}
	var report *os.File
	if p.watchFD > 0 {
		// Not the command's: nothing it runs may write the report.
		syscall.CloseOnExec(p.watchFD)
		report = os.NewFile(uintptr(p.watchFD), "report")
		go watch(report)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("the helper's own binary: %w", err)
	}
	argv := []string{self, HelperCommand, "--" + innerFlag}
	attr := &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}}
	var handoff, inner *os.File
	if p.relayFD > 0 {
		// Not the command's: nothing it runs may pass connections on.
		syscall.CloseOnExec(p.relayFD)
		if handoff, inner, err = handoffPair(); err != nil {
			return err
		}
		attr.Files = append(attr.Files, inner.Fd())
		attr.Sys = nsAttr()
		argv = append(argv, "--handoff-fd", "3")
	}
	pid, err := syscall.ForkExec(self, append(argv, args...), attr)
	if inner != nil {
		inner.Close()
	}
	if err != nil {
		return fmt.Errorf("start the confined process: %w", err)
	}
	if handoff != nil {
		relayFrom(handoff, p.relayFD)
	}

	exited := make(chan syscall.WaitStatus, 1)
	go func() {
		// Reap whatever ends (orphans reparented here included) until the
		// command itself does.
		for {
			var ws syscall.WaitStatus
			wpid, err := syscall.Wait4(-1, &ws, 0, nil)
			switch {
			case errors.Is(err, syscall.EINTR):
			case err != nil: // ECHILD: cannot be before pid is reaped
				exited <- syscall.WaitStatus(1 << 8)
				return
			case wpid == pid:
				exited <- ws
				return
			}
		}
	}()
	var ws syscall.WaitStatus
	select {
	case ws = <-exited:
	case sig := <-stop:
		ended := false
		if p.grace > 0 {
			_ = syscall.Kill(pid, sig.(syscall.Signal))
			select {
			case ws = <-exited:
				ended = true
			case <-time.After(p.grace):
			case <-stop: // asked twice: no more grace
			}
		}
		if !ended {
			_ = syscall.Kill(pid, syscall.SIGKILL) // not reaped yet: pid is still the command's
			ws = <-exited
		}
	}
	signal.Stop(stop)
	reapAll()
	if report != nil {
		watchDone(report)
	}
	if ws.Signaled() {
		dieBy(ws.Signal())
	}
	// Straight out, as the exec it replaces would have: nothing is left to
	// flush, and a binary built with -race would otherwise sleep a second
	// at exit (every Bash call of a -race test).
	syscall.Exit(ws.ExitStatus())
	return nil
}

// reapAll kills and reaps every child the supervisor has left, until it
// has none: killing one makes its own children the supervisor's, which
// the next round kills. The kernel lists a process's children only per
// thread (/proc/<pid>/task/<tid>/children, not in every kernel), so they
// are found by asking waitid, without waiting, about each process of
// /proc: a process that is not a child answers ECHILD. That scan runs
// only when something was left behind; an ordinary command costs one
// wait4.
func reapAll() {
	for {
		for {
			var ws syscall.WaitStatus
			wpid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil {
				return // ECHILD: nothing left
			}
			if wpid <= 0 {
				break // children left, none ended yet
			}
		}
		kids := children()
		for _, k := range kids {
			_ = syscall.Kill(k, syscall.SIGKILL)
		}
		if len(kids) == 0 {
			// A child not seen in /proc (it appeared after the scan):
			// look again shortly.
			time.Sleep(time.Millisecond)
			continue
		}
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(-1, &ws, 0, nil)
	}
}

// children lists the processes whose parent is this one.
func children() []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil
	}
	var out []int
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 {
			continue
		}
		var info unix.Siginfo
		if unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil) == nil {
			out = append(out, pid)
		}
	}
	return out
}

// dieBy ends the supervisor by sig, as the command ended, so that whoever
// waits for it sees the same (a shell's "Killed", a limit's SIGXCPU). The
// Go runtime handles most signals itself (it ignores SIGXCPU and SIGXFSZ
// when nothing listens): sig's action is set back to the kernel's
// default first. No core is dumped for it.
func dieBy(sig syscall.Signal) {
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
	signal.Reset(sig)
	var dfl [4]uint64 // struct sigaction, zero: SIG_DFL, no flags, empty mask
	_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0)
	var set unix.Sigset_t
	bits := uint(unsafe.Sizeof(set.Val[0]) * 8)
	set.Val[(uint(sig)-1)/bits] |= 1 << ((uint(sig) - 1) % bits)
	_ = unix.PthreadSigmask(unix.SIG_UNBLOCK, &set, nil)
	_ = syscall.Kill(os.Getpid(), sig)
	time.Sleep(100 * time.Millisecond)
	syscall.Exit(128 + int(sig)) // the signal was not fatal after all (SIGCHLD, …)
}
