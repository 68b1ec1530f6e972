package ingest

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxReadme bounds the README put in the sub-agent's prompt; past it the
// model reads the file itself.
const maxReadme = 16 << 10

// sources is what the sub-agent is told up front: the README, the raw
// files by name and size (the changed ones first), the wiki's index.
type sources struct {
	readme  string
	raw     []file      // raw/*.md
	changed int         // how many of raw, first, are new or changed since the last synthesis
	index   []indexLine // wiki/*.md, by name
}

type file struct {
	path string // relative, slash-separated: raw/a.md
	size int64
}

type indexLine struct {
	path  string // wiki/a.md
	title string // its first heading, "" when none
}

// readSources reads README.md, raw/*.md and the wiki index of the
// knowledge base in dir. Only regular files are read: a symlink could pull
// any file of the volume into the prompt.
func readSources(dir string) (sources, error) {
	var src sources
	readme, err := readRegular(filepath.Join(dir, "README.md"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return src, err
	}
	if len(readme) > maxReadme {
		readme = readme[:maxReadme] + "\n[cut: Read README.md for the rest]"
	}
	src.readme = readme
	names, err := filepath.Glob(filepath.Join(dir, "raw", "*.md"))
	if err != nil {
		return src, err
	}
	for _, name := range names { // Glob sorts
		st, err := os.Lstat(name)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		src.raw = append(src.raw, file{path: "raw/" + filepath.Base(name), size: st.Size()})
	}
	pages, err := filepath.Glob(filepath.Join(dir, "wiki", "*.md"))
	if err != nil {
		return src, err
	}
	for _, name := range pages {
		if st, err := os.Lstat(name); err != nil || !st.Mode().IsRegular() {
			continue
		}
		src.index = append(src.index, indexLine{path: "wiki/" + filepath.Base(name), title: firstHeading(name)})
	}
	return src, nil
}

var errNotRegular = errors.New("not a regular file")

func readRegular(path string) (string, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s: %w", path, errNotRegular)
	}
	b, err := os.ReadFile(path)
	return string(b), err
}

// firstHeading returns the text of the first markdown heading of the file
// at path, looking at its first 64 KiB.
func firstHeading(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "#") {
			return strings.TrimSpace(strings.TrimLeft(line, "#"))
		}
	}
	return ""
}

// changedFirst moves the raw files in changed (new or modified since the
// last synthesis) to the front, and counts them.
func (src *sources) changedFirst(changed map[string]bool) {
	var first, rest []file
	for _, f := range src.raw {
		if changed[f.path] {
			first = append(first, f)
		} else {
			rest = append(rest, f)
		}
	}
	src.raw, src.changed = append(first, rest...), len(first)
}
