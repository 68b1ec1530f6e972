package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/uptrace/bun"
)

const (
	// busyTimeout is how long a statement waits for a write lock held outside
	// this Store's writer slot (another process, or a caller of DB) before
	// failing with SQLITE_BUSY. Writes here take well under a millisecond
	// with synchronous=NORMAL, so 5 s only runs out when something holds the
	// lock far too long — and then an error beats waiting forever.
	busyTimeout = 5 * time.Second

	// maxOpenConns caps the pool: one connection. WAL would let readers
	// run beside the writer, but SQLite cannot tell which of a
	// connection's cached pages another connection's commit changed: a
	// connection that finds the log moved drops its whole page cache
	// (pager_reset) and reads the pages again. With four connections that
	// was 3.4 % of the live service's CPU, and one connection took 0.3 ms
	// off the time from an event to its reply (the bench, eight alternated
	// pairs of 220 turns). Statements take well under a millisecond, and
	// pure-Go SQLite is CPU-bound on the two cores we run on; the
	// background checkpoint runs on a connection of its own
	// (checkpoint.go), so that none of its syncs is on an event's path.
	maxOpenConns = 1
)

// sqliteBusy is SQLite's primary result code SQLITE_BUSY.
const sqliteBusy = 5

// dsn builds a modernc.org/sqlite URI. The _pragma parameters run on every
// new connection (busy_timeout first), which matters because foreign_keys,
// busy_timeout and synchronous are per connection; _txlock=immediate makes
// every read-write transaction BEGIN IMMEDIATE. journal_mode is not among
// them: WAL is a property of the file, set once by setPragmas.
func dsn(path string) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(busyTimeout.Milliseconds(), 10)+")")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	u := url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}
	return u.String()
}

// memPageSize is the page size of in-memory databases (see memDSN).
const memPageSize = 1024

// memDSN builds the URI of an in-memory database shared by the Store's
// connections (the memdb VFS; a name starting with "/" is shared).
func memDSN(name string) string {
	q := url.Values{}
	q.Set("vfs", "memdb")
	// Pages of 1 KiB, set while the database is empty (the template's,
	// which its copies keep): the simulator's databases are small and
	// mostly one page per table and index, so a copy of the template moves
	// 39 KiB instead of 128, and every page cached, copied and written is
	// a quarter of SQLite's default (BenchmarkSimScenarios: 5.9 → 4.6 ms
	// a scenario).
	q.Add("_pragma", "page_size("+strconv.Itoa(memPageSize)+")")
	q.Add("_pragma", "cache_size(-64)") // KiB; the pages themselves are in memory already
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(busyTimeout.Milliseconds(), 10)+")")
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("_txlock", "immediate")
	u := url.URL{Scheme: "file", Path: name, RawQuery: q.Encode()}
	return u.String()
}

// setPragmas switches the file to WAL, and fails Open if the driver ignored
// the DSN (a different sqliteshim driver, say) rather than run without
// foreign keys or a busy timeout.
func (s *Store) setPragmas(ctx context.Context) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("set pragmas: %w", err)
	}
	defer conn.Close()

	// Switching to WAL needs an exclusive lock, and SQLite returns
	// SQLITE_BUSY at once, without its busy handler, when another process
	// opening the same fresh file holds a lock. So retry, for as long as
	// the busy handler would have waited: in real time, not on the
	// store's clock, since another process holds the lock (a simulated
	// clock standing still would wait forever).
	if s.path == InMemory {
		return checkPragmas(ctx, conn)
	}
	var mode string
	deadline := time.Now().Add(busyTimeout)
	for {
		err = conn.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			break
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("set pragmas: %w", ctx.Err())
		}
	}
	if err != nil {
		return fmt.Errorf("set pragmas: journal_mode: %w", err)
	}
	if mode != "wal" {
		return fmt.Errorf("set pragmas: journal_mode is %q, want wal", mode)
	}
	return checkPragmas(ctx, conn)
}

// checkPragmas fails Open if the driver ignored the DSN's pragmas.
func checkPragmas(ctx context.Context, conn bun.Conn) error {
	var fk, busy int64
	if err := conn.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil {
		return fmt.Errorf("set pragmas: %w", err)
	}
	if err := conn.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy); err != nil {
		return fmt.Errorf("set pragmas: %w", err)
	}
	switch {
	case fk != 1:
		return errors.New("set pragmas: foreign_keys is off")
	case busy != busyTimeout.Milliseconds():
		return fmt.Errorf("set pragmas: busy_timeout is %d ms, want %d", busy, busyTimeout.Milliseconds())
	}
	return nil
}

// isBusy reports whether err is SQLITE_BUSY or one of its extended codes.
// It matches the driver's error by method, so the build-dependent
// sqliteshim driver needs no import here.
func isBusy(err error) bool {
	var coded interface{ Code() int }
	return errors.As(err, &coded) && coded.Code()&0xff == sqliteBusy
}

// ReleaseMemory frees what SQLite's connection keeps that it can read
// again: its page cache and scratch (PRAGMA shrink_memory). The service
// calls it once it is up, with the start-up release of Go's heap:
// otherwise the pages its start read stay cached, part of an idle
// persona's own memory. It waits for the connection if a statement holds
// it; on Postgres, nothing to do.
func (s *Store) ReleaseMemory(ctx context.Context) error {
	if s.pg {
		return nil
	}
	c, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("release memory: %w", err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "PRAGMA shrink_memory"); err != nil {
		return fmt.Errorf("release memory: %w", err)
	}
	return nil
}
