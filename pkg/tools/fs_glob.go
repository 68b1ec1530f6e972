package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// fsMaxBraceAlternatives bounds the patterns one glob expands to: a few
// alternatives ("*.{ts,tsx}") are the norm, and nested braces multiply.
const fsMaxBraceAlternatives = 64

// fsGlob is a compiled glob pattern: slash-separated segments matched with
// path.Match, "**" matching any number of folders, "{a,b}" alternatives.
type fsGlob struct {
	alts      [][]string
	recursive bool // some alternative has "**": no depth limit
	depth     int  // otherwise the deepest alternative
}

// fsCompileGlob compiles pattern (slash-separated, relative).
func fsCompileGlob(pattern string) (*fsGlob, error) {
	alts, err := fsExpandBraces(pattern)
	if err != nil {
		return nil, err
	}
	g := &fsGlob{}
	for _, a := range alts {
		var segs []string
		for _, s := range strings.Split(a, "/") {
			if s == "" || s == "." || s == "**" && len(segs) > 0 && segs[len(segs)-1] == "**" {
				continue
			}
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("invalid glob pattern %q", pattern)
			}
			segs = append(segs, s)
			g.recursive = g.recursive || s == "**"
		}
		g.depth = max(g.depth, len(segs))
		g.alts = append(g.alts, segs)
	}
	return g, nil
}

// match reports whether the slash-separated relative path rel matches.
func (g *fsGlob) match(rel string) bool {
	name := strings.Split(rel, "/")
	for _, a := range g.alts {
		if fsMatchSegs(a, name) {
			return true
		}
	}
	return false
}

// fsMatchSegs matches path segments against pattern segments.
func fsMatchSegs(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if fsMatchSegs(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// fsExpandBraces expands "{a,b}" alternatives, nested ones included.
func fsExpandBraces(p string) ([]string, error) {
	open := strings.IndexByte(p, '{')
	if open < 0 {
		return []string{p}, nil
	}
	depth, start := 0, open+1
	var parts []string
	for i := open; i < len(p); i++ {
		switch p[i] {
		case '{':
			depth++
		case ',':
			if depth == 1 {
				parts = append(parts, p[start:i])
				start = i + 1
			}
		case '}':
			if depth--; depth > 0 {
				continue
			}
			parts = append(parts, p[start:i])
			var out []string
			for _, part := range parts {
				exp, err := fsExpandBraces(p[:open] + part + p[i+1:])
				if err != nil {
					return nil, err
				}
				if out = append(out, exp...); len(out) > fsMaxBraceAlternatives {
					return nil, fmt.Errorf("glob pattern %q has more than %d alternatives", p, fsMaxBraceAlternatives)
				}
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("glob pattern %q has an unclosed {", p)
}

// fsHasMeta reports whether a path segment is a pattern.
func fsHasMeta(s string) bool { return strings.ContainsAny(s, "*?[{") }

// glob is the Glob tool.
func (b *Builtins) glob(ctx context.Context, input json.RawMessage) Result {
	var in struct {
		Pattern string `json:"pattern"`
		Path    string `json:"path"`
	}
	if err := decode(input, &in); err != nil {
		return Errorf("%v", err)
	}
	if strings.TrimSpace(in.Pattern) == "" {
		return Errorf("pattern is required")
	}
	ws, res := b.threadWorkspace(ctx)
	if res != nil {
		return *res
	}
	// The folders before the first pattern segment are the walk's root,
	// and go through the confinement check like any path.
	full := in.Pattern
	if !filepath.IsAbs(full) {
		base := ws
		if in.Path != "" {
			base = in.Path
			if !filepath.IsAbs(base) {
				base = filepath.Join(ws, base)
			}
		}
		full = filepath.Join(base, full)
	}
	segs := strings.Split(filepath.ToSlash(filepath.Clean(full)), "/")
	i := 0
	for i < len(segs) && !fsHasMeta(segs[i]) {
		i++
	}
	dir := filepath.FromSlash(strings.Join(segs[:i], "/"))
	if dir == "" {
		dir = string(filepath.Separator)
	}
	t, err := b.target(ws, dir)
	if err != nil {
		return Errorf("%v", err)
	}
	real := t.path
	if i == len(segs) { // no pattern: a plain path
		if _, err := t.in.Lstat(t.rel); err != nil {
			return Result{Text: "no files match " + in.Pattern}
		}
		return Result{Text: real + "\n"}
	}
	g, err := fsCompileGlob(strings.Join(segs[i:], "/"))
	if err != nil {
		return Errorf("%v", err)
	}
	root, err := t.in.Folder(t.rel)
	if err != nil {
		return Errorf("folder %s does not exist", real)
	}
	defer root.Close()
	type hit struct {
		path string
		mod  time.Time
	}
	var hits []hit
	err = fsWalk(root, func(rel string, d fs.DirEntry, dir *os.Root) error {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if d.IsDir() {
			if d.Name() == ".git" || !g.recursive && strings.Count(rel, "/")+1 >= g.depth {
				return fs.SkipDir
			}
			return nil
		}
		if g.match(rel) {
			var mod time.Time
			if fi, err := dir.Lstat(d.Name()); err == nil {
				mod = fi.ModTime()
			}
			hits = append(hits, hit{filepath.Join(real, filepath.FromSlash(rel)), mod})
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return Errorf("glob cancelled")
		}
		return Errorf("glob %s: %s", real, fsErrText(err))
	}
	if len(hits) == 0 {
		return Result{Text: "no files match " + in.Pattern}
	}
	sort.Slice(hits, func(i, j int) bool {
		if !hits[i].mod.Equal(hits[j].mod) {
			return hits[i].mod.After(hits[j].mod)
		}
		return hits[i].path < hits[j].path
	})
	var out strings.Builder
	for n, h := range hits {
		line := b.scrub(h.path) + "\n"
		if out.Len()+len(line) > b.maxOutput {
			fmt.Fprintf(&out, "[output truncated: %d more files not shown; narrow the pattern or path]\n", len(hits)-n)
			break
		}
		out.WriteString(line)
	}
	return Result{Text: out.String()}
}
