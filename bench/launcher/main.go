// Command launcher runs one command and prints its wall time (ns) and peak
// RSS (KiB). The bench measures start-up through it: a process started
// straight from the bench would inherit the bench's peak (Go starts
// children with vfork, and exec records the peak of the memory it leaves,
// the parent's, as the child's own ru_maxrss). The launcher imports next
// to nothing, so its own peak (about 2 MiB) is below anything it measures.
//
//	launcher PROGRAM [ARGS...]
package main

import (
	"os"
	"strconv"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		os.Stderr.WriteString("launcher: want a program to run\n")
		os.Exit(2)
	}
	start := time.Now()
	// The program's output goes to stderr: stdout carries the figures.
	pid, err := syscall.ForkExec(os.Args[1], os.Args[1:], &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 2, 2}})
	if err != nil {
		os.Stderr.WriteString("launcher: " + err.Error() + "\n")
		os.Exit(1)
	}
	var status syscall.WaitStatus
	var ru syscall.Rusage
	for {
		_, err = syscall.Wait4(pid, &status, 0, &ru)
		if err != syscall.EINTR {
			break
		}
	}
	wall := time.Since(start)
	if err != nil || !status.Exited() || status.ExitStatus() != 0 {
		os.Stderr.WriteString("launcher: " + os.Args[1] + " failed: " + strconv.Itoa(status.ExitStatus()) + "\n")
		os.Exit(1)
	}
	os.Stdout.WriteString(strconv.FormatInt(wall.Nanoseconds(), 10) + " " + strconv.FormatInt(ru.Maxrss, 10) + "\n")
}
