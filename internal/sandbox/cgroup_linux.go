//go:build linux

package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
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
	l.sweep()
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

// groupPrefix starts the name of every group a limiter makes:
// agent-sbx-<pid>-<seq>.
const groupPrefix = "agent-sbx-"

// sweep removes the groups that runtimes no longer running left behind (a
// runtime killed mid-command cannot remove its group), with what still
// runs in them: their names carry the pid of the runtime that made them.
// One attempt each; a group that will not go stays.
func (l *pidsLimiter) sweep() {
	entries, err := os.ReadDir(l.parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), groupPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		// This process's own names are left to create, which clears one
		// it finds taken: a group with this pid may be live.
		if err != nil || pid <= 0 || pid == os.Getpid() || alive(pid) {
			continue
		}
		dir := filepath.Join(l.parent, e.Name())
		killCgroup(dir)
		_ = os.Remove(dir)
	}
}

// alive reports whether a process with pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// create makes a new group with its pids.max set. A name taken already is
// a group an earlier process with this pid left: it is cleared and
// removed, else the next name is tried.
func (l *pidsLimiter) create() (string, error) {
	var dir string
	for try := 0; ; try++ {
		dir = filepath.Join(l.parent, fmt.Sprintf("%s%d-%d", groupPrefix, os.Getpid(), l.seq.Add(1)))
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || try >= 3 {
			return "", fmt.Errorf("sandbox: pids cgroup: %w", err)
		}
		killCgroup(dir)
		_ = os.Remove(dir)
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
		killCgroup(dir)
		time.Sleep(20 * time.Millisecond)
	}
}

// killCgroup kills the processes in the pids group dir.
func killCgroup(dir string) {
	procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(procs)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
