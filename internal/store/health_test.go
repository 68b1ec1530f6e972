package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPing(t *testing.T) {
	s, _ := newTestStore(t)
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping on open store: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Ping(ctx); err == nil {
		t.Error("Ping with cancelled context succeeded")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(t.Context()); err == nil {
		t.Error("Ping after Close succeeded")
	}
}

func TestCheckWritable(t *testing.T) {
	sqliteOnly(t)
	s, _ := newTestStore(t)
	if err := s.CheckWritable(t.Context()); err != nil {
		t.Fatalf("CheckWritable on fresh store: %v", err)
	}

	if os.Geteuid() == 0 {
		// Root ignores permission bits (chmod 0400 changes nothing for
		// access(2)), so check the other failure root can see: the
		// database's directory has gone, as when a volume is unmounted.
		dir := filepath.Dir(s.Path())
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		err := s.CheckWritable(t.Context())
		if err == nil || !strings.Contains(err.Error(), s.Path()) {
			t.Fatalf("CheckWritable with directory removed = %v, want error naming %s", err, s.Path())
		}
		return
	}

	if err := os.Chmod(s.Path(), 0o400); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(s.Path(), 0o600) })
	err := s.CheckWritable(t.Context())
	if err == nil || !strings.Contains(err.Error(), "database file "+s.Path()+":") {
		t.Fatalf("CheckWritable on read-only file = %v, want error naming the file", err)
	}
}

// checkWritable's directory branch, reachable as root too: a path whose
// parent does not exist.
func TestCheckWritableMissingParent(t *testing.T) {
	sqliteOnly(t)
	path := filepath.Join(t.TempDir(), "missing", "db.sqlite")
	err := checkWritable(path)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("checkWritable(%s) = %v, want error naming it", path, err)
	}
}

func TestCheckWritableReadOnlyDir(t *testing.T) {
	sqliteOnly(t)
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permission bits; TestCheckWritable covers root")
	}
	s, _ := newTestStore(t)
	dir := filepath.Dir(s.Path())
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o700) })
	err := s.CheckWritable(t.Context())
	if err == nil || !strings.Contains(err.Error(), "database directory "+dir) {
		t.Fatalf("CheckWritable on read-only directory = %v, want error naming it", err)
	}
}
