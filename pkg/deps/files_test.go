package deps

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/persona-runtime/agent/pkg/fsutil"
)

func TestCopyTreeSymlinks(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	for _, d := range []string{"a/b", ".git"} {
		if err := os.MkdirAll(filepath.Join(src, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range map[string]string{"a/b/f.md": "f", ".git/HEAD": "x"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"inside":    "a/b/f.md",            // kept
		"a/up":      "../a/b",              // kept: resolves inside
		"a/b/root":  "../..",               // kept: the folder itself
		"abs":       "/etc/passwd",         // dropped: absolute
		"escape":    "../outside",          // dropped: leaves the folder
		"chain":     "a/b/root/../secrets", // dropped: lexically inside, really outside
		"dangling":  "missing",             // dropped
		"a/b/deep2": "../../../x",          // dropped
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(src, name)); err != nil {
			t.Fatal(err)
		}
	}
	dst := filepath.Join(t.TempDir(), "dst")
	var skipped []string
	if err := copyTree(src, dst, func(rel string) { skipped = append(skipped, rel) }); err != nil {
		t.Fatal(err)
	}
	sort.Strings(skipped)
	if want := []string{"a/b/deep2", "abs", "chain", "dangling", "escape"}; !reflect.DeepEqual(skipped, want) {
		t.Fatalf("skipped %q, want %q", skipped, want)
	}
	for _, keep := range []string{"a/b/f.md", "inside", "a/up", "a/b/root"} {
		if _, err := os.Lstat(filepath.Join(dst, keep)); err != nil {
			t.Errorf("%s not copied: %v", keep, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dst, "inside")); err != nil || string(b) != "f" {
		t.Errorf("inside reads %q, %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(dst, ".git")); err == nil {
		t.Error(".git copied")
	}
}

func TestGitErrorMessage(t *testing.T) {
	tests := []struct {
		name string
		err  *GitError
		want string
	}{
		{"fatal lines only", &GitError{Args: []string{"clone", "--quiet", "--", "u", "d"},
			Stderr: "Cloning into 'd'...\nfatal: repository 'u' not found\n\nPlease make sure\n"},
			"git clone: fatal: repository 'u' not found"},
		{"options skipped", &GitError{Args: []string{"-c", "a=b", "checkout", "x"}, Stderr: "error: pathspec 'x'\nerror: two\n"},
			"git checkout: error: pathspec 'x'; error: two"},
		{"no fatal line", &GitError{Args: []string{"merge"}, Stderr: "  hint: something\n"}, "git merge: hint: something"},
		{"no stderr", &GitError{Args: []string{"fetch"}, Err: os.ErrPermission}, "git fetch: permission denied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Fatalf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

// An install killed midway leaves its work under .cache/deps/tmp/; the
// next install removes it, and not the work of an install still running.
func TestInstallSweepsWhatAKilledInstallLeft(t *testing.T) {
	f := newFixture(t)
	home := f.env.Home()
	in := &Installer{Home: home, Progress: io.Discard}
	root := in.tempRoot()
	left := filepath.Join(root, "pdf-123")
	if err := os.MkdirAll(filepath.Join(left, "repo", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	running, cleanup, err := in.tempDir("xlsx")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	then := time.Now().Add(-fsutil.HeldGrace - time.Second)
	for _, dir := range []string{left, running} {
		if err := os.Chtimes(dir, then, then); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := in.Install(context.Background(), f.m, nil, Normal); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Fatalf("the killed install's work is still there: %v", err)
	}
	entries, err := os.ReadDir(root)
	if err != nil || len(entries) != 1 || filepath.Join(root, entries[0].Name()) != running {
		t.Fatalf("left under .cache/deps/tmp: %v (%v), want only the running install's", entries, err)
	}
}
