package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// HeldDir is a temporary directory held while its maker works in it: by a
// shared lock (flock) on the directory. The kernel lets go of a lock when
// its process dies, however it dies, so a directory nobody holds is one
// whose maker was killed (SIGKILL, the out-of-memory killer) before it
// could remove it; SweepUnheld removes those.
type HeldDir struct {
	Path string
	hold *os.File // opened close-on-exec: no child process has it
}

// MkdirHeld makes a new directory under root, as os.MkdirTemp does with
// pattern, and holds it.
func MkdirHeld(root, pattern string) (*HeldDir, error) {
	dir, err := os.MkdirTemp(root, pattern)
	if err != nil {
		return nil, err
	}
	hold, err := os.Open(dir)
	if err == nil {
		err = flock(hold, syscall.LOCK_SH)
		if noLocks(err) {
			// A file system that keeps no locks (NFS without its lock
			// service): the directory is not held, and no sweep takes
			// it, since the sweep's own lock fails there too.
			hold.Close()
			return &HeldDir{Path: dir}, nil
		}
		if err != nil {
			hold.Close()
		}
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return &HeldDir{Path: dir, hold: hold}, nil
}

// flock locks f as how says, again when a signal interrupts it.
func flock(f *os.File, how int) error {
	for {
		if err := syscall.Flock(int(f.Fd()), how); err != syscall.EINTR {
			return err
		}
	}
}

// noLocks reports whether err says the file system keeps no locks.
func noLocks(err error) bool {
	return errors.Is(err, syscall.ENOLCK) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.EINVAL)
}

// Remove removes the directory with what is in it, then lets go of it.
func (d *HeldDir) Remove() {
	_ = os.RemoveAll(d.Path)
	if d.hold != nil {
		d.hold.Close()
	}
}

// HeldGrace is how long SweepUnheld leaves a directory alone after its
// last change, held or not: it covers the moment between a directory's
// making and its holding in MkdirHeld (microseconds) many times over.
const HeldGrace = time.Minute

// SweepUnheld removes the directories under root whose names start with
// prefix, that no process holds and that have not changed for HeldGrace
// before now, with what is in them; it returns how many it removed. Only
// directories of the process's own user are candidates, and a symbolic
// link is never one. now is the wall clock's: it is compared with the file
// system's times.
func SweepUnheld(root, prefix string, now time.Time) int {
	entries, err := os.ReadDir(root)
	if err != nil {
		return 0
	}
	removed, uid := 0, os.Geteuid()
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		info, err := e.Info()
		if err != nil || now.Sub(info.ModTime()) < HeldGrace || !ownedBy(info, uid) {
			continue
		}
		dir := filepath.Join(root, e.Name())
		f, err := os.Open(dir)
		if err != nil {
			continue
		}
		if flock(f, syscall.LOCK_EX|syscall.LOCK_NB) == nil && os.RemoveAll(dir) == nil {
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
