package store

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/memory"
)

// countRows is the number of rows of each table a store's use fills.
func countRows(t *testing.T, s *Store) map[string]int {
	t.Helper()
	ctx := t.Context()
	rows, err := s.db.QueryContext(ctx, "SELECT name FROM pragma_table_list WHERE schema = 'main' AND type IN ('table', 'virtual') AND name NOT LIKE 'sqlite_%'")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != migrationsTable {
			names = append(names, n)
		}
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, n := range names {
		var c int
		if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM "`+n+`"`).Scan(&c); err != nil {
			t.Fatal(err)
		}
		counts[n] = c
	}
	return counts
}

// pooledStore returns a pool and a store it handed out.
func pooledStore(t *testing.T) (*InMemoryPool, *Store) {
	t.Helper()
	sqliteOnly(t)
	pool := &InMemoryPool{}
	s, err := pool.Get(t.Context(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return pool, s
}

// A store given back to its pool comes out again empty — every table as
// the template has it, the migrations kept — on the same connections, and
// works as a new one: the rows it had do not conflict. The one given back
// writes nothing more.
func TestMemoryPoolEmptiesAndReuses(t *testing.T) {
	ctx := t.Context()
	pool, a := pooledStore(t)
	fill := func(s *Store) {
		t.Helper()
		if err := s.CreateSession(ctx, Session{ID: "s1", ThreadKey: "D1:1.0", State: SessionLive}); err != nil {
			t.Fatal(err)
		}
		if err := s.AppendMessages(ctx, "s1", Message{Role: RoleUser, Content: text("hi")}); err != nil {
			t.Fatal(err)
		}
		// An approval and its event: the event's row refers to the
		// approval's, without cascade, so the event's rows must go first.
		if err := s.CreateApproval(ctx, Approval{ID: "ap1", ThreadKey: "D1:1.0", Category: "deploy"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.MarkEvent(ctx, "ev1"); err != nil {
			t.Fatal(err)
		}
		ev, _ := json.Marshal(map[string]string{"ts": "1.0"})
		if _, err := s.InboxReceive(ctx, InboxEntry{EventID: "ev1", Kind: "message", ChannelID: "D1", ThreadTS: "1.0", MsgKey: "D1:1.0", Event: ev}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetThreadMode(ctx, "D1:1.0", "ask"); err != nil {
			t.Fatal(err)
		}
		if err := s.PutPersonaCache(ctx, "k", []byte("v")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AddMemory(ctx, memory.Memory{ID: "maaaaaaaa", Text: "we deploy on Tuesdays", Channel: "D1", Scope: memory.ScopeConversation}); err != nil {
			t.Fatal(err)
		}
	}
	fill(a)
	filled := countRows(t, a)
	for _, n := range []string{"sessions", "messages", "approvals", "approval_events", "processed_events", "inbox", "threads", "persona_cache", "memories", "recall"} {
		if filled[n] == 0 {
			t.Errorf("%s: no row written; the test does not cover it", n)
		}
	}
	var version int
	if err := a.db.QueryRowContext(ctx, "SELECT count(*) FROM "+migrationsTable).Scan(&version); err != nil || version == 0 {
		t.Fatalf("migrations recorded: %d, %v", version, err)
	}

	if err := pool.Put(ctx, a); err != nil {
		t.Fatal(err)
	}
	b, err := pool.Get(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.db != a.db {
		t.Fatal("Get made a new store instead of the one given back")
	}
	for n, c := range countRows(t, b) {
		if c != 0 {
			t.Errorf("%s: %d rows after the store came back, want 0", n, c)
		}
	}
	var kept int
	if err := b.db.QueryRowContext(ctx, "SELECT count(*) FROM "+migrationsTable).Scan(&kept); err != nil || kept != version {
		t.Errorf("migrations recorded after: %d, %v; want %d", kept, err, version)
	}
	fill(b) // the same keys again: nothing left to conflict with

	// The store given back writes nothing more, and closing it leaves
	// its connections to the new one.
	if _, err := a.MarkEvent(ctx, "late"); !errors.Is(err, ErrHandedBack) {
		t.Errorf("a write through the store given back: %v, want ErrHandedBack", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if seen, err := b.EventSeen(ctx, "ev1"); err != nil || !seen {
		t.Fatalf("after the old store's Close: EventSeen = %v, %v", seen, err)
	}
}

// A store whose schema is not the template's any more (here, an index made
// since) is closed, not kept: the next Get makes a new one.
func TestMemoryPoolClosesChangedStore(t *testing.T) {
	ctx := t.Context()
	pool, a := pooledStore(t)
	if _, err := a.DB().ExecContext(ctx, "CREATE INDEX extra ON messages (created_at)"); err != nil {
		t.Fatal(err)
	}
	if err := pool.Put(ctx, a); err == nil || !strings.Contains(err.Error(), "schema changed") {
		t.Fatalf("Put of a changed store: %v, want its schema refused", err)
	}
	b, err := pool.Get(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.db == a.db {
		t.Fatal("the changed store was handed out again")
	}
	var index int
	if err := b.db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE name = 'extra'").Scan(&index); err != nil || index != 0 {
		t.Fatalf("the new store has the changed one's index: %d, %v", index, err)
	}
}

// The emptying deletes a table's rows before those of the tables it
// references, keeps the given order otherwise, is not stopped by a table
// referencing itself, and refuses a cycle.
func TestChildrenFirst(t *testing.T) {
	for _, c := range []struct {
		tables  []string
		parents map[string][]string
		want    string
	}{
		{[]string{"a", "b", "c"}, nil, "a b c"},
		{[]string{"approval_events", "approvals", "messages", "sessions"},
			map[string][]string{"approval_events": {"approvals"}, "messages": {"sessions"}},
			"approval_events approvals messages sessions"},
		{[]string{"p", "c", "g"}, map[string][]string{"c": {"p"}, "g": {"c"}}, "g c p"},
		{[]string{"tree", "leaf"}, map[string][]string{"tree": {"tree"}, "leaf": {"tree"}}, "leaf tree"},
		{[]string{"a", "b", "c"}, map[string][]string{"a": {"b"}, "b": {"a"}}, "error: foreign keys in a cycle between tables a, b"},
	} {
		order, err := childrenFirst(c.tables, c.parents)
		got := strings.Join(order, " ")
		if err != nil {
			got = "error: " + err.Error()
		}
		if got != c.want {
			t.Errorf("childrenFirst(%v, %v) = %q, want %q", c.tables, c.parents, got, c.want)
		}
	}
}

// The template's deletes put every table's before those it references,
// for the schema as migrated.
func TestTemplateDeletesOrder(t *testing.T) {
	sqliteOnly(t)
	deletes, err := templateDeletes()
	if err != nil {
		t.Fatal(err)
	}
	at := map[string]int{}
	for i, q := range deletes {
		at[strings.Trim(strings.TrimPrefix(q, "DELETE FROM "), `"`)] = i
	}
	for child, parent := range map[string]string{"approval_events": "approvals", "messages": "sessions"} {
		if at[child] > at[parent] {
			t.Errorf("%s emptied after %s, which it references: %v", child, parent, deletes)
		}
	}
}

// The emptying's probe names the tables that hold a row, and the
// full-text index always (emptying it empties its shadow tables); the
// others' DELETEs are skipped.
func TestTemplateEmptyingProbe(t *testing.T) {
	ctx := t.Context()
	_, s := pooledStore(t)
	defer s.Close()
	if err := s.CreateSession(ctx, Session{ID: "s1", ThreadKey: "D1:1.0", State: SessionLive}); err != nil {
		t.Fatal(err)
	}
	e, err := templateEmptying()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.db.QueryContext(ctx, e.probe)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var i int
		if err := rows.Scan(&i); err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.Trim(strings.TrimPrefix(e.deletes[i], "DELETE FROM "), `"`))
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []string{"recall", "sessions"}; !slices.Equal(got, want) {
		t.Errorf("tables to empty = %v, want %v", got, want)
	}
}
