package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Groups a killed runtime left behind are removed when the next one
// starts, and a name taken by one is cleared rather than failing the
// command (pids are reused across runs).
func TestPidsGroupsLeftBehind(t *testing.T) {
	parent := pidsParent()
	if parent == "" || os.Geteuid() != 0 {
		t.Skip("no pids cgroup this process may create groups in (root with a pids hierarchy)")
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(parent, fmt.Sprintf("%s%d-1", groupPrefix, dead.Process.Pid))
	if err := os.Mkdir(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(stale) })
	l := newPidsLimiter(DefaultCgroupPids)
	if l == nil {
		t.Fatal("no limiter")
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the group of a runtime no longer running is still there: %v", err)
	}
	// This process's next name, taken already (an earlier process with
	// this pid left it).
	taken := filepath.Join(parent, fmt.Sprintf("%s%d-%d", groupPrefix, os.Getpid(), l.seq.Load()+1))
	if err := os.Mkdir(taken, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(taken) })
	dir, err := l.create()
	if err != nil {
		t.Fatalf("create with its name taken: %v", err)
	}
	l.remove(dir)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("group %s not removed: %v", dir, err)
	}
}
