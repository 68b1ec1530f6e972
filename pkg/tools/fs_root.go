package tools

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Why a confined open refused a path.
var (
	// errFsChanged: an entry on the path was not, when opened, the entry
	// looked at just before: a symlink or another file swapped in.
	errFsChanged = errors.New("it changed while being opened (a symlink or another file swapped in)")
	// errFsSymlink: a symlink where the checked path has a folder or a
	// file; the checked path is physical, so one appeared since.
	errFsSymlink = errors.New("it is a symlink")
	errFsIsDir   = errors.New("it is a folder")
	// errFsNotRegular: a device, a pipe or a socket.
	errFsNotRegular = errors.New("it is not a regular file")
	errFsOutside    = errors.New("it leads outside the folder")
)

// Confined opens files in one folder on someone's behalf (the model, a
// person sending a file): every open goes through an os.Root of the
// folder, so no symlink, ".." or swap leads out of it, and no symlink is
// followed on the way either: each folder of the path, and the file at its
// end, is opened only if it is the very entry looked at just before (lstat,
// open, then the two compared), so a symlink swapped in between is refused.
// The paths it takes are physical: relative to Dir, local (no ".."), and
// without symlinks; Resolve gives that form, following the symlinks that
// stay inside. The check a caller makes on a physical path therefore holds
// for the file opened.
type Confined struct {
	// Dir is the folder, an absolute path. The runtime owns the path up
	// to it; only what lies beneath is confined.
	Dir string
}

// Resolve returns the physical path, relative to Dir, of p (absolute, or
// relative to Dir): every symlink on it followed as the kernel would, the
// missing components kept as they are. It fails when the path leads out of
// Dir.
func (c Confined) Resolve(p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", errors.New("the path contains a NUL byte")
	}
	dir, err := fsEvalPath(filepath.Clean(c.Dir))
	if err != nil {
		return "", err
	}
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(dir, abs)
	}
	real, err := fsEvalPath(filepath.Clean(abs))
	if err != nil {
		return "", err
	}
	if !fsInside(real, dir) {
		return "", &fs.PathError{Op: "resolve", Path: p, Err: errFsOutside}
	}
	rel, err := filepath.Rel(dir, real)
	if err != nil {
		return "", err
	}
	return rel, nil
}

// root opens Dir itself.
func (c Confined) root() (*os.Root, error) {
	return os.OpenRoot(c.Dir)
}

// fsCheckRel refuses a path that is not local to the folder.
func fsCheckRel(rel string) error {
	if !filepath.IsLocal(rel) {
		return &fs.PathError{Op: "open", Path: rel, Err: errFsOutside}
	}
	return nil
}

// Folder opens the folder rel ("." for Dir) as a root of its own.
func (c Confined) Folder(rel string) (*os.Root, error) {
	if err := fsCheckRel(rel); err != nil {
		return nil, err
	}
	r, err := c.root()
	if err != nil {
		return nil, err
	}
	for _, name := range fsSplit(rel) {
		if name == "." {
			continue
		}
		sub, err := fsStepDir(r, name)
		r.Close()
		if err != nil {
			return nil, err
		}
		r = sub
	}
	return r, nil
}

// parent opens the folder holding rel, and gives rel's last name.
func (c Confined) parent(rel string) (*os.Root, string, error) {
	if err := fsCheckRel(rel); err != nil {
		return nil, "", err
	}
	dir, name := filepath.Split(filepath.Clean(rel))
	if name == "." || name == "" {
		return nil, "", &fs.PathError{Op: "open", Path: rel, Err: errFsIsDir}
	}
	r, err := c.Folder(filepath.Clean(dir))
	return r, name, err
}

// Lstat describes rel without following a symlink at its end.
func (c Confined) Lstat(rel string) (fs.FileInfo, error) {
	if filepath.Clean(rel) == "." {
		r, err := c.root()
		if err != nil {
			return nil, err
		}
		defer r.Close()
		return r.Stat(".")
	}
	r, name, err := c.parent(rel)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Lstat(name)
}

// Open opens the regular file rel for reading.
func (c Confined) Open(rel string) (*os.File, fs.FileInfo, error) {
	r, name, err := c.parent(rel)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	return fsOpenAt(r, name)
}

// MkdirAll makes the folder rel and its missing parents (Dir too), each
// with perm; a symlink on the way is refused, not followed.
func (c Confined) MkdirAll(rel string, perm fs.FileMode) error {
	if err := fsCheckRel(rel); err != nil {
		return err
	}
	if err := os.MkdirAll(c.Dir, perm); err != nil {
		return err
	}
	r, err := c.root()
	if err != nil {
		return err
	}
	for _, name := range fsSplit(rel) {
		if name == "." {
			continue
		}
		if err := r.Mkdir(name, perm); err != nil && !errors.Is(err, fs.ErrExist) {
			r.Close()
			return err
		}
		sub, err := fsStepDir(r, name)
		r.Close()
		if err != nil {
			return err
		}
		r = sub
	}
	return r.Close()
}

// WriteFile replaces rel with data, atomically (see Save).
func (c Confined) WriteFile(rel string, data []byte, perm fs.FileMode) error {
	_, err := c.Save(rel, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	return err
}

// Save replaces rel with what fill writes and returns its size: a
// temporary file made beside it (never through a symlink), filled, synced,
// then renamed over rel (a symlink found there is replaced, not followed),
// so a reader sees the old content or the new, never half. On any error
// the temporary file is removed and rel is left as it was.
func (c Confined) Save(rel string, perm fs.FileMode, fill func(w io.Writer) error) (size int64, err error) {
	r, name, err := c.parent(rel)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	tmp := fsTempPrefix + fsRandom() + ".tmp"
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			_ = r.Remove(tmp)
		}
	}()
	cw := &fsCountWriter{w: f}
	if err = fill(cw); err == nil {
		if err = f.Sync(); err == nil {
			err = f.Chmod(perm)
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	if err = r.Rename(tmp, name); err != nil {
		return 0, err
	}
	return cw.n, nil
}

// RemoveAll removes rel and what it holds; a symlink is removed, never
// followed.
func (c Confined) RemoveAll(rel string) error {
	r, name, err := c.parent(rel)
	if err != nil {
		return err
	}
	defer r.Close()
	return r.RemoveAll(name)
}

// ReadDir lists the folder rel, sorted by name.
func (c Confined) ReadDir(rel string) ([]fs.DirEntry, error) {
	r, err := c.Folder(rel)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return fsReadDir(r)
}

// WalkFunc is what Walk calls for each entry: its slash-separated path
// relative to Dir, the entry, and the folder that holds it, in which
// OpenIn opens the entry.
type WalkFunc func(rel string, d fs.DirEntry, dir *os.Root) error

// Walk visits what the folder rel holds, depth first, each folder's
// entries in lexical order, following no symlink (fs.WalkDir's SkipDir and
// SkipAll apply). A folder that cannot be read, or that changed under the
// walk, is skipped.
func (c Confined) Walk(rel string, fn WalkFunc) error {
	r, err := c.Folder(rel)
	if err != nil {
		return err
	}
	defer r.Close()
	prefix := filepath.ToSlash(filepath.Clean(rel))
	if prefix == "." {
		prefix = ""
	}
	err = fsWalkDir(r, prefix, fn)
	if errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

// OpenIn opens the regular file name of dir (a folder Walk gave) for
// reading, only if it is the file lstat sees there: never a symlink, nor
// a file swapped in.
func OpenIn(dir *os.Root, name string) (*os.File, error) {
	f, _, err := fsOpenAt(dir, name)
	return f, err
}

// OpenReason is why an open of Confined failed, in words for a tool's
// one-line refusal ("does not exist", "leads outside its folder: refused").
func OpenReason(err error) string { return fsOpenReason(err) }

// fsCountWriter counts the bytes written through it.
type fsCountWriter struct {
	w io.Writer
	n int64
}

func (c *fsCountWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// fsTempPrefix starts the name of Save's temporary files.
const fsTempPrefix = ".agent-write-"

// fsRandom is a random name part for temporary files.
func fsRandom() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// fsStepDir opens the folder name of parent (one name, no slash) as a
// root, only if it is the folder lstat saw: a symlink is refused, and so is
// a folder swapped in between the lstat and the open.
func fsStepDir(parent *os.Root, name string) (*os.Root, error) {
	fi, err := parent.Lstat(name)
	switch {
	case err != nil:
		return nil, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: errFsSymlink}
	case !fi.IsDir():
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ENOTDIR}
	}
	sub, err := parent.OpenRoot(name)
	if err != nil {
		return nil, fsOpenError(parent, name, fi, err)
	}
	if st, err := sub.Stat("."); err != nil || !os.SameFile(fi, st) {
		sub.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: errFsChanged}
	}
	return sub, nil
}

// fsOpenAt opens the regular file name of dir for reading, only if it is
// the file lstat saw. O_NONBLOCK keeps a pipe swapped in from blocking the
// open (it is refused right after); on a regular file it changes nothing.
func fsOpenAt(dir *os.Root, name string) (*os.File, fs.FileInfo, error) {
	fi, err := dir.Lstat(name)
	switch {
	case err != nil:
		return nil, nil, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, nil, &fs.PathError{Op: "open", Path: name, Err: errFsSymlink}
	case fi.IsDir():
		return nil, nil, &fs.PathError{Op: "open", Path: name, Err: errFsIsDir}
	case !fi.Mode().IsRegular():
		return nil, nil, &fs.PathError{Op: "open", Path: name, Err: errFsNotRegular}
	}
	f, err := dir.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fsOpenError(dir, name, fi, err)
	}
	if st, err := f.Stat(); err != nil || !os.SameFile(fi, st) {
		f.Close()
		return nil, nil, &fs.PathError{Op: "open", Path: name, Err: errFsChanged}
	}
	return f, fi, nil
}

// fsOpenError is the error of an open of name in dir that failed after
// lstat saw fi there: errFsChanged when the entry is no longer fi (a
// symlink leading out of dir fails the open itself), else err.
func fsOpenError(dir *os.Root, name string, fi fs.FileInfo, err error) error {
	if now, lerr := dir.Lstat(name); lerr == nil && (now.Mode()&fs.ModeSymlink != 0 || !os.SameFile(fi, now)) {
		return &fs.PathError{Op: "open", Path: name, Err: errFsChanged}
	}
	return err
}

// fsWalk visits what the folder root holds, depth first, each folder's
// entries in lexical order, following no symlink: fn gets an entry's
// slash-separated path relative to root, the entry, and the folder that
// holds it (open a file with fsOpenAt(dir, d.Name())). fn's fs.SkipDir on
// a folder skips it, on a file the rest of its folder; fs.SkipAll ends the
// walk; any other error ends it with that error. A folder that cannot be
// opened or read (or that changed under the walk) is skipped.
func fsWalk(root *os.Root, fn WalkFunc) error {
	err := fsWalkDir(root, "", fn)
	if errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

// fsReadDir lists the folder dir, sorted by name.
func fsReadDir(dir *os.Root) ([]fs.DirEntry, error) {
	f, err := dir.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}

func fsWalkDir(dir *os.Root, prefix string, fn WalkFunc) error {
	entries, err := fsReadDir(dir)
	if err != nil && len(entries) == 0 {
		return nil
	}
	for _, e := range entries {
		rel := path.Join(prefix, e.Name())
		err := fn(rel, e, dir)
		switch {
		case errors.Is(err, fs.SkipDir) && e.IsDir():
			continue
		case errors.Is(err, fs.SkipDir):
			return nil
		case err != nil:
			return err
		case !e.IsDir():
			continue
		}
		sub, err := fsStepDir(dir, e.Name())
		if err != nil {
			continue
		}
		err = fsWalkDir(sub, rel, fn)
		sub.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// fsOpenReason is the reason a confined open failed, in the words the
// model reads after the path.
func fsOpenReason(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "does not exist"
	case errors.Is(err, errFsChanged):
		return "changed while being opened (a symlink swapped in?): refused"
	case errors.Is(err, errFsSymlink):
		return "has a symlink where the checked path has none: refused"
	case errors.Is(err, errFsIsDir):
		return "is a folder"
	case errors.Is(err, errFsNotRegular):
		return "is not a regular file"
	case errors.Is(err, errFsOutside):
		return "leads outside its folder: refused"
	case errors.Is(err, syscall.ENOTDIR):
		return "goes through a file as if it were a folder"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	}
	return fmt.Sprint(fsErrText(err))
}
