package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// tempPrefix starts the name of every command's private temporary
// directory.
const tempPrefix = "agent-sbx-"

// tempGrace is how long a private temporary directory is left alone after
// its last change, held or not: a runtime makes one and then holds it, and
// a sweep in between must not take it.
const tempGrace = time.Minute

// privateTemp is one command's private temporary directory (its TMPDIR),
// held while the command runs by a shared lock (flock) on the directory.
// The kernel lets go of a lock when its process dies, however it dies, so
// a directory nobody holds is one whose runtime was killed mid-command
// (SIGKILL, the out-of-memory killer) and could not remove it.
type privateTemp struct {
	dir  string
	hold *os.File // opened close-on-exec: the command never has it
}

// makeTemp makes and holds a private temporary directory under root.
func makeTemp(root string) (*privateTemp, error) {
	dir, err := os.MkdirTemp(root, tempPrefix)
	if err != nil {
		return nil, err
	}
	hold, err := os.Open(dir)
	if err == nil {
		if err = syscall.Flock(int(hold.Fd()), syscall.LOCK_SH); err != nil {
			hold.Close()
		}
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return &privateTemp{dir: dir, hold: hold}, nil
}

// remove removes the directory with what the command left in it, then lets
// go of it.
func (t *privateTemp) remove() {
	_ = os.RemoveAll(t.dir)
	t.hold.Close()
}

// tempSweeps holds the roots swept by this process: each is swept once,
// when the first sandbox over it is made (the simulator makes one a
// scenario).
var tempSweeps sync.Map

// sweepTempsOnce sweeps root unless this process has swept it already.
func sweepTempsOnce(root string) {
	if _, done := tempSweeps.LoadOrStore(root, struct{}{}); !done {
		sweepTemps(root, time.Now())
	}
}

// sweepTemps removes the private temporary directories under root that no
// process holds and that have not changed for tempGrace before now, with
// what their commands wrote in them; it returns how many it removed.
// Only directories of the runtime's own user are candidates. now is the
// wall clock's: it is compared with the file system's times.
func sweepTemps(root string, now time.Time) int {
	entries, err := os.ReadDir(root)
	if err != nil {
		return 0
	}
	removed, uid := 0, os.Geteuid()
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		info, err := e.Info()
		if err != nil || now.Sub(info.ModTime()) < tempGrace || !ownedBy(info, uid) {
			continue
		}
		dir := filepath.Join(root, e.Name())
		f, err := os.Open(dir)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil && os.RemoveAll(dir) == nil {
			removed++
		}
		f.Close()
	}
	return removed
}

// ownedBy reports whether info is of a file of user uid.
func ownedBy(info os.FileInfo, uid int) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == uid
}
