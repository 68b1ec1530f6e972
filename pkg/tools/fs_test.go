package tools_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/pkg/tools"
)

func TestRead(t *testing.T) {
	e := newBtEnv(t, nil)
	fake.WriteFile(t, filepath.Join(e.ws, "three.txt"), "one\ntwo\nthree\n")
	fake.WriteFile(t, filepath.Join(e.ws, "empty.txt"), "")
	fake.WriteFile(t, filepath.Join(e.ws, "bin.dat"), "PK\x03\x04\x00\x00data")
	fake.WriteFile(t, filepath.Join(e.ws, "long.txt"), strings.Repeat("é", 2500)+"\nshort\n")
	var many strings.Builder
	for i := 1; i <= 2500; i++ {
		fmt.Fprintf(&many, "%d\n", i%10)
	}
	fake.WriteFile(t, filepath.Join(e.ws, "many.txt"), many.String())

	cases := []struct {
		name  string
		input map[string]any
		want  []string // fragments of the result
		isErr bool
	}{
		{"whole", map[string]any{"file_path": "three.txt"}, []string{"     1\tone\n     2\ttwo\n     3\tthree\n"}, false},
		{"absolute", map[string]any{"file_path": filepath.Join(e.ws, "three.txt")}, []string{"     2\ttwo\n"}, false},
		{"offset and limit", map[string]any{"file_path": "three.txt", "offset": 2, "limit": 1}, []string{"     2\ttwo\n", "read on with offset 3"}, false},
		{"default limit", map[string]any{"file_path": "many.txt"}, []string{"  2000\t0\n", "lines 1-2000", "read on with offset 2001"}, false},
		{"past the end", map[string]any{"file_path": "three.txt", "offset": 10}, []string{"offset 10 is past the end", "has 3 lines"}, true},
		{"empty", map[string]any{"file_path": "empty.txt"}, []string{"is empty"}, false},
		{"binary", map[string]any{"file_path": "bin.dat"}, []string{"is a binary file"}, true},
		{"long line", map[string]any{"file_path": "long.txt"}, []string{"     1\t" + strings.Repeat("é", 2000) + "\n     2\tshort\n", "1 line(s) longer than 2000 characters were cut"}, false},
		{"missing", map[string]any{"file_path": "nope.txt"}, []string{"does not exist"}, true},
		{"folder", map[string]any{"file_path": "."}, []string{"is a folder"}, true},
		{"no path", map[string]any{}, []string{"file_path is required"}, true},
		{"negative", map[string]any{"file_path": "three.txt", "offset": -1}, []string{"positive"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := e.call(t, "Read", c.input)
			if res.IsError != c.isErr {
				t.Errorf("IsError = %v: %q", res.IsError, res.Text)
			}
			for _, w := range c.want {
				if !strings.Contains(res.Text, w) {
					t.Errorf("result %.300q lacks %q", res.Text, w)
				}
			}
		})
	}
	if res := e.call(t, "Read", map[string]any{"file_path": "many.txt"}); strings.Contains(res.Text, "  2001\t") {
		t.Error("Read returned more than 2000 lines by default")
	}
}

// A result past MaxOutput stops at a whole line and says where to go on.
func TestReadTruncates(t *testing.T) {
	e := newBtEnv(t, func(o *tools.BuiltinOptions) { o.MaxOutput = 100 })
	fake.WriteFile(t, filepath.Join(e.ws, "f.txt"), strings.Repeat("0123456789\n", 50))
	res := e.call(t, "Read", map[string]any{"file_path": "f.txt"})
	if res.IsError || !strings.Contains(res.Text, "[output truncated at 100 bytes: showing lines 1-5; read on with offset 6]") {
		t.Errorf("Read = %q", res.Text)
	}
}

func TestWrite(t *testing.T) {
	e := newBtEnv(t, nil)
	res := e.call(t, "Write", map[string]any{"file_path": "a/b/c.md", "content": "hello\n"})
	if res.IsError || !strings.HasPrefix(res.Text, "created ") {
		t.Fatalf("Write = %+v", res)
	}
	path := filepath.Join(e.ws, "a/b/c.md")
	if got := fake.ReadFile(t, path); got != "hello\n" {
		t.Errorf("content = %q", got)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	res = e.call(t, "Write", map[string]any{"file_path": path, "content": ""})
	if res.IsError || !strings.HasPrefix(res.Text, "wrote ") {
		t.Fatalf("overwrite = %+v", res)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Size() != 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("after overwrite: %v %v (the mode is kept)", fi, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	for name, in := range map[string]map[string]any{
		"no content": {"file_path": "x"},
		"a folder":   {"file_path": "a", "content": "x"},
	} {
		if res := e.call(t, "Write", in); !res.IsError {
			t.Errorf("%s: %+v", name, res)
		}
	}
	if res := e.call(t, "Write", map[string]any{"file_path": "../../knowledge/kb/wiki/new.md", "content": "page"}); res.IsError {
		t.Errorf("Write into knowledge/: %s", res.Text)
	}
}

func TestEdit(t *testing.T) {
	e := newBtEnv(t, nil)
	path := filepath.Join(e.ws, "f.go")
	fake.WriteFile(t, path, "a := 1\nb := 1\nc := 2\n")
	cases := []struct {
		name  string
		input map[string]any
		want  string
		isErr bool
		after string
	}{
		{"two matches", map[string]any{"old_string": ":= 1", "new_string": ":= 3"}, "occurs 2 times", true, "a := 1\nb := 1\nc := 2\n"},
		{"not found", map[string]any{"old_string": "d := 4", "new_string": "x"}, "was not found", true, "a := 1\nb := 1\nc := 2\n"},
		{"empty old", map[string]any{"old_string": "", "new_string": "x"}, "use Write", true, "a := 1\nb := 1\nc := 2\n"},
		{"same", map[string]any{"old_string": "a", "new_string": "a"}, "the same", true, "a := 1\nb := 1\nc := 2\n"},
		{"missing new", map[string]any{"old_string": "a"}, "required", true, "a := 1\nb := 1\nc := 2\n"},
		{"unique", map[string]any{"old_string": "b := 1", "new_string": "b := 5"}, "replaced 1 occurrence(s)", false, "a := 1\nb := 5\nc := 2\n"},
		{"replace all", map[string]any{"old_string": " := ", "new_string": " = ", "replace_all": true}, "replaced 3 occurrence(s)", false, "a = 1\nb = 5\nc = 2\n"},
		{"multi-line", map[string]any{"old_string": "a = 1\nb", "new_string": "b"}, "replaced 1", false, "b = 5\nc = 2\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.input["file_path"] = "f.go"
			res := e.call(t, "Edit", c.input)
			if res.IsError != c.isErr || !strings.Contains(res.Text, c.want) {
				t.Errorf("Edit = %+v, want %q (error %v)", res, c.want, c.isErr)
			}
			if got := fake.ReadFile(t, path); got != c.after {
				t.Errorf("file = %q, want %q", got, c.after)
			}
		})
	}
	if res := e.call(t, "Edit", map[string]any{"file_path": "nope", "old_string": "a", "new_string": "b"}); !res.IsError || !strings.Contains(res.Text, "does not exist") {
		t.Errorf("Edit of a missing file: %+v", res)
	}
}

func TestGrep(t *testing.T) {
	e := newBtEnv(t, nil)
	fake.WriteFile(t, filepath.Join(e.ws, "a.go"), "package a\nfunc Hello() {}\n")
	fake.WriteFile(t, filepath.Join(e.ws, "docs/b.md"), "# Hello\nnothing\nhello again\n")
	fake.WriteFile(t, filepath.Join(e.ws, ".git/config"), "Hello from git\n")
	fake.WriteFile(t, filepath.Join(e.ws, "bin.dat"), "Hello\x00binary")
	fake.WriteFile(t, filepath.Join(e.ws, ".env"), "Hello=secret\n")
	a, b := filepath.Join(e.ws, "a.go"), filepath.Join(e.ws, "docs/b.md")
	cases := []struct {
		name  string
		input map[string]any
		want  string
	}{
		{"content", map[string]any{"pattern": "Hello"}, a + ":2:func Hello() {}\n" + b + ":1:# Hello\n"},
		{"ignore case", map[string]any{"pattern": "hello", "-i": true, "glob": "*.md"}, b + ":1:# Hello\n" + b + ":3:hello again\n"},
		{"glob with folder", map[string]any{"pattern": "Hello", "glob": "docs/**/*.{md,txt}"}, b + ":1:# Hello\n"},
		{"files", map[string]any{"pattern": "(?i)hello", "output_mode": "files_with_matches"}, a + "\n" + b + "\n"},
		{"count", map[string]any{"pattern": "(?i)hello", "output_mode": "count"}, a + ":1\n" + b + ":2\n"},
		{"one file", map[string]any{"pattern": "again", "path": "docs/b.md"}, b + ":3:hello again\n"},
		{"skills", map[string]any{"pattern": "body", "path": filepath.Join(e.home, "skills")}, filepath.Join(e.home, "skills/s1/SKILL.md") + ":4:skill body\n"},
		{"none", map[string]any{"pattern": "zzz"}, "no matches"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := e.call(t, "Grep", c.input)
			if res.IsError || res.Text != c.want {
				t.Errorf("Grep = %+v\nwant %q", res, c.want)
			}
		})
	}
	for name, in := range map[string]map[string]any{
		"bad regexp": {"pattern": "("},
		"bad mode":   {"pattern": "a", "output_mode": "json"},
		"bad glob":   {"pattern": "a", "glob": "{a,b"},
		"missing":    {"pattern": "a", "path": "nope"},
	} {
		if res := e.call(t, "Grep", in); !res.IsError {
			t.Errorf("%s: %+v", name, res)
		}
	}
}

func TestGrepTruncates(t *testing.T) {
	e := newBtEnv(t, func(o *tools.BuiltinOptions) { o.MaxOutput = 200 })
	fake.WriteFile(t, filepath.Join(e.ws, "f.txt"), strings.Repeat("match\n", 100))
	res := e.call(t, "Grep", map[string]any{"pattern": "match"})
	if res.IsError || len(res.Text) > 400 || !strings.Contains(res.Text, "[output truncated at 200 bytes") {
		t.Errorf("Grep = %q", res.Text)
	}
}

func TestGlob(t *testing.T) {
	e := newBtEnv(t, nil)
	old, mid, newest := time.Unix(1_600_000_000, 0), time.Unix(1_650_000_000, 0), time.Unix(1_700_000_000, 0)
	files := map[string]time.Time{"a.md": mid, "x/b.md": newest, "x/y/c.md": old, "x/d.txt": newest, ".git/e.md": newest}
	for name, mod := range files {
		p := filepath.Join(e.ws, name)
		fake.WriteFile(t, p, name)
		if err := os.Chtimes(p, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	p := func(names ...string) string {
		var sb strings.Builder
		for _, n := range names {
			sb.WriteString(filepath.Join(e.ws, n) + "\n")
		}
		return sb.String()
	}
	cases := []struct {
		name  string
		input map[string]any
		want  string
	}{
		{"recursive, newest first", map[string]any{"pattern": "**/*.md"}, p("x/b.md", "a.md", "x/y/c.md")},
		{"top level", map[string]any{"pattern": "*.md"}, p("a.md")},
		{"in a folder", map[string]any{"pattern": "*", "path": "x"}, p("x/b.md", "x/d.txt")},
		{"braces", map[string]any{"pattern": "x/*.{md,txt}"}, p("x/b.md", "x/d.txt")},
		{"absolute", map[string]any{"pattern": filepath.Join(e.ws, "x/**/c.md")}, p("x/y/c.md")},
		{"plain path", map[string]any{"pattern": "a.md"}, p("a.md")},
		{"knowledge", map[string]any{"pattern": filepath.Join(e.home, "knowledge/*/README.md")}, filepath.Join(e.home, "knowledge/kb/README.md") + "\n"},
		{"none", map[string]any{"pattern": "*.go"}, "no files match *.go"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := e.call(t, "Glob", c.input)
			if res.IsError || res.Text != c.want {
				t.Errorf("Glob = %+v\nwant %q", res, c.want)
			}
		})
	}
	small := newBtEnv(t, func(o *tools.BuiltinOptions) { o.MaxOutput = 150 })
	for i := range 20 {
		fake.WriteFile(t, filepath.Join(small.ws, fmt.Sprintf("f%02d.txt", i)), "")
	}
	if res := small.call(t, "Glob", map[string]any{"pattern": "*.txt"}); !strings.Contains(res.Text, "more files not shown") {
		t.Errorf("Glob over the cap = %q", res.Text)
	}
}

func TestLS(t *testing.T) {
	e := newBtEnv(t, nil)
	fake.WriteFile(t, filepath.Join(e.ws, "f.txt"), "x")
	fake.WriteFile(t, filepath.Join(e.ws, "sub/g.txt"), "x")
	fake.Symlink(t, "f.txt", filepath.Join(e.ws, "link"))
	res := e.call(t, "LS", map[string]any{})
	if want := e.ws + ":\nf.txt\nlink@\nsub/\n"; res.IsError || res.Text != want {
		t.Errorf("LS = %q, want %q", res.Text, want)
	}
	if res := e.call(t, "LS", map[string]any{"path": "sub"}); res.Text != filepath.Join(e.ws, "sub")+":\ng.txt\n" {
		t.Errorf("LS sub = %q", res.Text)
	}
	if res := e.call(t, "LS", map[string]any{"path": "f.txt"}); !res.IsError || !strings.Contains(res.Text, "use Read") {
		t.Errorf("LS of a file = %+v", res)
	}
	if res := e.call(t, "LS", map[string]any{"path": "nope"}); !res.IsError || !strings.Contains(res.Text, "does not exist") {
		t.Errorf("LS of nothing = %+v", res)
	}
	small := newBtEnv(t, func(o *tools.BuiltinOptions) { o.MaxOutput = 120 })
	for i := range 30 {
		fake.WriteFile(t, filepath.Join(small.ws, fmt.Sprintf("f%02d", i)), "")
	}
	if res := small.call(t, "LS", map[string]any{}); !strings.Contains(res.Text, "more entries not shown") {
		t.Errorf("LS over the cap = %q", res.Text)
	}
}
