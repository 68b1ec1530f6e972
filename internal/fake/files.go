package fake

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteFiles writes files (slash-separated names relative to dir, and
// their contents) under dir, making the folders they need; it fails t
// when it cannot.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		WriteFile(t, filepath.Join(dir, filepath.FromSlash(name)), content)
	}
}

// WriteFile writes content to the file at path, making the folders it
// needs, and returns path; it fails t when it cannot.
func WriteFile(t testing.TB, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Symlink makes link a symbolic link to target, making the folders it
// needs; it fails t when it cannot.
func Symlink(t testing.TB, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// ReadFile returns the content of the file at path; it fails t when it
// cannot.
func ReadFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// CopyTestBinary copies the running test binary, as name, into a new
// folder that every user may enter and read, removed after the test, and
// returns the copy's path: what a test runs as another user (t.TempDir's
// parents are the test user's alone).
func CopyTestBinary(t testing.TB, name string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "testbin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}
