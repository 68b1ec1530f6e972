package publish

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// staleLockAge is how long a git lock file must have been left alone
// before the runtime takes it for one a killed git left. git holds a lock
// for the moment of one write, and the runtime's own git work in its
// checkouts runs one at a time (the ingest lock).
const staleLockAge = 10 * time.Minute

// clearStaleLocks removes the lock files in the checkout's .git that a git
// killed midway (the container stopped, the node lost) left behind and
// that would otherwise fail every later commit, checkout or push in it
// ("Unable to create '…/index.lock': File exists"): index.lock, HEAD.lock,
// the refs' locks and the like, untouched for staleLockAge. A git killed
// mid-write leaves the file it was replacing as it was, so the lock alone
// goes. The object store is not walked (git locks no file there). now is
// the wall clock's: it is compared with the file system's times.
func (c Checkout) clearStaleLocks(ctx context.Context, now time.Time) {
	gitDir := filepath.Join(c.Dir, ".git")
	if fi, err := os.Lstat(gitDir); err != nil || !fi.IsDir() {
		return
	}
	_ = filepath.WalkDir(gitDir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if e.IsDir() {
			if path == filepath.Join(gitDir, "objects") {
				return filepath.SkipDir
			}
			return nil
		}
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".lock") {
			return nil
		}
		info, err := e.Info()
		if err != nil || now.Sub(info.ModTime()) < staleLockAge {
			return nil
		}
		if os.Remove(path) == nil && c.Log != nil {
			rel, _ := filepath.Rel(gitDir, path)
			c.Log.WarnContext(ctx, "git: removed a lock a killed git left", "dir", c.Dir, "lock", filepath.ToSlash(rel),
				"age", now.Sub(info.ModTime()).Round(time.Second).String())
		}
		return nil
	})
}
