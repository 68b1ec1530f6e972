package fake

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

func TestOutbox(t *testing.T) {
	var o Outbox
	ctx := context.Background()
	if ts, err := o.Post(ctx, "one"); ts != "100.1" || err != nil {
		t.Errorf("Post = %q, %v; want 100.1", ts, err)
	}
	o.PostFn = func(context.Context, string) (string, error) { return "", errors.New("down") }
	if _, err := o.Post(ctx, "two"); err == nil {
		t.Error("PostFn's error was not returned")
	}
	if err := o.Update(ctx, "100.1", "uno"); err != nil {
		t.Error(err)
	}
	if got := o.Posts(); !slices.Equal(got, []string{"one", "two"}) {
		t.Errorf("Posts() = %q", got)
	}
	if got := o.Updates(); !slices.Equal(got, []string{"100.1 uno"}) {
		t.Errorf("Updates() = %q", got)
	}
}

func TestEventually(t *testing.T) {
	var n atomic.Int32
	if !Eventually(time.Second, func() bool { return n.Add(1) == 3 }) {
		t.Error("Eventually gave up on a condition that came true")
	}
	if Eventually(20*time.Millisecond, func() bool { return false }) {
		t.Error("Eventually reported a condition that never held")
	}
}

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	WriteFiles(t, dir, map[string]string{"a/b.txt": "b", "c.txt": "c"})
	Symlink(t, filepath.Join(dir, "a", "b.txt"), filepath.Join(dir, "links", "b"))
	if got := ReadFile(t, filepath.Join(dir, "links", "b")); got != "b" {
		t.Errorf("through the link: %q", got)
	}
}
