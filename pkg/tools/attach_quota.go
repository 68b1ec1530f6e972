package tools

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// errAttachQuota is the quota writer's error: the file would take the
// attachments past their quota.
var errAttachQuota = errors.New("over the attachments' quota")

// AttachQuota holds the attachments of every thread workspace under one
// folder (the persona's AGENT_WORKSPACES) to a total size, and deletes
// the ones older than a cut-off (Prune). The total is counted by one walk
// of the attachments/ folders when the quota is made, then kept, not
// walked again for each file: a file saved adds its bytes as they are
// written (one that would pass the quota fails there), a file replaced or
// deleted takes its size away, and each Prune counts the folders again
// (a file a command wrote or removed in attachments/, or another replica
// sharing the home saved, is counted from then on). A single process
// keeps the count: replicas sharing a home each hold the quota on their
// own between two prunes.
type AttachQuota struct {
	workspaces string
	max        int64

	mu   sync.Mutex
	used int64
	// pruning counts the prunes walking the folders; during is what the
	// saves meanwhile added (or took away), which their count misses.
	pruning int
	during  int64
}

// NewAttachQuota returns the quota of max bytes over the attachments/
// folders of the workspaces under dir, counting what they hold now.
func NewAttachQuota(dir string, max int64) *AttachQuota {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	q := &AttachQuota{workspaces: dir, max: max}
	q.used, _, _ = q.walk(context.Background(), time.Time{})
	return q
}

// Max is the quota, in bytes.
func (q *AttachQuota) Max() int64 { return q.max }

// Used is the total size of the attachments as counted.
func (q *AttachQuota) Used() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.used
}

// fits reports whether n more bytes stay within the quota.
func (q *AttachQuota) fits(n int64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.used+n <= q.max
}

// take counts n more bytes if they stay within the quota.
func (q *AttachQuota) take(n int64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.used+n > q.max {
		return false
	}
	q.add(n)
	return true
}

// release takes n bytes away from the count.
func (q *AttachQuota) release(n int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.add(-n)
}

// add changes the count by n; q.mu is held.
func (q *AttachQuota) add(n int64) {
	q.used = max(q.used+n, 0)
	if q.pruning > 0 {
		q.during += n
	}
}

// Prune deletes the files of the attachments/ folders last written before
// cutoff, and counts the folders again. It returns how many files it
// deleted and their bytes; it stops early when ctx ends. Nothing is
// followed out of a folder: each is opened through a root that follows no
// symlink (Confined.Walk), and a file is removed there by its name.
func (q *AttachQuota) Prune(ctx context.Context, cutoff time.Time) (files int, bytes int64, err error) {
	q.mu.Lock()
	if q.pruning == 0 {
		q.during = 0
	}
	q.pruning++
	q.mu.Unlock()
	kept, files, bytes := q.walk(ctx, cutoff)
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pruning--
	if ctx.Err() == nil {
		// A file saved during the walk in a folder walked before is in
		// during alone; one in a folder walked after, in both: counted
		// twice until the next prune, which errs on the safe side.
		q.used = max(kept+q.during, 0)
	} else {
		q.used = max(q.used-bytes, 0)
	}
	return files, bytes, ctx.Err()
}

// walk visits the regular files of every workspace's attachments/ folder;
// with a cutoff, it removes those last written before it. It returns the
// bytes kept, and the files removed with their bytes.
func (q *AttachQuota) walk(ctx context.Context, cutoff time.Time) (kept int64, removed int, freed int64) {
	entries, err := os.ReadDir(q.workspaces)
	if err != nil {
		return 0, 0, 0 // no workspace yet
	}
	for _, ws := range entries {
		if ctx.Err() != nil {
			return kept, removed, freed
		}
		if !ws.IsDir() { // DirEntry's type is lstat's: a symlink is not one
			continue
		}
		files := Confined{Dir: filepath.Join(q.workspaces, ws.Name())}
		_ = files.Walk(attachDir, func(_ string, d fs.DirEntry, dir *os.Root) error {
			if d.IsDir() {
				return nil
			}
			fi, err := dir.Lstat(d.Name())
			if err != nil || !fi.Mode().IsRegular() {
				return nil
			}
			if !cutoff.IsZero() && fi.ModTime().Before(cutoff) {
				if dir.Remove(d.Name()) == nil {
					removed++
					freed += fi.Size()
					return nil
				}
			}
			if !strings.HasPrefix(d.Name(), fsTempPrefix) { // a save under way counts its own bytes
				kept += fi.Size()
			}
			return nil
		})
	}
	return kept, removed, freed
}

// quotaWriter counts the bytes written through it against the quota, and
// fails the write that would pass it.
type quotaWriter struct {
	q    *AttachQuota
	w    io.Writer
	took int64
	// over is set once a write was refused (the downloader's error may
	// not wrap errAttachQuota).
	over bool
}

func (w *quotaWriter) Write(p []byte) (int, error) {
	if !w.q.take(int64(len(p))) {
		w.over = true
		return 0, errAttachQuota
	}
	n, err := w.w.Write(p)
	w.took += int64(n)
	if n < len(p) {
		w.q.release(int64(len(p) - n))
	}
	return n, err
}
