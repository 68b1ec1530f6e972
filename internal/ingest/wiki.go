package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/persona-runtime/agent/internal/fsutil"
)

// applyAnswer deletes and writes the wiki pages of a. Paths other than
// wiki/<name>.md, and pages that are not regular files, are refused with a
// warning in the log; nothing outside wiki/ is ever touched.
func applyAnswer(ctx context.Context, dir string, a answer, log *slog.Logger) error {
	wiki, err := wikiDir(dir)
	if err != nil {
		return err
	}
	refuse := func(p, why string) {
		log.WarnContext(ctx, "ingest: refused a page of the model's answer", "path", p, "reason", why)
	}
	// Deletions first, so a page both deleted and written is written.
	for _, p := range a.Delete {
		name, ok := wikiName(p)
		if !ok {
			refuse(p, "not wiki/<name>.md")
			continue
		}
		target := filepath.Join(wiki, name)
		st, err := os.Lstat(target)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return err
		case st.IsDir():
			refuse(p, "a directory")
			continue
		}
		if err := os.Remove(target); err != nil {
			return fmt.Errorf("delete %s: %w", p, err)
		}
	}
	for _, f := range a.Files {
		name, ok := wikiName(f.Path)
		if !ok {
			refuse(f.Path, "not wiki/<name>.md")
			continue
		}
		if strings.TrimSpace(f.Content) == "" {
			refuse(f.Path, "empty content")
			continue
		}
		target := filepath.Join(wiki, name)
		if st, err := os.Lstat(target); err == nil && !st.Mode().IsRegular() {
			refuse(f.Path, "not a regular file")
			continue
		}
		content := strings.TrimRight(f.Content, "\n") + "\n"
		if err := fsutil.WriteFileAtomic(target, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

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
