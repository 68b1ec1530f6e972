package store

import (
	"context"
	"testing"
	"time"

	"github.com/persona-runtime/agent/pkg/clock"
)

// openThreads opens a store for the thread tests.
func openThreads(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), testPath(t), Options{Clock: clock.NewManual(time.Unix(0, 0))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestLockHolder(t *testing.T) {
	ctx := context.Background()
	s := openThreads(t)
	check := func(key, want string) {
		t.Helper()
		if got, err := s.LockHolder(ctx, key, "C1:"); err != nil || got != want {
			t.Fatalf("LockHolder(%s) = %q, %v; want %q", key, got, err, want)
		}
	}
	check("C1:1.0", "")
	s.SetThreadLock(ctx, "C1:", "U1") // the channel
	check("C1:1.0", "U1")
	s.SetThreadLock(ctx, "C1:1.0", "U2") // the thread wins
	check("C1:1.0", "U2")
	s.SetThreadLock(ctx, "C1:1.0", "")
	s.SetThreadLock(ctx, "C1:", "")
	check("C1:1.0", "")
}

func TestModeOf(t *testing.T) {
	ctx := context.Background()
	s := openThreads(t)
	check := func(key, want string) {
		t.Helper()
		if got, err := s.ModeOf(ctx, key, "C1:"); err != nil || got != want {
			t.Fatalf("ModeOf(%s) = %q, %v; want %q", key, got, err, want)
		}
	}
	check("C1:1.0", "")
	s.SetEngaged(ctx, "C1:1.0", "C1", "1.0", true) // a thread row without a mode
	check("C1:1.0", "")
	s.SetThreadMode(ctx, "C1:", "ask") // the channel
	check("C1:1.0", "ask")
	s.SetThreadMode(ctx, "C1:1.0", "bypass") // the thread wins
	check("C1:1.0", "bypass")
	check("C1:2.0", "ask")
	s.SetThreadMode(ctx, "C1:1.0", "")
	check("C1:1.0", "ask")
	s.SetThreadMode(ctx, "C1:", "")
	check("C1:1.0", "")
}

// The permission mode read on the path of every message: the thread has
// none, its channel has one.
func BenchmarkModeOf(b *testing.B) {
	ctx := context.Background()
	s := openThreads(b)
	if err := s.SetThreadMode(ctx, "C1:", "ask"); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if mode, err := s.ModeOf(ctx, "C1:1.0", "C1:"); err != nil || mode != "ask" {
			b.Fatalf("ModeOf = %q, %v", mode, err)
		}
	}
}
