package store

import (
	"testing"

	"github.com/uptrace/bun"
)

// ReleaseMemory asks each idle connection to free its cache, closes the
// idle ones but one, leaves the connections in use alone (it does not
// wait for them), opens none, and the store goes on as before, opening
// and keeping connections again when work runs a few at once. (What it
// frees is the bench's figure: an idle persona's own memory.)
func TestReleaseMemoryOnIdleConnections(t *testing.T) {
	sqliteOnly(t)
	ctx := t.Context()
	s, err := Open(ctx, testPath(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.stopCheckpointer() // no connection taken behind the test's back
	if err := s.CreateSession(ctx, Session{ID: "s1", ThreadKey: "C1:1.0", State: SessionLive}); err != nil {
		t.Fatal(err)
	}
	// Three connections open: two idle, one in use.
	var conns []bun.Conn
	for range 3 {
		c, err := s.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns[1:] {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	busy := conns[0]
	defer busy.Close()
	if st := s.db.Stats(); st.OpenConnections != 3 || st.Idle != 2 {
		t.Fatalf("before: %d open, %d idle; want 3, 2", st.OpenConnections, st.Idle)
	}

	if err := s.ReleaseMemory(ctx); err != nil {
		t.Fatal(err)
	}
	if st := s.db.Stats(); st.OpenConnections != 2 || st.Idle != 1 {
		t.Errorf("after: %d open, %d idle; want 2, 1 (the busy one and one idle)", st.OpenConnections, st.Idle)
	}
	if _, err := s.SessionByThread(ctx, "C1:1.0"); err != nil {
		t.Fatalf("a read after: %v", err)
	}
	if err := s.CreateSession(ctx, Session{ID: "s2", ThreadKey: "C1:2.0", State: SessionLive}); err != nil {
		t.Fatalf("a write after: %v", err)
	}
	// Work a few at once opens connections again (beside the busy one, up
	// to the cap), and they are kept.
	conns = conns[:0]
	for range maxOpenConns - 1 {
		c, err := s.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.db.Stats(); st.OpenConnections != maxOpenConns || st.Idle != maxOpenConns-1 {
		t.Errorf("under load again: %d open, %d idle; want %d, %d", st.OpenConnections, st.Idle, maxOpenConns, maxOpenConns-1)
	}
}
