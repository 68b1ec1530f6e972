//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// watchEvery is how often a watching supervisor looks at its
// descendants. A shell needs a fork and an exec (a millisecond or more)
// to start a process that leaves its group, and another to kill the
// helper: what leaves its group less than this before the helper dies
// escapes the report. A look costs a few small /proc reads per
// descendant.
const watchEvery = 10 * time.Millisecond

// watch is the supervisor's report to the runtime where the kernel does
// not scope signals (Landlock below ABI 6) and the command can kill the
// supervisor: every process group its descendants make (setsid, setpgid)
// is written to report as "g <pgid>" the first time it is seen, so that
// the runtime can kill those groups if the supervisor dies before it has
// ended them itself (watcher.kill). It runs until the supervisor exits.
func watch(report *os.File) {
	self := os.Getpid()
	own := syscall.Getpgrp()
	seen := map[int]bool{own: true}
	for {
		for _, pgid := range descendantGroups(self) {
			if !seen[pgid] {
				seen[pgid] = true
				_, _ = fmt.Fprintf(report, "g %d\n", pgid)
			}
		}
		time.Sleep(watchEvery)
	}
}

// watchDone tells the runtime that the supervisor ended everything below
// it: the groups reported are gone, and their numbers may be anyone's.
func watchDone(report *os.File) {
	_, _ = report.WriteString(watchDoneLine + "\n")
}

// descendantGroups returns the process groups of pid's descendants,
// found through /proc/<pid>/task/<tid>/children, or, on a kernel without
// those files, through every process's parent in /proc.
func descendantGroups(pid int) []int {
	var groups []int
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid)); err != nil {
		parents := map[int][]int{}
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			if p, err := strconv.Atoi(e.Name()); err == nil {
				if ppid, _, ok := procStat(p); ok {
					parents[ppid] = append(parents[ppid], p)
				}
			}
		}
		for queue := parents[pid]; len(queue) > 0; queue = queue[1:] {
			if _, pgid, ok := procStat(queue[0]); ok {
				groups = append(groups, pgid)
			}
			queue = append(queue, parents[queue[0]]...)
		}
		return groups
	}
	for queue := childrenOf(pid); len(queue) > 0; queue = queue[1:] {
		if _, pgid, ok := procStat(queue[0]); ok {
			groups = append(groups, pgid)
		}
		queue = append(queue, childrenOf(queue[0])...)
	}
	return groups
}

// childrenOf lists pid's children, from the children file of each of its
// threads.
func childrenOf(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, s := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(s); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// procStat reads a process's parent and process group from
// /proc/<pid>/stat ("pid (comm) state ppid pgrp …"; comm may hold spaces
// and parentheses, so the fields are read after its last ')').
func procStat(pid int) (ppid, pgid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgid, err2 := strconv.Atoi(f[2])
	return ppid, pgid, err1 == nil && err2 == nil
}
