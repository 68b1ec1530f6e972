package ingest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/persona-runtime/agent/pkg/tools"
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
// knowledge base in dir. Only regular files are read, through a root of
// the knowledge base that follows no symlink (tools.Confined): a symlink
// could pull any file of the volume into the prompt.
func readSources(dir string) (sources, error) {
	var src sources
	kb := tools.Confined{Dir: dir}
	readme, err := readRegular(kb, "README.md", maxReadme)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return src, err
	}
	if len(readme) > maxReadme {
		readme = readme[:maxReadme] + "\n[cut: Read README.md for the rest]"
	}
	src.readme = readme
	for _, e := range mdFiles(kb, "raw") {
		if st, err := kb.Lstat("raw/" + e.Name()); err == nil && st.Mode().IsRegular() {
			src.raw = append(src.raw, file{path: "raw/" + e.Name(), size: st.Size()})
		}
	}
	for _, e := range mdFiles(kb, "wiki") {
		src.index = append(src.index, indexLine{path: "wiki/" + e.Name(), title: firstHeading(kb, "wiki/"+e.Name())})
	}
	return src, nil
}

// mdFiles are the regular *.md files of the folder dir of kb, by name; none
// when dir is missing or not a real folder.
func mdFiles(kb tools.Confined, dir string) []fs.DirEntry {
	entries, err := kb.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []fs.DirEntry
	for _, e := range entries {
		if ok, _ := filepath.Match("*.md", e.Name()); ok && e.Type().IsRegular() {
			out = append(out, e)
		}
	}
	return out
}

var errNotRegular = errors.New("not a regular file")

// readRegular reads the regular file rel of kb, up to max bytes and one
// more (so that the caller can tell it was cut).
func readRegular(kb tools.Confined, rel string, max int64) (string, error) {
	f, _, err := kb.Open(rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		return "", fmt.Errorf("%s: %w (%s)", rel, errNotRegular, tools.OpenReason(err))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	return string(b), err
}

// firstHeading returns the text of the first markdown heading of the file
// rel of kb, looking at its first 64 KiB.
func firstHeading(kb tools.Confined, rel string) string {
	f, _, err := kb.Open(rel)
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
