package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/uptrace/bun"
	"modernc.org/sqlite"
)

// template is an in-memory database with the embedded migrations applied,
// made once per process (from the pre-migrated image when it is current): an InMemory store starts as a copy of its pages,
// which costs a fraction of running the migrations again (the simulator
// opens one per scenario).
var (
	templateOnce  sync.Once
	templateStore *Store
	templateErr   error
)

func template() (*Store, error) {
	templateOnce.Do(func() {
		ctx := context.Background()
		s, err := templateFromImage(ctx)
		if err != nil { // stale, or no temporary file: migrate
			s, err = open(ctx, InMemory, Options{}, embeddedMigrations())
		}
		if err != nil {
			templateErr = err
			return
		}
		s.db.SetMaxOpenConns(1) // one connection, never closed: it keeps the pages alive
		templateStore = s
	})
	return templateStore, templateErr
}

// WarmMemory makes the template of in-memory databases now, so that the
// first InMemory stores find it ready (the simulator calls it in the
// background while it reads its scenarios).
func WarmMemory() { _, _ = template() }

// backuper is modernc's connection: it copies its database into another.
type backuper interface {
	NewBackup(dstURI string) (*sqlite.Backup, error)
}

// copyTemplate copies the template into the in-memory database name (the
// memdb VFS's shared name) through a connection of its own, which it
// returns: the database lives while that connection is open. The copy is
// made from the template's open connection, and into a connection opened
// without pragmas, so that neither parses the schema.
func copyTemplate(ctx context.Context, name string) (io.Closer, error) {
	tpl, err := template()
	if err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	conn, err := tpl.db.Conn(ctx) // the template's one connection: copies queue here
	if err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	defer conn.Close()
	var keep io.Closer
	err = conn.Raw(func(dc any) error {
		src, ok := dc.(backuper)
		if !ok {
			return fmt.Errorf("driver %T cannot copy a database", dc)
		}
		// A page cache of 8 pages for the copy: the pages it writes are
		// recycled, where a cache of SQLite's default size allocated each
		// of them (one mmap apiece in modernc's allocator).
		b, err := src.NewBackup((&url.URL{Scheme: "file", Path: name, RawQuery: "vfs=memdb&_pragma=cache_size(8)"}).String())
		if err != nil {
			return err
		}
		more, err := b.Step(-1) // -1: every page; true: pages remain
		if err == nil && more {
			err = errors.New("incomplete")
		}
		if err != nil {
			return errors.Join(err, b.Finish()) // Finish closes the copy
		}
		dst, err := b.Commit()
		if err != nil {
			return err
		}
		keep = dst
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("copy the template: %w", err)
	}
	return keep, nil
}

// closeKeeper closes c, if any.
func closeKeeper(c io.Closer) error {
	if c == nil {
		return nil
	}
	return c.Close()
}

// InMemoryPool hands out in-memory stores and takes them back emptied: every
// row of every table deleted, the schema and its migrations kept. A store
// it hands out again keeps its connections, their parsed schema and its
// prepared statements, where a new one copies the template, parses the
// schema and prepares each statement again (the simulator runs many
// scenarios, a few at a time). Its zero value is ready; it keeps at most
// maxPooledStores.
type InMemoryPool struct {
	mu   sync.Mutex
	free []*Store
}

const maxPooledStores = 8

// Get returns an emptied store from the pool, with opts, or a new one.
func (p *InMemoryPool) Get(ctx context.Context, opts Options) (*Store, error) {
	keepHeadroom()
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		s := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		s.clock, s.logger = opts.Clock, opts.Logger
		s.defaults()
		return s, nil
	}
	p.mu.Unlock()
	s, err := Open(ctx, InMemory, opts)
	if err != nil {
		return nil, err
	}
	// Its schema cookie as copied: a change of its schema moves it.
	if err := s.db.QueryRowContext(ctx, "PRAGMA schema_version").Scan(&s.pooled); err != nil {
		return nil, errors.Join(fmt.Errorf("open store %s: %w", InMemory, err), s.Close())
	}
	return s, nil
}

// Put empties s and keeps its connections for the next Get, or closes it:
// when the pool is full, or when s cannot be emptied back to what a copy
// of the template holds (its schema changed, a delete failed). Either way
// s is done: a write through it after Put fails (ErrHandedBack) instead of
// landing in the next user's database, and closing it does nothing.
func (p *InMemoryPool) Put(ctx context.Context, s *Store) error {
	if err := s.emptyAndRetire(ctx); err != nil {
		return errors.Join(err, s.Close())
	}
	next := s.handOver()
	p.mu.Lock()
	if len(p.free) < maxPooledStores {
		p.free = append(p.free, next)
		p.mu.Unlock()
		return nil
	}
	p.mu.Unlock()
	return next.Close()
}

// ErrHandedBack is the error of a write through a store after it went back
// to its InMemoryPool.
var ErrHandedBack = errors.New("store: written after it was handed back to its pool")

// handOver returns a new Store on a retired s's connections, writer slot
// and prepared statements.
func (s *Store) handOver() *Store {
	s.stmts.mu.Lock()
	stmts := s.stmts.m
	s.stmts.m = nil
	s.stmts.mu.Unlock()
	return &Store{db: s.db, path: s.path, source: s.source, writer: s.writer, keep: s.keep, stmts: stmtCache{m: stmts}, pooled: s.pooled}
}

// emptying is how a copy of the template is emptied: deletes holds a
// DELETE of each of the template's tables but SQLite's own, the
// migrations' and the shadow tables of a full-text index (deleting from
// the index empties them as the index keeps them), a table's before those
// of the tables its foreign keys point to: each delete leaves no row
// pointing at a row gone, so the foreign keys hold after every statement.
// (Deferring them to the commit would take a flag pragma, and setting one
// expires every prepared statement of the connection: the pool's
// statements would be prepared again after each scenario.) probe returns
// the index in deletes of each ordinary table that holds a row: a scenario
// writes a few tables, and a DELETE of an empty one still writes its
// pages and theirs of its indexes (through the rollback journal); the
// full-text index is emptied always.
type emptying struct {
	deletes []string
	probe   string
}

var templateEmptying = sync.OnceValues(func() (emptying, error) {
	tpl, err := template()
	if err != nil {
		return emptying{}, err
	}
	// One query for the tables, their kinds and the tables their foreign
	// keys point to (a row per key, a row of NULL for a table without):
	// a query per table was one statement more to parse, each, on every
	// process's first emptying.
	rows, err := tpl.db.QueryContext(context.Background(), `SELECT t.name, t.type, f."table" FROM pragma_table_list AS t
		LEFT JOIN pragma_foreign_key_list(t.name) AS f
		WHERE t.schema = 'main' AND t.type IN ('table', 'virtual') AND t.name NOT LIKE 'sqlite_%' AND t.name <> ?
		ORDER BY t.name`, migrationsTable)
	if err != nil {
		return emptying{}, fmt.Errorf("tables: %w", err)
	}
	defer rows.Close()
	var tables, virtual []string
	parents := map[string][]string{}
	for rows.Next() {
		var name, kind string
		var parent sql.NullString
		if err := rows.Scan(&name, &kind, &parent); err != nil {
			return emptying{}, fmt.Errorf("tables: %w", err)
		}
		if len(tables) == 0 || tables[len(tables)-1] != name {
			tables = append(tables, name)
			if kind == "virtual" {
				virtual = append(virtual, name)
			}
		}
		if parent.Valid && !slices.Contains(parents[name], parent.String) {
			parents[name] = append(parents[name], parent.String)
		}
	}
	if err := rows.Err(); err != nil {
		return emptying{}, fmt.Errorf("tables: %w", err)
	}
	order, err := childrenFirst(tables, parents)
	if err != nil {
		return emptying{}, err
	}
	e := emptying{deletes: make([]string, len(order))}
	var probes []string
	for i, t := range order {
		e.deletes[i] = `DELETE FROM "` + t + `"`
		if slices.Contains(virtual, t) {
			probes = append(probes, fmt.Sprintf("SELECT %d", i))
		} else {
			probes = append(probes, fmt.Sprintf(`SELECT %d WHERE EXISTS (SELECT 1 FROM "%s")`, i, t))
		}
	}
	e.probe = strings.Join(probes, " UNION ALL ")
	return e, nil
})

// templateDeletes is the DELETEs of templateEmptying.
func templateDeletes() ([]string, error) {
	e, err := templateEmptying()
	return e.deletes, err
}

// txIndexes runs the prepared query of one integer column in tx and
// returns its values in ascending order.
func (s *Store) txIndexes(ctx context.Context, tx bun.Tx, query string) ([]int, error) {
	st := s.cached(query)
	if st == nil {
		return nil, errors.New("not prepared")
	}
	rows, err := tx.Tx.StmtContext(ctx, st).QueryContext(ctx)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var i int
		if err := rows.Scan(&i); err != nil {
			return nil, err
		}
		out = append(out, i)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}

// childrenFirst orders tables so that each comes before every table it
// references (parents: table → the tables its foreign keys point to),
// otherwise in the order given. A table that references itself is no
// obstacle (one DELETE removes all its rows); a cycle between tables is an
// error.
func childrenFirst(tables []string, parents map[string][]string) ([]string, error) {
	children := make(map[string]int, len(tables)) // references from tables not yet ordered
	for _, t := range tables {
		for _, p := range parents[t] {
			if p != t {
				children[p]++
			}
		}
	}
	order := make([]string, 0, len(tables))
	done := make(map[string]bool, len(tables))
	for len(order) < len(tables) {
		next := ""
		for _, t := range tables {
			if !done[t] && children[t] == 0 {
				next = t
				break
			}
		}
		if next == "" {
			var left []string
			for _, t := range tables {
				if !done[t] {
					left = append(left, t)
				}
			}
			return nil, fmt.Errorf("foreign keys in a cycle between tables %s", strings.Join(left, ", "))
		}
		done[next] = true
		order = append(order, next)
		for _, p := range parents[next] {
			if p != next {
				children[p]--
			}
		}
	}
	return order, nil
}

// emptyAndRetire deletes every row of an in-memory store's tables but the
// migrations' in one transaction, children before parents, leaving what a
// copy of the template holds, and retires s before it lets go of the
// writer slot: no write of s comes after the deletes. It fails,
// changing nothing, unless the store's schema is still the template's (a
// table, index or trigger made or changed since would outlive the rows).
// The deletes are prepared once per store.
func (s *Store) emptyAndRetire(ctx context.Context) error {
	if s.path != InMemory || s.keep == nil || s.pooled == 0 {
		return errors.New("empty store: not a copy of the template from a InMemoryPool")
	}
	e, err := templateEmptying()
	if err != nil {
		return fmt.Errorf("empty store: template: %w", err)
	}
	var version int64
	if err := s.db.QueryRowContext(ctx, "PRAGMA schema_version").Scan(&version); err != nil {
		return fmt.Errorf("empty store: %w", err)
	}
	if version != s.pooled {
		return fmt.Errorf("empty store: its schema changed since it was copied (schema version %d, was %d)", version, s.pooled)
	}
	for _, q := range append([]string{e.probe}, e.deletes...) {
		// Prepared here: in the transaction, the pool's one connection
		// is taken.
		if _, err := s.stmt(ctx, q); err != nil {
			return fmt.Errorf("empty store: %s: %w", q, err)
		}
	}
	return s.slot(ctx, func(ctx context.Context) error {
		err := s.tx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			full, err := s.txIndexes(ctx, tx, e.probe)
			if err != nil {
				return fmt.Errorf("tables with rows: %w", err)
			}
			for _, i := range full {
				if i < 0 || i >= len(e.deletes) {
					return fmt.Errorf("tables with rows: no table %d", i)
				}
				if _, err := s.txExec(ctx, tx, e.deletes[i]); err != nil {
					return fmt.Errorf("%s: %w", e.deletes[i], err)
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("empty store: %w", err)
		}
		s.retired.Store(true)
		return nil
	})
}
