package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// fsMaxGrepLine is the longest line Grep matches; past it the rest of the
// file is skipped (such "lines" are minified code or data, not text).
const fsMaxGrepLine = 1 << 20

// grep is the Grep tool.
func (b *Builtins) grep(ctx context.Context, input json.RawMessage) Result {
	var in struct {
		Pattern    string `json:"pattern"`
		Path       string `json:"path"`
		Glob       string `json:"glob"`
		OutputMode string `json:"output_mode"`
		IgnoreCase bool   `json:"-i"`
	}
	if err := decode(input, &in); err != nil {
		return Errorf("%v", err)
	}
	if in.Pattern == "" {
		return Errorf("pattern is required")
	}
	expr := in.Pattern
	if in.IgnoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return Errorf("invalid regular expression (Go RE2 syntax): %v", err)
	}
	switch in.OutputMode {
	case "":
		in.OutputMode = "content"
	case "content", "files_with_matches", "count":
	default:
		return Errorf("output_mode must be content, files_with_matches or count")
	}
	var g *fsGlob
	if in.Glob != "" {
		if g, err = fsCompileGlob(filepath.ToSlash(in.Glob)); err != nil {
			return Errorf("%v", err)
		}
	}
	ws, res := b.threadWorkspace(ctx)
	if res != nil {
		return *res
	}
	root := in.Path
	if root == "" {
		root = ws
	}
	t, err := b.target(ws, root)
	if err != nil {
		return Errorf("%v", err)
	}
	real := t.path
	fi, err := t.in.Lstat(t.rel)
	if err != nil {
		return Errorf("%s does not exist", real)
	}

	s := &fsGrep{b: b, re: re, mode: in.OutputMode}
	switch {
	case fi.Mode().IsRegular():
		if f, _, err := t.in.Open(t.rel); err == nil {
			s.file(real, f)
		}
	case !fi.IsDir():
		return Errorf("%s is not a regular file or a folder", real)
	default:
		dir, err := t.in.Folder(t.rel)
		if err != nil {
			return Errorf("%s %s", real, fsOpenReason(err))
		}
		defer dir.Close()
		err = fsWalk(dir, func(rel string, d fs.DirEntry, parent *os.Root) error {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return ctxErr
			}
			switch {
			case d.IsDir():
				if d.Name() == ".git" {
					return fs.SkipDir
				}
				return nil
			case !d.Type().IsRegular(): // symlinks are not followed
				return nil
			}
			if g != nil {
				name := rel
				if !strings.Contains(in.Glob, "/") {
					name = d.Name()
				}
				if !g.match(name) {
					return nil
				}
			}
			p := filepath.Join(real, filepath.FromSlash(rel))
			if s.b.denied(p, p) != nil {
				return nil
			}
			f, _, err := fsOpenAt(parent, d.Name())
			if err != nil {
				return nil // unreadable, or swapped since the listing
			}
			if !s.file(p, f) {
				return fs.SkipAll
			}
			return nil
		})
		if err != nil {
			return Errorf("grep cancelled")
		}
	}
	if s.out.Len() == 0 && !s.full {
		return Result{Text: "no matches"}
	}
	if s.full {
		fmt.Fprintf(&s.out, "[output truncated at %d bytes: more matches not shown; narrow the pattern, path or glob]\n", b.maxOutput)
	}
	return Result{Text: s.out.String()}
}

// fsGrep is one Grep call's state.
type fsGrep struct {
	b    *Builtins
	re   *regexp.Regexp
	mode string
	out  strings.Builder
	full bool // the output budget is spent
}

// file searches the open file f, shown as p, and closes it; it reports
// false once the output is full.
func (s *fsGrep) file(p string, f *os.File) bool {
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	if head, _ := br.Peek(fsSniffBytes); bytes.IndexByte(head, 0) >= 0 {
		return true // binary
	}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 64<<10), fsMaxGrepLine)
	count := 0
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if !s.re.Match(line) {
			continue
		}
		count++
		switch s.mode {
		case "files_with_matches":
			return s.emit(p + "\n")
		case "content":
			text, _ := fsCutLine(line)
			if !s.emit(fmt.Sprintf("%s:%d:%s\n", p, n, text)) {
				return false
			}
		}
	}
	if s.mode == "count" && count > 0 {
		return s.emit(fmt.Sprintf("%s:%d\n", p, count))
	}
	return true
}

// emit adds one scrubbed output line, unless it would pass the budget.
func (s *fsGrep) emit(line string) bool {
	line = s.b.scrub(line)
	if s.out.Len()+len(line) > s.b.maxOutput {
		s.full = true
		return false
	}
	s.out.WriteString(line)
	return true
}

// ls is the LS tool.
func (b *Builtins) ls(ctx context.Context, input json.RawMessage) Result {
	var in struct {
		Path string `json:"path"`
	}
	if err := decode(input, &in); err != nil {
		return Errorf("%v", err)
	}
	ws, res := b.threadWorkspace(ctx)
	if res != nil {
		return *res
	}
	target := in.Path
	if target == "" {
		target = ws
	}
	t, err := b.target(ws, target)
	if err != nil {
		return Errorf("%v", err)
	}
	real := t.path
	fi, err := t.in.Lstat(t.rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Errorf("folder %s does not exist", real)
	case err != nil:
		return Errorf("%s: %s", real, fsErrText(err))
	case !fi.IsDir():
		return Errorf("%s is a file, not a folder: use Read", real)
	}
	dir, err := t.in.Folder(t.rel)
	if err != nil {
		return Errorf("list %s: %s", real, fsOpenReason(err))
	}
	entries, err := fsReadDir(dir)
	dir.Close()
	if err != nil {
		return Errorf("list %s: %s", real, fsErrText(err))
	}
	var out strings.Builder
	out.WriteString(real + ":\n")
	if len(entries) == 0 {
		out.WriteString("(empty folder)\n")
	}
	for n, e := range entries {
		name := e.Name()
		switch {
		case e.IsDir():
			name += "/"
		case e.Type()&fs.ModeSymlink != 0:
			name += "@"
		}
		line := b.scrub(name) + "\n"
		if out.Len()+len(line) > b.maxOutput {
			fmt.Fprintf(&out, "[output truncated: %d more entries not shown; use Glob to narrow]\n", len(entries)-n)
			break
		}
		out.WriteString(line)
	}
	return Result{Text: out.String()}
}
