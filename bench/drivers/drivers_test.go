// Package drivers compares SQLite's two Go drivers on the store's kinds of
// work: modernc.org/sqlite (pure Go, transpiled C; the one the runtime
// uses, so that its binary builds without cgo) and github.com/mattn/go-sqlite3
// (cgo; what bun's sqliteshim picks when cgo is on). It is a module of its
// own so that the runtime does not depend on the cgo driver. Run it with
//
//	cd bench/drivers && CGO_ENABLED=1 go test -tags sqlite_fts5 -run '^$' -bench . -benchtime 2000x
package drivers

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	_ "github.com/mattn/go-sqlite3" // "sqlite3"
	_ "modernc.org/sqlite"          // "sqlite"
)

// schema is a few of the store's shapes: a history, a usage ledger, an
// inbox with an upsert, the recall index (FTS5, the store's tokenizer).
var schema = []string{
	`CREATE TABLE messages (id INTEGER PRIMARY KEY, thread TEXT NOT NULL, role TEXT NOT NULL, body TEXT NOT NULL, created_at INTEGER NOT NULL)`,
	`CREATE INDEX messages_thread ON messages(thread, id)`,
	`CREATE TABLE usage (id INTEGER PRIMARY KEY, thread TEXT, input INTEGER, output INTEGER, at INTEGER)`,
	`CREATE TABLE inbox (key TEXT PRIMARY KEY, state TEXT NOT NULL, at INTEGER)`,
	`CREATE VIRTUAL TABLE recall USING fts5(body, chan, kind UNINDEXED, ref UNINDEXED, tokenize = 'porter unicode61')`,
}

// moreTables are n more tables with two indexes each: a schema of about
// the store's size for n = 20.
func moreTables(n int) []string {
	var out []string
	for i := range n {
		out = append(out,
			fmt.Sprintf(`CREATE TABLE t%d (id INTEGER PRIMARY KEY, a TEXT NOT NULL, b INTEGER, c TEXT, d BLOB, UNIQUE(a, b))`, i),
			fmt.Sprintf(`CREATE INDEX t%d_c ON t%d(c)`, i, i))
	}
	return out
}

// open opens a database on one connection with the schema and n more
// tables: in memory, or with dir a file in WAL mode with synchronous
// NORMAL, as the service's store is.
func open(b *testing.B, driver string, n int, dir string) *sql.DB {
	b.Helper()
	dsn := "file:x?mode=memory&cache=private"
	if driver == "sqlite" {
		dsn = ":memory:"
	}
	if dir != "" {
		dsn = dir + "/db.sqlite"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	stmts := []string{"PRAGMA foreign_keys = ON"}
	if dir != "" {
		stmts = append(stmts, "PRAGMA journal_mode = WAL", "PRAGMA synchronous = NORMAL")
	}
	stmts = append(append(stmts, schema...), moreTables(n)...)
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			b.Fatalf("%s: %s: %v", driver, q, err)
		}
	}
	return db
}

const words = "the quick brown fox jumps over the lazy dog while the persona answers a question about deploys and schedules"

// benchTx is one write transaction of a turn's kind: a message, its usage
// row, the event's inbox mark and, with fts, the message in the recall
// index; prepared statements, as the store's.
func benchTx(b *testing.B, driver string, file, fts bool) {
	dir := ""
	if file {
		dir = b.TempDir()
	}
	db := open(b, driver, 0, dir)
	defer db.Close()
	ctx := context.Background()
	var stmts []*sql.Stmt
	for _, q := range []string{
		`INSERT INTO messages (thread, role, body, created_at) VALUES (?, ?, ?, ?)`,
		`INSERT INTO usage (thread, input, output, at) VALUES (?, ?, ?, ?)`,
		`INSERT INTO inbox (key, state, at) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET state = excluded.state`,
		`INSERT INTO recall (body, chan, kind, ref) VALUES (?, ?, ?, ?)`,
	} {
		st, err := db.Prepare(q)
		if err != nil {
			b.Fatal(err)
		}
		stmts = append(stmts, st)
	}
	b.ResetTimer()
	for i := range b.N {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		thread := fmt.Sprint("t", i%50)
		args := [][]any{
			{thread, "assistant", words, i},
			{thread, 100, 20, i},
			{fmt.Sprint("k", i), "answered", i},
			{words, "C1", "msg", thread},
		}
		n := 3
		if fts {
			n = 4
		}
		for k := range n {
			if _, err := tx.Stmt(stmts[k]).Exec(args[k]...); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

// benchPrepare prepares a query of the history's kind.
func benchPrepare(b *testing.B, driver string) {
	db := open(b, driver, 20, "")
	defer db.Close()
	q := `SELECT m.id, m.body, u.input FROM messages m LEFT JOIN usage u ON u.thread = m.thread WHERE m.thread = ? AND m.id > ? ORDER BY m.id DESC LIMIT 50`
	b.ResetTimer()
	for range b.N {
		st, err := db.Prepare(q)
		if err != nil {
			b.Fatal(err)
		}
		st.Close()
	}
}

// benchSchema makes an in-memory database of the store's size and reads
// its schema: about what a simulator's database costs before its first
// statement.
func benchSchema(b *testing.B, driver string) {
	for range b.N {
		db := open(b, driver, 20, "")
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM sqlite_schema`).Scan(&n); err != nil {
			b.Fatal(err)
		}
		db.Close()
	}
}

func BenchmarkTxModernc(b *testing.B)      { benchTx(b, "sqlite", false, true) }
func BenchmarkTxMattn(b *testing.B)        { benchTx(b, "sqlite3", false, true) }
func BenchmarkTxNoFTSModernc(b *testing.B) { benchTx(b, "sqlite", false, false) }
func BenchmarkTxNoFTSMattn(b *testing.B)   { benchTx(b, "sqlite3", false, false) }
func BenchmarkTxFileModernc(b *testing.B)  { benchTx(b, "sqlite", true, false) }
func BenchmarkTxFileMattn(b *testing.B)    { benchTx(b, "sqlite3", true, false) }
func BenchmarkPrepareModernc(b *testing.B) { benchPrepare(b, "sqlite") }
func BenchmarkPrepareMattn(b *testing.B)   { benchPrepare(b, "sqlite3") }
func BenchmarkSchemaModernc(b *testing.B)  { benchSchema(b, "sqlite") }
func BenchmarkSchemaMattn(b *testing.B)    { benchSchema(b, "sqlite3") }
