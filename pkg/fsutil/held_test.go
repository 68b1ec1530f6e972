package fsutil

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// old sets path's times HeldGrace and a second back.
func old(t *testing.T, path string) {
	t.Helper()
	then := time.Now().Add(-HeldGrace - time.Second)
	if err := os.Chtimes(path, then, then); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// A sweep takes the directories nobody holds that have been left alone
// for HeldGrace, with their contents, and nothing else.
func TestSweepUnheldTakesOnlyWhatNobodyHolds(t *testing.T) {
	root, elsewhere := t.TempDir(), t.TempDir()
	held, err := MkdirHeld(root, "work-")
	if err != nil {
		t.Fatal(err)
	}
	mk := func(pattern string) string {
		dir, err := os.MkdirTemp(root, pattern)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "sub", "f"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	abandoned, fresh, other := mk("work-"), mk("work-"), mk("other-")
	file := filepath.Join(root, "work-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// A link to a directory elsewhere: neither it nor what it points at
	// is taken.
	link := filepath.Join(root, "work-link")
	if err := os.Symlink(elsewhere, link); err != nil {
		t.Fatal(err)
	}
	kept := []string{held.Path, other, file, link}
	if os.Geteuid() == 0 { // another user's, where root can make one
		theirs := mk("work-")
		if err := os.Chown(theirs, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, theirs)
	}
	for _, p := range append([]string{abandoned, elsewhere}, kept...) {
		old(t, p)
	}
	if n := SweepUnheld(root, "work-", time.Now()); n != 1 {
		t.Fatalf("removed %d, want 1", n)
	}
	if exists(abandoned) {
		t.Fatal("the abandoned directory is still there")
	}
	for _, p := range append(kept, fresh, elsewhere) {
		if !exists(p) {
			t.Fatalf("%s was taken", p)
		}
	}
	held.Remove()
	if exists(held.Path) {
		t.Fatal("Remove left the directory")
	}
	if n := SweepUnheld(filepath.Join(root, "missing"), "", time.Now()); n != 0 {
		t.Fatalf("a missing root: removed %d", n)
	}
}
