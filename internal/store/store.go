package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/persona-runtime/agent/pkg/clock"
)

var (
	// ErrNotFound is returned (wrapped) when the requested row does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict is returned (wrapped) when a row that must be unique
	// already exists.
	ErrConflict = errors.New("already exists")
)

// Options configures Open. The zero value is ready to use.
type Options struct {
	// Clock stamps rows (every "now" of the store comes from it) and is
	// what the fleet's pings and lock polls wait on; nil means
	// clock.System. The simulator's stands still between its advance
	// steps: rows stamped alike are ordered by their ids or sequence.
	Clock clock.Clock
	// Logger receives notices such as applied migrations. Nil discards them.
	Logger *slog.Logger
}

// Store is the embedded SQLite database. Its methods are safe for
// concurrent use.
type Store struct {
	db     *bun.DB
	path   string // the file, or the Postgres address without its password
	source string // the driver's data source name
	pg     bool   // Postgres (postgres.go), not SQLite
	// replica is this process's id in a fleet (OpenFleet), "" alone.
	replica string
	clock   clock.Clock
	logger  *slog.Logger

	// writer is the in-process writer slot (capacity 1): SQLite allows one
	// writer, so our writers queue here, honouring their contexts, instead
	// of spinning in SQLite's busy handler.
	writer chan struct{}

	stmts stmtCache

	// keep is an in-memory database's own connection, outside the pool:
	// the database lives as long as a connection holds it, so it outlives
	// any the pool closes. Nil for files and Postgres.
	keep io.Closer

	// retired is set when the store's connections went back to a
	// InMemoryPool (handOver): it writes nothing and closes nothing.
	retired atomic.Bool
	// pooled is the schema version (SQLite's schema cookie) of a
	// InMemoryPool's store as copied from the template; 0 for others.
	pooled int64

	// ckpt runs a file's WAL checkpoints in the background; nil in
	// memory and on Postgres.
	ckpt *checkpointer
}

// Open opens the SQLite database at path, creating the file (0600) and its
// parent directory (0700) if needed, and applies pending migrations.
// Connections use WAL, busy_timeout 5 s, foreign keys and
// synchronous=NORMAL (durable across a process crash; a power loss may drop
// the last transactions, never corrupt the file).
//
// It returns an error matching ErrSchemaNewer if a newer binary already
// migrated the database.
//
// A postgres:// address opens Postgres instead (see postgres.go).
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	return open(ctx, path, opts, nil)
}

// InMemory is the path that opens a private in-memory database: nothing on
// disk, gone at Close. The simulator runs each scenario on one.
const InMemory = ":memory:"

// memSeq names in-memory databases; one name is shared by the connections
// of one Store only.
var memSeq atomic.Int64

// open is Open with the migrations as a parameter, so tests can break them
// (nil: the embedded ones).
func open(ctx context.Context, path string, opts Options, migrations fs.FS) (*Store, error) {
	if IsPostgres(path) {
		return openPostgres(ctx, path, opts, migrations)
	}
	return openSQLite(ctx, path, opts, migrations)
}

func openSQLite(ctx context.Context, path string, opts Options, migrations fs.FS) (*Store, error) {
	if path == "" {
		return nil, errors.New("open store: empty path")
	}
	pinCHeap()
	var abs, source string
	var keep io.Closer
	embedded := migrations == nil
	if path == InMemory {
		pinScratch()
		abs = InMemory
		name := fmt.Sprintf("/agent-%d-%d", os.Getpid(), memSeq.Add(1))
		source = memDSN(name)
		if embedded {
			// The database starts as a copy of the template, made before
			// any connection of the pool opens it.
			var err error
			if keep, err = copyTemplate(ctx, name); err != nil {
				return nil, fmt.Errorf("open store %s: %w", abs, err)
			}
		}
	} else {
		var err error
		if abs, err = createFile(path); err != nil {
			return nil, err
		}
		source = dsn(abs)
	}
	sqldb, err := sql.Open(sqliteshim.ShimName, source)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open store: %w", err), closeKeeper(keep))
	}
	sqldb.SetMaxOpenConns(maxOpenConns)
	// Keep the idle connection forever: reopening it re-runs the pragmas,
	// parses the schema and starts with a cold page cache.
	sqldb.SetMaxIdleConns(maxOpenConns)
	sqldb.SetConnMaxIdleTime(0)
	sqldb.SetConnMaxLifetime(0)

	s := &Store{
		db:     bun.NewDB(sqldb, sqlitedialect.New()),
		path:   abs,
		source: source,
		clock:  opts.Clock,
		logger: opts.Logger,
		writer: make(chan struct{}, 1),
		keep:   keep,
	}
	s.defaults()
	if err := s.setPragmas(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("open store %s: %w", abs, err), s.Close())
	}
	if keep == nil {
		if migrations == nil {
			migrations = embeddedMigrations()
		}
		if err := s.migrate(ctx, migrations); err != nil {
			return nil, errors.Join(fmt.Errorf("open store %s: %w", abs, err), s.Close())
		}
	}
	if path != InMemory {
		if err := s.startCheckpointer(); err != nil {
			return nil, errors.Join(fmt.Errorf("open store %s: %w", abs, err), s.Close())
		}
	}
	if !embedded {
		return s, nil
	}
	if err := s.prepareHot(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("open store %s: %w", abs, err), s.Close())
	}
	return s, nil
}

// now is the store's time: what stamps rows.
func (s *Store) now() time.Time { return s.clock.Now() }

func (s *Store) defaults() {
	s.clock = clock.Or(s.clock)
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
}

// createFile creates the database file (0600) and its directory (0700):
// SQLite would create it world-readable, and it holds conversations.
// SQLite gives -wal and -shm the same mode.
func createFile(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("open store: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return "", fmt.Errorf("open store: %w", err)
	}
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return "", fmt.Errorf("open store: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("open store: %w", err)
	}
	return abs, nil
}

// Close closes the database. Later calls return nil.
func (s *Store) Close() error {
	if s.retired.Load() {
		return nil // its connections are another Store's now
	}
	s.stopCheckpointer()
	s.closeStmts()
	err := s.db.Close()
	// The keeper goes last: with it goes an in-memory database's content.
	if kerr := closeKeeper(s.keep); err == nil {
		err = kerr
	}
	s.keep = nil
	if err != nil {
		return fmt.Errorf("close store: %w", err)
	}
	return nil
}

// DB returns the underlying database, for packages that own their own
// tables (for example ingest jobs). Keep write transactions short, and do
// not call Store methods while holding one: they would wait for the write
// lock it holds until busy_timeout runs out.
func (s *Store) DB() *bun.DB { return s.db }

// Path returns the absolute path of the database file (a Postgres address,
// without its password).
func (s *Store) Path() string { return s.path }

// write runs fn while holding the writer slot. Use it for single-statement
// writes; use inTx when more than one row changes.
func (s *Store) write(ctx context.Context, fn func(ctx context.Context) error) error {
	return s.slot(ctx, func(ctx context.Context) error {
		// What the event's context still owes goes first (see
		// WithInboxStart), in a transaction of its own: fn's statements
		// are not one.
		if p := pendingOf(ctx); p != nil {
			if err := s.tx(ctx, p, nil); err != nil {
				return err
			}
		}
		return fn(ctx)
	})
}

// slot runs fn holding the writer slot.
func (s *Store) slot(ctx context.Context, fn func(ctx context.Context) error) error {
	select {
	case s.writer <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.writer }()
	if s.retired.Load() { // set holding the slot (emptyAndRetire)
		return ErrHandedBack
	}
	defer s.wrote()
	return fn(ctx)
}

// inTx runs fn in one IMMEDIATE transaction while holding the writer slot;
// fn's error rolls everything back. fn must use tx, never s.db. On
// Postgres the transaction first takes the writer lock that other
// processes' transactions take too. What the event's context still owes
// (see WithInboxStart) is written first, in the same transaction.
func (s *Store) inTx(ctx context.Context, fn func(ctx context.Context, tx bun.Tx) error) error {
	return s.slot(ctx, func(ctx context.Context) error {
		return s.tx(ctx, pendingOf(ctx), fn)
	})
}

// tx runs p's writes (p may be nil), then fn (may be nil), in one
// transaction; called with the writer slot held. p is settled only once
// the transaction committed.
func (s *Store) tx(ctx context.Context, p *pendingWrites, fn func(ctx context.Context, tx bun.Tx) error) error {
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if s.pg {
			if _, err := tx.Tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", int64(pgLockWriter)); err != nil {
				return fmt.Errorf("writer lock: %w", err)
			}
		}
		if p != nil {
			if err := s.flush(ctx, tx, p); err != nil {
				return err
			}
		}
		if fn == nil {
			return nil
		}
		return fn(ctx, tx)
	})
	if p != nil {
		p.createdNow = nil
		if err == nil {
			p.flushed()
		}
	}
	return err
}

// fromUnixMilli converts a stored timestamp back to a UTC time.
func fromUnixMilli(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// requireRow turns an update that matched no row into ErrNotFound.
func requireRow(res sql.Result) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}
