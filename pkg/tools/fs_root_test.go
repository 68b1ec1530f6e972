package tools_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/pkg/tools"
)

// confinedEnv is a folder with an honest tree, a secret outside it and
// symlinks planted inside that lead out.
type confinedEnv struct {
	c       tools.Confined
	dir     string
	outside string
}

func newConfinedEnv(t *testing.T) *confinedEnv {
	t.Helper()
	base := t.TempDir()
	e := &confinedEnv{dir: filepath.Join(base, "in"), outside: filepath.Join(base, "out")}
	fake.WriteFile(t, filepath.Join(e.dir, "sub/f.txt"), "inside\n")
	fake.WriteFile(t, filepath.Join(e.outside, "secret.txt"), "SECRET\n")
	fake.Symlink(t, e.outside, filepath.Join(e.dir, "out-dir"))                        // absolute, a folder
	fake.Symlink(t, "../out/secret.txt", filepath.Join(e.dir, "out-file"))             // relative, a file
	fake.Symlink(t, "sub", filepath.Join(e.dir, "alias"))                              // stays inside
	fake.Symlink(t, filepath.Join(e.outside, "new.txt"), filepath.Join(e.dir, "dang")) // dangling, out
	e.c = tools.Confined{Dir: e.dir}
	return e
}

// Nothing of Confined follows a symlink, whether it leads out or not, and
// nothing takes a path with "..": the paths it takes are physical.
func TestConfinedFollowsNoSymlink(t *testing.T) {
	e := newConfinedEnv(t)
	for _, rel := range []string{"out-dir/secret.txt", "out-file", "alias/f.txt", "../out/secret.txt", "sub/../../out/secret.txt", "/etc/passwd", "dang"} {
		t.Run(rel, func(t *testing.T) {
			if f, _, err := e.c.Open(rel); err == nil {
				data, _ := io.ReadAll(f)
				f.Close()
				t.Fatalf("Open(%s) read %q", rel, data)
			}
			if err := e.c.WriteFile(rel, []byte("pwned\n"), 0o644); err == nil && rel != "out-file" && rel != "dang" {
				t.Errorf("WriteFile(%s) succeeded", rel)
			}
		})
	}
	// A write at a symlink's name replaces the link, never its target.
	if got := fake.ReadFile(t, filepath.Join(e.outside, "secret.txt")); got != "SECRET\n" {
		t.Fatalf("the file outside changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(e.outside, "new.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a write landed outside through the dangling link: %v", err)
	}
	for _, rel := range []string{"out-dir/x", "out-dir", "alias/y"} {
		if err := e.c.MkdirAll(rel, 0o755); err == nil {
			t.Errorf("MkdirAll(%s) went through a symlink", rel)
		}
	}
	if err := e.c.RemoveAll("out-dir"); err != nil {
		t.Fatal(err)
	}
	if got := fake.ReadFile(t, filepath.Join(e.outside, "secret.txt")); got != "SECRET\n" {
		t.Fatalf("RemoveAll of a link removed its target's content: %q", got)
	}
	if _, err := e.c.ReadDir("alias"); err == nil {
		t.Error("ReadDir went through a symlink")
	}
	// Honest work: the physical paths.
	f, _, err := e.c.Open("sub/f.txt")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := e.c.MkdirAll("a/b", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := e.c.WriteFile("a/b/c.txt", []byte("ok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := fake.ReadFile(t, filepath.Join(e.dir, "a/b/c.txt")); got != "ok\n" {
		t.Fatalf("WriteFile wrote %q", got)
	}
	entries, _ := os.ReadDir(filepath.Join(e.dir, "a/b"))
	if len(entries) != 1 {
		t.Fatalf("the temporary file stayed behind: %v", entries)
	}
}

// Resolve follows the symlinks that stay inside, to the physical path the
// other methods take, and refuses the ones that lead out.
func TestConfinedResolve(t *testing.T) {
	e := newConfinedEnv(t)
	for _, c := range []struct{ in, want string }{
		{"alias/f.txt", "sub/f.txt"},
		{filepath.Join(e.dir, "alias/f.txt"), "sub/f.txt"},
		{"sub/new/x.md", "sub/new/x.md"},
		{".", "."},
		{"out-dir/secret.txt", ""},
		{"out-file", ""},
		{"dang", ""},
		{"../out", ""},
		{"/etc/passwd", ""},
	} {
		got, err := e.c.Resolve(c.in)
		switch {
		case c.want == "" && err == nil:
			t.Errorf("Resolve(%s) = %s, want a refusal", c.in, got)
		case c.want != "" && (err != nil || got != c.want):
			t.Errorf("Resolve(%s) = %q, %v; want %q", c.in, got, err, c.want)
		case c.want == "" && !strings.Contains(tools.OpenReason(err), "outside"):
			t.Errorf("Resolve(%s): reason %q", c.in, tools.OpenReason(err))
		}
	}
}

// Walk lists the tree without entering a symlinked folder.
func TestConfinedWalk(t *testing.T) {
	e := newConfinedEnv(t)
	var seen []string
	err := e.c.Walk(".", func(rel string, d fs.DirEntry, dir *os.Root) error {
		seen = append(seen, rel)
		if d.Type().IsRegular() {
			f, err := tools.OpenIn(dir, d.Name())
			if err != nil {
				t.Errorf("OpenIn(%s): %v", rel, err)
			} else {
				f.Close()
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(seen, ","); got != "alias,dang,out-dir,out-file,sub,sub/f.txt" {
		t.Fatalf("walk saw %s", got)
	}
}
