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

// maxInputBytes bounds the README and raw files sent in the one model
// call: about 150k tokens at 4 bytes a token, which leaves room for the
// answer in a 200k-token context window.
const maxInputBytes = 600_000

// sources is what the model reads.
type sources struct {
	readme string
	raw    []file      // raw/*.md, by name
	index  []indexLine // wiki/*.md, by name
}

type file struct {
	path    string // relative, slash-separated: raw/a.md
	content string
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
	src.readme = readme
	total := len(readme)
	names, err := filepath.Glob(filepath.Join(dir, "raw", "*.md"))
	if err != nil {
		return src, err
	}
	for _, name := range names { // Glob sorts
		content, err := readRegular(name)
		if errors.Is(err, errNotRegular) {
			continue
		}
		if err != nil {
			return src, err
		}
		total += len(content)
		if total > maxInputBytes {
			return src, fmt.Errorf("raw/ and README.md hold more than %d bytes, more than one model call takes", maxInputBytes)
		}
		src.raw = append(src.raw, file{path: "raw/" + filepath.Base(name), content: content})
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
