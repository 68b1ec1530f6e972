package deps

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/persona-runtime/agent/pkg/fsutil"
)

// markerFile, inside a skill copied from a repository folder, names the
// commit and folder it was copied from: the copy has no .git to ask.
const markerFile = ".agent-sha"

// tempRoot is where an install works: .cache/deps/tmp/, on the home's
// file system, so finished work can be renamed into place, and outside
// skills/ and knowledge/, so half-done work is never taken for a skill.
func (in *Installer) tempRoot() string { return filepath.Join(in.Home, ".cache", "deps", "tmp") }

// tempDir makes a fresh directory under tempRoot, held while the install
// works in it (fsutil.MkdirHeld). cleanup removes whatever is left in it.
func (in *Installer) tempDir(name string) (dir string, cleanup func(), err error) {
	if err := os.MkdirAll(in.tempRoot(), 0o755); err != nil {
		return "", nil, err
	}
	d, err := fsutil.MkdirHeld(in.tempRoot(), name+"-*")
	if err != nil {
		return "", nil, err
	}
	return d.Path, d.Remove, nil
}

// sweepTemp removes what installs killed midway left under tempRoot —
// half-done clones and copies, old copies set aside — and nothing an
// install still running holds (fsutil.SweepUnheld).
func (in *Installer) sweepTemp() {
	fsutil.SweepUnheld(in.tempRoot(), "", time.Now())
}

// replaceDir moves the directory src to dest, replacing whatever is there.
// The old dest is first renamed aside, then src renamed in; a reader may
// find dest missing between the two renames, never half written.
func (in *Installer) replaceDir(src, dest string) error {
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	var old string
	if _, err := os.Lstat(dest); err == nil {
		aside, cleanup, err := in.tempDir(filepath.Base(dest) + "-old")
		if err != nil {
			return err
		}
		defer cleanup()
		old = filepath.Join(aside, "old")
		if err := os.Rename(dest, old); err != nil {
			return err
		}
	}
	if err := os.Rename(src, dest); err != nil {
		if old != "" {
			err = errors.Join(err, os.Rename(old, dest))
		}
		return err
	}
	return nil
}

// copyFolder copies d's folder out of the checkout repo at commit sha into
// dst (which must not exist) and writes the marker there.
func (in *Installer) copyFolder(d dep, repo, sha, dst string) error {
	root, err := filepath.EvalSymlinks(repo)
	if err != nil {
		return err
	}
	src, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(d.path)))
	if errors.Is(err, fs.ErrNotExist) {
		err = errors.New("no such folder in the repository")
	} else if err == nil && !within(root, src) {
		err = errors.New("it leaves the repository")
	}
	if err == nil {
		var st os.FileInfo
		if st, err = os.Stat(src); err == nil && !st.IsDir() {
			err = errors.New("not a folder")
		}
	}
	if err != nil {
		return fmt.Errorf("folder %q at commit %s: %w", d.path, sha, err)
	}
	if err := copyTree(src, dst, func(rel string) {
		in.progressf("warning: %s: skipped %s: symlink leaving the folder or dangling", d, rel)
	}); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dst, markerFile), []byte(sha+"\n"+d.path+"\n"), 0o644)
}

// readMarker reads the commit and folder of a copied skill.
func readMarker(dir string) (sha, path string, err error) {
	data, err := os.ReadFile(filepath.Join(dir, markerFile))
	if err != nil {
		return "", "", fmt.Errorf("installed copy has no %s marker", markerFile)
	}
	sha, path, _ = strings.Cut(strings.TrimSpace(string(data)), "\n")
	return strings.TrimSpace(sha), strings.TrimSpace(path), nil
}

// copyTree copies the files, folders and symlinks under src to dst,
// leaving out .git. A symlink that does not resolve inside dst after the
// copy is removed and reported to skipped: a copied skill must not reach
// into the rest of the home.
func copyTree(src, dst string, skipped func(rel string)) error {
	var links []string
	err := filepath.WalkDir(src, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		if e.Name() == ".git" && rel != "." {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case e.IsDir():
			return os.Mkdir(out, 0o755)
		case e.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			links = append(links, rel)
			return os.Symlink(target, out)
		case e.Type().IsRegular():
			info, err := e.Info()
			if err != nil {
				return err
			}
			return copyFile(path, out, info.Mode().Perm())
		}
		return nil // sockets, devices: nothing a skill needs
	})
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	root, err := filepath.EvalSymlinks(dst)
	if err != nil {
		return err
	}
	for _, rel := range links {
		link := filepath.Join(dst, rel)
		if target, err := filepath.EvalSymlinks(link); err != nil || !within(root, target) {
			if err := os.Remove(link); err != nil {
				return err
			}
			skipped(filepath.ToSlash(rel))
		}
	}
	return nil
}

// within reports whether path is root or below it; both must be clean.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// copyFile copies the regular file src to dst with perm. An existing dst
// is an error: the copy never replaces what it did not create.
func copyFile(src, dst string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Close()
}
