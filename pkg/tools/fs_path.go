package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// fsMaxLinks bounds the symlinks followed while resolving one path, as
// Linux's MAXSYMLINKS (40) bounds path lookup.
const fsMaxLinks = 40

// errFsLinkLoop reports a path with more than fsMaxLinks symlinks on it.
var errFsLinkLoop = errors.New("too many levels of symbolic links")

// fsEvalPath returns the physical path of the absolute path abs: every
// symlink on it resolved, as the kernel would follow them, and the
// components that do not exist yet kept as they are. Unlike
// filepath.EvalSymlinks it works for paths that do not exist, including a
// dangling symlink, which resolves to where its target would be created.
func fsEvalPath(abs string) (string, error) {
	vol := filepath.VolumeName(abs)
	root := vol + string(filepath.Separator)
	rest := fsSplit(abs[len(vol):])
	resolved := root
	links := 0
	missing := false
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, c)
		if missing {
			resolved = next
			continue
		}
		fi, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// Nothing below a missing component exists either: the rest
			// is taken literally.
			missing = true
			resolved = next
			continue
		case err != nil:
			return "", err
		case fi.Mode()&fs.ModeSymlink == 0:
			resolved = next
			continue
		}
		if links++; links > fsMaxLinks {
			return "", &fs.PathError{Op: "resolve", Path: abs, Err: errFsLinkLoop}
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			tv := filepath.VolumeName(target)
			resolved = tv + string(filepath.Separator)
			target = target[len(tv):]
		}
		rest = append(fsSplit(target), rest...)
	}
	return resolved, nil
}

// fsParents resolves paths as fsEvalPath does, each directory once: the
// paths of one directory (a database and its -wal, -shm and -journal
// files) cost a lookup of their last component each.
type fsParents map[string]fsResolved

type fsResolved struct {
	path string
	err  error
}

// eval is fsEvalPath(abs) for a clean absolute path.
func (ps fsParents) eval(abs string) (string, error) {
	dir, name := filepath.Split(abs)
	dir = filepath.Clean(dir)
	if name == "" || dir == abs {
		return fsEvalPath(abs)
	}
	parent, ok := ps[dir]
	if !ok {
		parent.path, parent.err = fsEvalPath(dir)
		ps[dir] = parent
	}
	if parent.err != nil {
		return "", parent.err
	}
	next := filepath.Join(parent.path, name)
	fi, err := os.Lstat(next)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return next, nil // taken literally, as below a missing component
	case err != nil:
		return "", err
	case fi.Mode()&fs.ModeSymlink == 0:
		return next, nil
	}
	return fsEvalPath(abs) // a symlink: followed the long way
}

// fsSplit splits a path into its components.
func fsSplit(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return r < 0x80 && os.IsPathSeparator(uint8(r)) })
}

// fsInside reports whether p is root or lies under it.
func fsInside(p, root string) bool {
	if p == root {
		return true
	}
	if !strings.HasSuffix(root, string(filepath.Separator)) {
		root += string(filepath.Separator)
	}
	return strings.HasPrefix(p, root)
}

// fsIsDotEnv reports whether name is a .env file name (.env, .env.local,
// .env.production, …): such files hold credentials wherever they are.
func fsIsDotEnv(name string) bool {
	return name == ".env" || strings.HasPrefix(name, ".env.")
}

// Resolve returns the physical path a file tool acting for the thread
// threadKey would touch for p, or an error whose text tells the model why
// it may not. p is absolute or relative to the thread's workspace; the
// result lies inside the workspace, <Home>/skills or <Home>/knowledge,
// after every symlink on the way has been followed, and is neither a Deny
// path nor a .env file. The chat upload tool can use it too.
func (b *Builtins) Resolve(threadKey, p string) (string, error) {
	ws, err := b.Workspace(threadKey)
	if err != nil {
		return "", err
	}
	return b.resolve(ws, p)
}

// resolve is Resolve for the workspace ws.
func (b *Builtins) resolve(ws, p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", errors.New("the path is empty")
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", errors.New("the path contains a NUL byte")
	}
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(ws, p)
	}
	abs = filepath.Clean(abs)
	real, err := fsEvalPath(abs)
	if err != nil {
		return "", fsPathError(abs, err)
	}
	shown := abs
	if real != abs {
		shown = abs + " (resolving to " + real + ")"
	}
	if err := fsSystemPath(abs, real); err != nil {
		return "", err
	}
	if !fsInside(real, ws) && !fsInside(real, b.skills) && !fsInside(real, b.knowledge) {
		return "", fmt.Errorf("path %s is outside the allowed folders (the workspace, skills/ and knowledge/)", shown)
	}
	if err := b.denied(abs, real); err != nil {
		return "", err
	}
	return real, nil
}

// fsTarget is a path the confinement check let through: its physical
// path (what the model is shown), the allowed folder it lies in, and its
// path inside that folder, which is where the file is opened, through a
// root of the folder (Confined): the check holds for the file opened.
type fsTarget struct {
	path string
	in   Confined
	rel  string
}

// target resolves p as resolve does and places it in its allowed folder.
func (b *Builtins) target(ws, p string) (fsTarget, error) {
	real, err := b.resolve(ws, p)
	if err != nil {
		return fsTarget{}, err
	}
	dir := ""
	for _, r := range []string{ws, b.skills, b.knowledge} {
		if fsInside(real, r) && len(r) > len(dir) {
			dir = r // the innermost, should one hold another
		}
	}
	rel, err := filepath.Rel(dir, real)
	if err != nil {
		return fsTarget{}, fmt.Errorf("path %s: %v", real, err)
	}
	return fsTarget{path: real, in: Confined{Dir: dir}, rel: rel}, nil
}

// OpenInWorkspace opens the regular file p (absolute, or relative to the
// thread's workspace) for reading, as the file tools would, and only from
// the workspace itself (the chat upload sends only files from there, not
// from skills/ or knowledge/).
func (b *Builtins) OpenInWorkspace(threadKey, p string) (*os.File, error) {
	ws, err := b.Workspace(threadKey)
	if err != nil {
		return nil, err
	}
	t, err := b.target(ws, p)
	if err != nil {
		return nil, err
	}
	if t.in.Dir != ws {
		return nil, fmt.Errorf("path %s is outside the workspace %s: only files inside it can be uploaded", t.path, ws)
	}
	f, _, err := t.in.Open(t.rel)
	if err != nil {
		return nil, fmt.Errorf("%s %s", t.path, fsOpenReason(err))
	}
	return f, nil
}

// fsSystemTrees are the kernel's own file systems: process state (the
// runtime's environment among it), kernel settings and devices. The file
// tools never touch them, whatever the roots.
var fsSystemTrees = []string{"/proc", "/sys", "/dev"}

// fsSystemPath refuses a path into a system tree, and a path naming
// anything but a regular file or a folder (a device node, a pipe that
// would block a read forever, a socket).
func fsSystemPath(abs, real string) error {
	for _, t := range fsSystemTrees {
		if fsInside(real, t) || fsInside(abs, t) {
			return fmt.Errorf("path %s is under %s: system paths are off limits", abs, t)
		}
	}
	fi, err := os.Lstat(real)
	if err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
		return fmt.Errorf("path %s is not a regular file or a folder (a device, pipe or socket): off limits", abs)
	}
	return nil
}

// denied refuses the .env files and the Deny paths, by the name the model
// gave (abs) and by the file it names (real).
func (b *Builtins) denied(abs, real string) error {
	if fsIsDotEnv(filepath.Base(abs)) || fsIsDotEnv(filepath.Base(real)) {
		return fmt.Errorf("path %s is a .env file: .env files hold credentials and are off limits", abs)
	}
	for _, d := range b.deny {
		if fsInside(real, d) || fsInside(abs, d) {
			return fmt.Errorf("path %s is off limits: it is private runtime state", abs)
		}
	}
	return nil
}

// fsPathError turns a resolution failure into a reason the model can act
// on.
func fsPathError(abs string, err error) error {
	switch {
	case errors.Is(err, errFsLinkLoop):
		return fmt.Errorf("path %s has too many symlinks (a loop?)", abs)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("path %s goes through a file as if it were a folder", abs)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("path %s: permission denied", abs)
	}
	return fmt.Errorf("path %s cannot be resolved: %v", abs, fsErrText(err))
}

// fsErrText is the reason of a file system error without the operation
// and path os.PathError repeats.
func fsErrText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err.Error()
	}
	return err.Error()
}
