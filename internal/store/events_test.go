package store

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestMarkEvent(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := t.Context()

	if seen, err := s.EventSeen(ctx, "ev"); err != nil || seen {
		t.Fatalf("EventSeen before mark = %v, %v; want false", seen, err)
	}
	for i, want := range []bool{true, false} {
		fresh, err := s.MarkEvent(ctx, "ev")
		if err != nil || fresh != want {
			t.Fatalf("MarkEvent #%d = %v, %v; want %v", i+1, fresh, err, want)
		}
	}
	if seen, err := s.EventSeen(ctx, "ev"); err != nil || !seen {
		t.Fatalf("EventSeen after mark = %v, %v; want true", seen, err)
	}
	if _, err := s.MarkEvent(ctx, ""); err == nil {
		t.Error("MarkEvent with empty key succeeded")
	}
}

func TestMarkEventConcurrent(t *testing.T) {
	s, _ := newTestStore(t)
	var (
		wg    sync.WaitGroup
		fresh atomic.Int32
	)
	for range 32 {
		wg.Go(func() {
			ok, err := s.MarkEvent(t.Context(), "same-event")
			if err != nil {
				t.Error(err)
			}
			if ok {
				fresh.Add(1)
			}
		})
	}
	wg.Wait()
	if got := fresh.Load(); got != 1 {
		t.Fatalf("%d callers saw fresh, want exactly 1", got)
	}
}

func TestPruneEvents(t *testing.T) {
	s, c := newTestStore(t)
	ctx := t.Context()
	mark := func(key string) {
		t.Helper()
		if _, err := s.MarkEvent(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	mark("old")
	c.Advance(time.Hour)
	cutoff := c.Now()
	mark("new")

	n, err := s.PruneEvents(ctx, cutoff)
	if err != nil || n != 1 {
		t.Fatalf("PruneEvents = %d, %v; want 1", n, err)
	}
	for key, want := range map[string]bool{"old": false, "new": true} {
		if seen, err := s.EventSeen(ctx, key); err != nil || seen != want {
			t.Errorf("EventSeen(%s) = %v, %v; want %v", key, seen, err, want)
		}
	}
}

func BenchmarkEventSeen(b *testing.B) {
	s, _ := newTestStore(b)
	ctx := b.Context()
	for i := range 1000 {
		if _, err := s.MarkEvent(ctx, fmt.Sprintf("ev-%d", i)); err != nil {
			b.Fatal(err)
		}
	}
	i := 0
	for b.Loop() {
		if _, err := s.EventSeen(ctx, fmt.Sprintf("ev-%d", i%2000)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
