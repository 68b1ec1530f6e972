package store

import (
	"testing"

	"github.com/uptrace/bun"
)

// ReleaseMemory asks each idle connection to free its cache, leaves the
// connections in use alone (it does not wait for them), opens none, and
// the store goes on as before. (What it frees is the bench's figure: an
// idle persona's own memory.)
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
	if st := s.db.Stats(); st.OpenConnections != 3 || st.Idle != 2 {
		t.Errorf("after: %d open, %d idle; want the same 3, 2", st.OpenConnections, st.Idle)
	}
	if _, err := s.SessionByThread(ctx, "C1:1.0"); err != nil {
		t.Fatalf("a read after: %v", err)
	}
	if err := s.CreateSession(ctx, Session{ID: "s2", ThreadKey: "C1:2.0", State: SessionLive}); err != nil {
		t.Fatalf("a write after: %v", err)
	}
}
