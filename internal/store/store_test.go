package store

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
)

// newClock returns the tests' clock: it starts at a fixed instant and
// moves only when told.
func newClock() *fake.Clock {
	return fake.NewClock(time.Date(2025, 11, 22, 9, 30, 0, 0, time.UTC))
}

func openAt(t testing.TB, path string, c *fake.Clock) *Store {
	t.Helper()
	s, err := Open(t.Context(), path, Options{Clock: c})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func newTestStore(t testing.TB) (*Store, *fake.Clock) {
	t.Helper()
	c := newClock()
	return openAt(t, testPath(t), c), c
}

func TestOpenCreatesPrivateFiles(t *testing.T) {
	sqliteOnly(t)
	s, _ := newTestStore(t)
	for path, want := range map[string]os.FileMode{
		filepath.Dir(s.Path()): 0o700 | os.ModeDir,
		s.Path():               0o600,
	} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode(), want)
		}
	}
	if !filepath.IsAbs(s.Path()) {
		t.Errorf("Path() = %q, want absolute", s.Path())
	}
}

func TestOpenPragmas(t *testing.T) {
	sqliteOnly(t)
	s, _ := newTestStore(t)
	ctx := t.Context()
	for _, tc := range []struct {
		pragma string
		want   string
	}{
		{"journal_mode", "wal"},
		{"foreign_keys", "1"},
		{"busy_timeout", "5000"},
		{"synchronous", "1"}, // NORMAL
	} {
		t.Run(tc.pragma, func(t *testing.T) {
			var got string
			if err := s.DB().QueryRowContext(ctx, "PRAGMA "+tc.pragma).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("PRAGMA %s = %q, want %q", tc.pragma, got, tc.want)
			}
		})
	}
}

func TestForeignKeysEnforced(t *testing.T) {
	s, _ := newTestStore(t)
	_, err := s.DB().ExecContext(t.Context(),
		`INSERT INTO messages (session_id, seq, role, content, created_at) VALUES ('nope', 1, 'user', '[]', 0)`)
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "foreign key") {
		t.Fatalf("insert with unknown session: err = %v, want foreign key failure", err)
	}
}

func TestReopenKeepsDataAndSchema(t *testing.T) {
	ctx := t.Context()
	path, c := testPath(t), newClock()

	s, err := Open(ctx, path, Options{Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.MarkEvent(ctx, "ev1"); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSession(ctx, Session{ID: "s1", ThreadKey: "C1:1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendMessages(ctx, "s1", Message{Role: RoleUser, Content: []byte(`"hi"`)}); err != nil {
		t.Fatal(err)
	}
	before := appliedMigrations(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openAt(t, path, c)
	if after := appliedMigrations(t, s); after != before {
		t.Errorf("applied migrations after reopen = %d, want %d", after, before)
	}
	if seen, err := s.EventSeen(ctx, "ev1"); err != nil || !seen {
		t.Errorf("EventSeen after reopen = %v, %v; want true", seen, err)
	}
	h, err := s.History(ctx, "s1")
	if err != nil || len(h) != 1 || string(h[0].Content) != `"hi"` {
		t.Errorf("History after reopen = %+v, %v", h, err)
	}
}

func appliedMigrations(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.DB().QueryRowContext(t.Context(), "SELECT count(*) FROM bun_migrations").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no migrations recorded")
	}
	return n
}

func TestOpenRejectsNewerSchema(t *testing.T) {
	ctx := t.Context()
	path := testPath(t)
	s := openAt(t, path, newClock())
	if _, err := s.DB().ExecContext(ctx,
		"INSERT INTO bun_migrations (name, group_id) VALUES ('9999', 99)"); err != nil {
		t.Fatal(err)
	}

	_, err := Open(ctx, path, Options{})
	if !errors.Is(err, ErrSchemaNewer) {
		t.Fatalf("Open = %v, want ErrSchemaNewer", err)
	}
}

func TestFailedMigrationLeavesNothing(t *testing.T) {
	ctx := t.Context()
	path := testPath(t)
	good := &fstest.MapFile{Data: []byte("CREATE TABLE a (x INTEGER);")}
	migrations := fstest.MapFS{
		"0001_a.tx.up.sql": good,
		// Two statements; the second fails after the first succeeded.
		"0002_b.tx.up.sql": {Data: []byte("CREATE TABLE b (x INTEGER);\nINSERT INTO missing VALUES (1);")},
	}
	if _, err := open(ctx, path, Options{}, migrations); err == nil {
		t.Fatal("open with a failing migration succeeded")
	}

	s, err := open(ctx, path, Options{}, fstest.MapFS{"0001_a.tx.up.sql": good})
	if err != nil {
		t.Fatalf("reopen with the good migration only: %v", err)
	}
	defer s.Close()
	var tables, recorded int
	tablesQuery := "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'b'"
	if onPostgres() {
		tablesQuery = "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'b'"
	}
	if err := s.DB().QueryRowContext(ctx, tablesQuery).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if err := s.DB().QueryRowContext(ctx,
		"SELECT count(*) FROM bun_migrations WHERE name = '0002'").Scan(&recorded); err != nil {
		t.Fatal(err)
	}
	if tables != 0 || recorded != 0 {
		t.Errorf("after failed migration: table b exists %d, recorded %d; want neither", tables, recorded)
	}
}

func TestNonTransactionalMigrationRejected(t *testing.T) {
	migrations := fstest.MapFS{"0001_a.up.sql": {Data: []byte("CREATE TABLE a (x INTEGER);")}}
	_, err := open(t.Context(), testPath(t), Options{}, migrations)
	if err == nil || !strings.Contains(err.Error(), "not transactional") {
		t.Fatalf("open = %v, want not transactional", err)
	}
}

func TestEmbeddedMigrationsAreTransactional(t *testing.T) {
	err := fs.WalkDir(embeddedMigrations(), ".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasSuffix(path, ".tx.up.sql") {
			t.Errorf("migration %s: want a .tx.up.sql file", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Opening a fresh database from several processes at once (simulated by
// independent Stores) migrates it once; every opener succeeds.
func TestConcurrentOpenFreshDatabase(t *testing.T) {
	path := testPath(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			s, err := Open(context.Background(), path, Options{})
			if err == nil {
				err = s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("opener %d: %v", i, err)
		}
	}
	s := openAt(t, path, newClock())
	var n int
	if err := s.DB().QueryRowContext(t.Context(),
		"SELECT count(*) FROM bun_migrations WHERE name = '0001'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("migration 0001 recorded %d times, want 1", n)
	}
}

func TestOpenEmptyPath(t *testing.T) {
	sqliteOnly(t)
	if _, err := Open(t.Context(), "", Options{}); err == nil {
		t.Fatal("Open(\"\") succeeded")
	}
}

// InMemory opens a private database per call: migrated, writable, and gone
// at Close; two are independent.
func TestOpenMemory(t *testing.T) {
	sqliteOnly(t)
	ctx := t.Context()
	a, err := Open(ctx, InMemory, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(ctx, InMemory, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := a.MarkEvent(ctx, "ev1"); err != nil {
		t.Fatal(err)
	}
	if seen, err := a.EventSeen(ctx, "ev1"); err != nil || !seen {
		t.Errorf("a: EventSeen = %v, %v", seen, err)
	}
	if seen, err := b.EventSeen(ctx, "ev1"); err != nil || seen {
		t.Errorf("b sees a's event: %v, %v", seen, err)
	}
	// Pages of 1 KiB, the template's (memDSN).
	var size int
	if err := b.DB().QueryRowContext(ctx, "PRAGMA page_size").Scan(&size); err != nil || size != 1024 {
		t.Errorf("page_size = %d, %v; want 1024", size, err)
	}
	// The pool may close its connection (one the driver finds unusable):
	// the database is kept by the store's own, and is still all there.
	a.db.DB.SetMaxIdleConns(0)
	a.db.DB.SetMaxIdleConns(1)
	if seen, err := a.EventSeen(ctx, "ev1"); err != nil || !seen {
		t.Errorf("a, after its pool's connection closed: EventSeen = %v, %v", seen, err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

// Migration 0007 makes the inbox again with its state check as
// comparisons: the events stored before it are kept, field for field, and
// the check still refuses an unknown state.
func TestInboxStateCheckMigration(t *testing.T) {
	sqliteOnly(t)
	ctx := t.Context()
	path := testPath(t)
	before := fstest.MapFS{}
	all := embeddedMigrations()
	names, err := fs.Glob(all, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if name < "0007" {
			data, err := fs.ReadFile(all, name)
			if err != nil {
				t.Fatal(err)
			}
			before[name] = &fstest.MapFile{Data: data}
		}
	}
	old, err := open(ctx, path, Options{}, before)
	if err != nil {
		t.Fatal(err)
	}
	want := InboxEntry{EventID: "Ev1", Kind: "message", ChannelID: "C1", ThreadTS: "1.1", UserID: "U1",
		MsgKey: "C1:1.1", Event: json.RawMessage(`{"text":"hi"}`)}
	if _, err := old.InboxReceive(ctx, want); err != nil {
		t.Fatal(err)
	}
	if err := old.InboxFinish(ctx, "Ev1", InboxFailed, "model down"); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	s := openAt(t, path, newClock())
	got := inboxEntry(t, s, "Ev1")
	if got.Kind != want.Kind || got.ChannelID != want.ChannelID || got.ThreadTS != want.ThreadTS || got.UserID != want.UserID ||
		got.MsgKey != want.MsgKey || string(got.Event) != string(want.Event) || got.State != InboxFailed || got.Error != "model down" {
		t.Errorf("after the migration: %+v", got)
	}
	if _, err := s.DB().ExecContext(ctx, "UPDATE inbox SET state = 'lost' WHERE event_id = 'Ev1'"); err == nil {
		t.Error("an unknown state was stored")
	}
	var schema string
	if err := s.DB().QueryRowContext(ctx, "SELECT sql FROM sqlite_master WHERE name = 'inbox'").Scan(&schema); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(schema, " IN (") {
		t.Errorf("the inbox's check still lists its states with IN:\n%s", schema)
	}
	var indexes int
	if err := s.DB().QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'inbox' AND sql IS NOT NULL").Scan(&indexes); err != nil || indexes != 2 {
		t.Errorf("inbox indexes = %d, %v; want 2", indexes, err)
	}
}

// migrationsBefore are the embedded migrations of both backends numbered
// below first: a database as an older release left it.
func migrationsBefore(t testing.TB, first string) fstest.MapFS {
	t.Helper()
	before := fstest.MapFS{}
	all := embeddedMigrations()
	for _, glob := range []string{"*.sql", "postgres/*.sql"} {
		names, err := fs.Glob(all, glob)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			if path.Base(name) >= first {
				continue
			}
			data, err := fs.ReadFile(all, name)
			if err != nil {
				t.Fatal(err)
			}
			before[name] = &fstest.MapFile{Data: data}
		}
	}
	return before
}
