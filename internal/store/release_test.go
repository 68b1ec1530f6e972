package store

import (
	"context"
	"testing"
	"time"
)

// A SQLite store is one connection (maxOpenConns: see there why).
// ReleaseMemory frees its cache and keeps it: open and idle, before and
// after, and the store goes on as before. A connection in use is waited
// for. (What it frees is part of the bench's figure: an idle persona's own
// memory.)
func TestReleaseMemoryKeepsTheConnection(t *testing.T) {
	sqliteOnly(t)
	ctx := t.Context()
	s, err := Open(ctx, testPath(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.stopCheckpointer() // no checkpoint behind the test's back
	if st := s.db.Stats(); st.MaxOpenConnections != 1 {
		t.Fatalf("the pool's cap is %d connections, want 1", st.MaxOpenConnections)
	}
	if err := s.CreateSession(ctx, Session{ID: "s1", ThreadKey: "C1:1.0", State: SessionLive}); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseMemory(ctx); err != nil {
		t.Fatal(err)
	}
	if st := s.db.Stats(); st.OpenConnections != 1 || st.Idle != 1 {
		t.Errorf("after: %d open, %d idle; want 1, 1", st.OpenConnections, st.Idle)
	}
	if _, err := s.SessionByThread(ctx, "C1:1.0"); err != nil {
		t.Fatalf("a read after: %v", err)
	}
	if err := s.CreateSession(ctx, Session{ID: "s2", ThreadKey: "C1:2.0", State: SessionLive}); err != nil {
		t.Fatalf("a write after: %v", err)
	}

	busy, err := s.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := s.ReleaseMemory(short); err == nil {
		t.Error("ReleaseMemory returned while the connection was in use")
	}
	done := make(chan error, 1)
	go func() { done <- s.ReleaseMemory(ctx) }()
	if err := busy.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("once the connection is free: %v", err)
	}
}
