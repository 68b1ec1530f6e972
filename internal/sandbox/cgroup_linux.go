//go:build linux

package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// pidsLimiter makes one pids cgroup per confined command, under the
// runtime's own cgroup, so that a fork bomb stops at max tasks even where
// RLIMIT_NPROC does not apply (root). The helper joins the group before
// it execs; when the command is over, whatever is left in the group is
// killed and the group removed.
type pidsLimiter struct {
	parent string // the runtime's cgroup directory in a pids hierarchy
	max    int
	seq    atomic.Uint64
}

// newPidsLimiter finds a pids hierarchy the runtime may create groups in
// (cgroup v1's pids controller, or v2 with pids enabled for the
// runtime's children) and proves it by making and removing one; nil when
// there is none.
func newPidsLimiter(max int) *pidsLimiter {
	parent := pidsParent()
	if parent == "" {
		return nil
	}
	l := &pidsLimiter{parent: parent, max: max}
	dir, err := l.create()
	if err != nil {
		return nil
	}
	l.remove(dir)
	return l
}

// pidsParent is the directory of the runtime's own cgroup in a hierarchy
// with the pids controller, or "".
func pidsParent() string {
	own := map[string]string{} // controller list ("pids", "" for v2) -> path
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			own[c] = parts[2]
		}
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	var v2 string
	for _, line := range strings.Split(string(mounts), "\n") {
		// ... mountpoint ... - fstype source superoptions
		left, right, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		lf, rf := strings.Fields(left), strings.Fields(right)
		if len(lf) < 5 || len(rf) < 3 {
			continue
		}
		mnt := lf[4]
		switch rf[0] {
		case "cgroup":
			if p, ok := own["pids"]; ok && hasOption(rf[2], "pids") {
				return filepath.Join(mnt, p)
			}
		case "cgroup2":
			if p, ok := own[""]; ok && v2 == "" {
				v2 = filepath.Join(mnt, p)
			}
		}
	}
	if v2 != "" {
		if ctl, err := os.ReadFile(filepath.Join(v2, "cgroup.subtree_control")); err == nil && hasWord(string(ctl), "pids") {
			return v2
		}
	}
	return ""
}

func hasOption(opts, want string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

func hasWord(s, want string) bool {
	for _, w := range strings.Fields(s) {
		if w == want {
			return true
		}
	}
	return false
}

// create makes a new group with its pids.max set.
func (l *pidsLimiter) create() (string, error) {
	dir := filepath.Join(l.parent, fmt.Sprintf("agent-sbx-%d-%d", os.Getpid(), l.seq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("sandbox: pids cgroup: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(l.max)), 0); err != nil {
		_ = os.Remove(dir)
		return "", fmt.Errorf("sandbox: pids cgroup: %w", err)
	}
	return dir, nil
}

// remove kills what is left in the group and removes it; it gives up
// (leaving an empty-to-be group behind) after a few seconds.
func (l *pidsLimiter) remove(dir string) {
	for deadline := time.Now().Add(5 * time.Second); ; {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
			return
		}
		if procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err == nil {
			for _, f := range strings.Fields(string(procs)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}
