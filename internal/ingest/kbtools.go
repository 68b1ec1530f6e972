package ingest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/persona-runtime/agent/pkg/tools"
)

// The sub-agent's tools: the file tools of a turn by their well-known
// names and fields, confined to one knowledge base. Every path (relative
// paths resolve against the knowledge base) must stay inside it, never in
// .git; reading covers the whole knowledge base, writing only
// wiki/<name>.md. A refused call is a tool error the model reads.
const (
	maxRead     = 256 << 10 // bytes of one Read
	maxMatches  = 200       // lines of one Grep
	maxListings = 500       // entries of one LS or Glob
	// maxReadWhole caps a file loaded whole to be read or edited: wiki
	// pages and raw notes are far smaller.
	maxReadWhole = 16 << 20
)

// kbTools runs the sub-agent's tool calls in one knowledge base. Every
// file is opened through a root of the knowledge base (tools.Confined):
// no symlink, ".." or swap leads out of it.
type kbTools struct {
	root  string // the knowledge base, symlinks resolved
	files tools.Confined
	wrote map[string]bool
}

func newKBTools(dir string) (*kbTools, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	return &kbTools{root: root, files: tools.Confined{Dir: root}, wrote: map[string]bool{}}, nil
}

// schema is a JSON schema of an object with the given string properties
// (a trailing "?" marks an optional one) and extra typed ones.
func schema(props ...string) anthropic.ToolInputSchemaParam {
	p := map[string]any{}
	var required []string
	for _, name := range props {
		typ := "string"
		if n, ok := strings.CutSuffix(name, ":int"); ok {
			name, typ = n, "integer"
		}
		if n, ok := strings.CutSuffix(name, ":bool"); ok {
			name, typ = n, "boolean"
		}
		if n, ok := strings.CutSuffix(name, "?"); ok {
			name = n
		} else {
			required = append(required, name)
		}
		p[name] = map[string]any{"type": typ}
	}
	return anthropic.ToolInputSchemaParam{Properties: p, Required: required}
}

// definitions are the tools offered to the model.
func (k *kbTools) definitions() []anthropic.ToolUnionParam {
	tool := func(name, desc string, s anthropic.ToolInputSchemaParam) anthropic.ToolUnionParam {
		return anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{Name: name, Description: anthropic.String(desc), InputSchema: s}}
	}
	return []anthropic.ToolUnionParam{
		tool("LS", "List a folder of the knowledge base (default: its root).", schema("path?")),
		tool("Glob", "Find files of the knowledge base whose path matches a pattern such as raw/*.md.", schema("pattern")),
		tool("Grep", "Search the knowledge base's files for a regular expression; optional path (folder or file) and glob (file name pattern).", schema("pattern", "path?", "glob?")),
		tool("Read", "Read a file of the knowledge base; offset (first line, from 1) and limit (lines) for a long one.", schema("file_path", "offset:int?", "limit:int?")),
		tool("Write", "Write a wiki page wiki/<name>.md in full (lowercase hyphenated name, starting with a # title). Only wiki/ may be written.", schema("file_path", "content")),
		tool("Edit", "Replace old_string by new_string in a wiki page (exactly once, or everywhere with replace_all). Only wiki/ may be edited.", schema("file_path", "old_string", "new_string", "replace_all:bool?")),
	}
}

// call runs one tool call: its result text, and whether it is an error.
func (k *kbTools) call(name string, input json.RawMessage) (string, bool) {
	var in struct {
		Path       string `json:"path"`
		Pattern    string `json:"pattern"`
		Glob       string `json:"glob"`
		FilePath   string `json:"file_path"`
		Offset     int    `json:"offset"`
		Limit      int    `json:"limit"`
		Content    string `json:"content"`
		OldString  string `json:"old_string"`
		NewString  string `json:"new_string"`
		ReplaceAll bool   `json:"replace_all"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return "invalid input: " + err.Error(), true
	}
	var text string
	var err error
	switch name {
	case "LS":
		text, err = k.ls(in.Path)
	case "Glob":
		text, err = k.glob(in.Pattern)
	case "Grep":
		text, err = k.grep(in.Pattern, in.Path, in.Glob)
	case "Read":
		text, err = k.read(in.FilePath, in.Offset, in.Limit)
	case "Write":
		text, err = k.write(in.FilePath, in.Content)
	case "Edit":
		text, err = k.edit(in.FilePath, in.OldString, in.NewString, in.ReplaceAll)
	default:
		return fmt.Sprintf("unknown tool %q: this task has LS, Glob, Grep, Read, Write and Edit", name), true
	}
	if err != nil {
		return err.Error(), true
	}
	if text == "" {
		text = "(nothing)"
	}
	return text, false
}

// rel turns p (relative to the knowledge base, or absolute inside it) into
// a clean slash-separated path relative to it, refusing anything outside
// it or in .git.
func (k *kbTools) rel(p string) (string, error) {
	if p == "" || p == "." || p == "/" {
		return ".", nil
	}
	if filepath.IsAbs(p) {
		r, err := filepath.Rel(k.root, filepath.Clean(p))
		if err != nil {
			return "", fmt.Errorf("%s is outside the knowledge base", p)
		}
		p = r
	}
	p = path.Clean(filepath.ToSlash(p))
	if p == ".." || strings.HasPrefix(p, "../") || strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("%s is outside the knowledge base", p)
	}
	if p == ".git" || strings.HasPrefix(p, ".git/") {
		return "", errors.New(".git is not part of the knowledge base's content")
	}
	return p, nil
}

// real resolves rel on disk: the physical path inside the knowledge base
// that rel names, symlinks followed only while they stay inside it, and
// never into .git.
func (k *kbTools) real(rel string) (string, error) {
	r, err := k.files.Resolve(filepath.FromSlash(rel))
	if err != nil {
		return "", fmt.Errorf("%s leads outside the knowledge base", rel)
	}
	r = filepath.ToSlash(r)
	if r == ".git" || strings.HasPrefix(r, ".git/") {
		return "", fmt.Errorf("%s leads into .git, which is not part of the knowledge base's content", rel)
	}
	if _, err := k.files.Lstat(r); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s does not exist", rel)
		}
		return "", fmt.Errorf("%s %s", rel, tools.OpenReason(err))
	}
	return r, nil
}

func (k *kbTools) ls(p string) (string, error) {
	rel, err := k.rel(p)
	if err != nil {
		return "", err
	}
	dir, err := k.real(rel)
	if err != nil {
		return "", err
	}
	entries, err := k.files.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("cannot list %s: %s", rel, tools.OpenReason(err))
	}
	var lines []string
	for _, e := range entries {
		if e.Name() == ".git" {
			continue
		}
		name := e.Name()
		if e.IsDir() {
			name += "/"
		}
		lines = append(lines, name)
		if len(lines) == maxListings {
			lines = append(lines, "(more not shown)")
			break
		}
	}
	return strings.Join(lines, "\n"), nil
}

// walk visits the regular files under rel (a folder or a file), relative
// paths slash-separated, skipping .git and symlinks; open opens the file
// visited.
func (k *kbTools) walk(rel string, visit func(rel string, open func() (*os.File, error)) bool) error {
	start, err := k.real(rel)
	if err != nil {
		return err
	}
	if st, err := k.files.Lstat(start); err == nil && st.Mode().IsRegular() {
		visit(start, func() (*os.File, error) {
			f, _, err := k.files.Open(start)
			return f, err
		})
		return nil
	}
	return k.files.Walk(start, func(r string, d fs.DirEntry, dir *os.Root) error {
		if d.IsDir() && d.Name() == ".git" {
			return fs.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if !visit(r, func() (*os.File, error) { return tools.OpenIn(dir, d.Name()) }) {
			return fs.SkipAll
		}
		return nil
	})
}

func (k *kbTools) glob(pattern string) (string, error) {
	if pattern == "" {
		return "", errors.New("pattern is required")
	}
	if _, err := path.Match(pattern, ""); err != nil {
		return "", fmt.Errorf("bad pattern %q", pattern)
	}
	var out []string
	err := k.walk(".", func(rel string, _ func() (*os.File, error)) bool {
		if ok, _ := path.Match(pattern, rel); ok || matchBase(pattern, rel) {
			out = append(out, rel)
		}
		return len(out) < maxListings
	})
	slices.Sort(out)
	return strings.Join(out, "\n"), err
}

// matchBase lets a pattern without a slash match a file name anywhere
// (*.md), and **/x match x at any depth.
func matchBase(pattern, rel string) bool {
	if p, ok := strings.CutPrefix(pattern, "**/"); ok {
		pattern = p
	}
	if strings.Contains(pattern, "/") {
		return false
	}
	ok, _ := path.Match(pattern, path.Base(rel))
	return ok
}

func (k *kbTools) grep(pattern, where, glob string) (string, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return "", fmt.Errorf("bad pattern: %v", err)
	}
	rel, err := k.rel(where)
	if err != nil {
		return "", err
	}
	var out []string
	err = k.walk(rel, func(r string, open func() (*os.File, error)) bool {
		if glob != "" && !matchBase(glob, r) {
			if ok, _ := path.Match(glob, r); !ok {
				return true
			}
		}
		f, err := open()
		if err != nil {
			return true
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for n := 1; sc.Scan(); n++ {
			if re.MatchString(sc.Text()) {
				out = append(out, fmt.Sprintf("%s:%d: %s", r, n, sc.Text()))
				if len(out) == maxMatches {
					out = append(out, "(more matches not shown)")
					return false
				}
			}
		}
		return true
	})
	if len(out) == 0 && err == nil {
		return "no matches", nil
	}
	return strings.Join(out, "\n"), err
}

func (k *kbTools) read(p string, offset, limit int) (string, error) {
	rel, err := k.rel(p)
	if err != nil {
		return "", err
	}
	real, err := k.real(rel)
	if err != nil {
		return "", err
	}
	f, _, err := k.files.Open(real)
	if err != nil {
		return "", fmt.Errorf("%s is not a file that can be read: it %s", rel, tools.OpenReason(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxReadWhole))
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", rel, unwrap(err))
	}
	lines := strings.SplitAfter(string(data), "\n")
	if offset > 1 {
		lines = lines[min(offset-1, len(lines)):]
	}
	if limit > 0 {
		lines = lines[:min(limit, len(lines))]
	}
	text := strings.Join(lines, "")
	if len(text) > maxRead {
		text = text[:maxRead] + fmt.Sprintf("\n[cut at %d bytes: read on with offset and limit]", maxRead)
	}
	return text, nil
}

// wikiTarget checks that p is a page wiki/<name>.md that may be written
// and returns its path in the knowledge base (wiki/<name>.md).
func (k *kbTools) wikiTarget(p string) (string, string, error) {
	rel, err := k.rel(p)
	if err != nil {
		return "", "", err
	}
	name, ok := wikiName(rel)
	if !ok {
		return "", "", fmt.Errorf("%s cannot be written: only wiki pages wiki/<name>.md may be written", rel)
	}
	if _, err := wikiDir(k.root); err != nil {
		return "", "", err
	}
	target := filepath.Join("wiki", name)
	if st, err := k.files.Lstat(target); err == nil && !st.Mode().IsRegular() {
		return "", "", fmt.Errorf("%s is not a regular file", rel)
	}
	return rel, target, nil
}

func (k *kbTools) write(p, content string) (string, error) {
	rel, target, err := k.wikiTarget(p)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(content) == "" {
		return "", fmt.Errorf("%s: empty content", rel)
	}
	content = strings.TrimRight(content, "\n") + "\n"
	if err := k.files.WriteFile(target, []byte(content), 0o644); err != nil {
		return "", fmt.Errorf("cannot write %s: it %s", rel, tools.OpenReason(err))
	}
	k.wrote[rel] = true
	return fmt.Sprintf("wrote %s (%d bytes)", rel, len(content)), nil
}

func (k *kbTools) edit(p, old, new string, all bool) (string, error) {
	rel, target, err := k.wikiTarget(p)
	if err != nil {
		return "", err
	}
	f, _, err := k.files.Open(target)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%s does not exist: Write it first", rel)
	}
	if err != nil {
		return "", fmt.Errorf("cannot read %s: it %s", rel, tools.OpenReason(err))
	}
	data, err := io.ReadAll(io.LimitReader(f, maxReadWhole))
	f.Close()
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", rel, unwrap(err))
	}
	text := string(data)
	n := strings.Count(text, old)
	switch {
	case old == "":
		return "", errors.New("old_string is empty")
	case n == 0:
		return "", fmt.Errorf("old_string is not in %s", rel)
	case n > 1 && !all:
		return "", fmt.Errorf("old_string occurs %d times in %s: give more context or set replace_all", n, rel)
	}
	if all {
		text = strings.ReplaceAll(text, old, new)
	} else {
		text = strings.Replace(text, old, new, 1)
	}
	if err := k.files.WriteFile(target, []byte(text), 0o644); err != nil {
		return "", fmt.Errorf("cannot write %s: it %s", rel, tools.OpenReason(err))
	}
	k.wrote[rel] = true
	if !all {
		n = 1
	}
	return fmt.Sprintf("edited %s (%d replacement(s))", rel, n), nil
}

func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
