package store

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
)

// A file store copies its WAL into the database file in the background,
// every checkpointEvery writes, long before SQLite's own checkpoint in a
// commit (at 1,000 pages of WAL) would; Close ends the checkpointer.
func TestCheckpointsInTheBackground(t *testing.T) {
	sqliteOnly(t)
	ctx := t.Context()
	path := testPath(t)
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.ckpt == nil {
		t.Fatal("a file store without a checkpointer")
	}
	// Everything so far in the file, the WAL emptied: the file grows
	// again only by a checkpoint.
	if _, err := s.db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	size := func(p string) int64 {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := size(path)
	if err := s.CreateSession(ctx, Session{ID: "s1", ThreadKey: "D1:1.0", State: SessionLive}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("words ", 1000) // a page and a half of message
	for range checkpointEvery {
		if err := s.AppendMessages(ctx, "s1", Message{Role: RoleUser, Content: text(long)}); err != nil {
			t.Fatal(err)
		}
	}
	if frames := size(path+"-wal") / (4096 + 24); frames >= 1000 {
		t.Fatalf("the WAL holds %d frames: SQLite's own checkpoint could have run", frames)
	}
	if !fake.Eventually(10*time.Second, func() bool { return size(path) > before }) {
		t.Fatalf("after %d writes the database file is still %d bytes: no checkpoint ran", checkpointEvery+1, before)
	}
	// On a connection of its own, closed once it is done: the store's
	// pool stays its one connection.
	if !fake.Eventually(10*time.Second, func() bool { return s.ckpt.db.Stats().OpenConnections == 0 }) {
		t.Errorf("the checkpoints' connection is still open: %+v", s.ckpt.db.Stats())
	}
	if st := s.db.Stats(); st.OpenConnections != 1 {
		t.Errorf("the store has %d connections open, want 1", st.OpenConnections)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.ckpt.done:
	default:
		t.Fatal("the checkpointer outlived Close")
	}
	if err := s.Close(); err != nil { // a second Close is harmless
		t.Fatal(err)
	}
}

// Only a file store has a checkpointer: in memory there is no WAL.
func TestNoCheckpointerInMemory(t *testing.T) {
	sqliteOnly(t)
	s, err := Open(t.Context(), InMemory, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.ckpt != nil {
		t.Fatal("an in-memory store has a checkpointer")
	}
	for range checkpointEvery + 1 {
		if _, err := s.MarkEvent(t.Context(), "ev"); err != nil {
			t.Fatal(err)
		}
	}
}
