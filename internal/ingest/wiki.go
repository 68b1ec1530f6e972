package ingest

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// wikiDir returns the real path of dir/wiki, creating it when missing. It
// fails when wiki/ is a symlink or resolves outside dir.
func wikiDir(dir string) (string, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	wiki := filepath.Join(root, "wiki")
	st, err := os.Lstat(wiki)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.Mkdir(wiki, 0o755); err != nil {
			return "", err
		}
	case err != nil:
		return "", err
	case !st.IsDir():
		return "", errors.New("wiki/ is not a directory")
	}
	real, err := filepath.EvalSymlinks(wiki)
	if err != nil {
		return "", err
	}
	if rel, err := filepath.Rel(root, real); err != nil || rel != "wiki" {
		return "", errors.New("wiki/ resolves outside the knowledge base")
	}
	return real, nil
}

// wikiName returns the file name of p when p is a clean relative path
// wiki/<name>.md: slash-separated, no "." or ".." segment, no backslash,
// not hidden.
func wikiName(p string) (string, bool) {
	if p == "" || strings.ContainsAny(p, "\\\x00:") || path.IsAbs(p) || filepath.IsAbs(p) || path.Clean(p) != p {
		return "", false
	}
	d, name := path.Split(p)
	if d != "wiki/" || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".md") || name == ".md" {
		return "", false
	}
	return name, true
}
