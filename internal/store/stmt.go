package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"github.com/uptrace/bun"
)

// stmtCache keeps the hot path's statements prepared. The driver parses a
// statement on every call otherwise; the event path runs some fifteen, and
// parsing was a third of the store's time per turn. database/sql prepares
// a cached Stmt once per pooled connection and reuses it after.
type stmtCache struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// A prepared statement runs as prepared unless a bound value steers
// SQLite's plan (3.51): a bound LIMIT (the planner weighs a small
// limit) or the pattern of a LIKE or GLOB (a prefix may use an index).
// Binding such a parameter, even to the value it had, expires the
// statement, and SQLite prepares it again at its next run: parsed and
// planned at every call, as if never prepared (the scheduler's due
// schedules took 0.13 ms of every simulated scenario so). So a limit is
// written into the statement when it takes few values (DueSchedules,
// ThreadsOf, the recall's candidates), and bound behind a unary plus,
// which SQLite does not read as a known value, when it follows the data
// (qCountSQLite, SQLite's alone); a prefix is matched with substr, not
// LIKE. TestNoPlanSteeringParameter keeps it so.

// stmt returns query prepared (written with ? placeholders).
func (s *Store) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st := s.cached(query); st != nil {
		return st, nil
	}
	// Prepared without the lock: preparing waits for a connection of the
	// pool, which a transaction may hold while it reads the cache.
	st, err := s.db.DB.PrepareContext(ctx, s.bind(query))
	if err != nil {
		return nil, err
	}
	s.stmts.mu.Lock()
	defer s.stmts.mu.Unlock()
	if had, ok := s.stmts.m[query]; ok { // prepared meanwhile by another caller
		_ = st.Close()
		return had, nil
	}
	if s.stmts.m == nil {
		s.stmts.m = map[string]*sql.Stmt{}
	}
	s.stmts.m[query] = st
	return st, nil
}

// bind writes query's placeholders the way the backend takes them.
func (s *Store) bind(query string) string {
	if s.pg {
		return rebind(query)
	}
	return query
}

// exec runs a prepared statement outside a transaction.
func (s *Store) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := s.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// queryRow runs a prepared single-row query outside a transaction.
func (s *Store) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := s.stmt(ctx, query)
	if err != nil {
		// QueryRowContext on the pool reports the same error through Scan.
		return s.db.DB.QueryRowContext(ctx, s.bind(query), args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// oneRow reports whether a statement changed exactly one row: the INSERT …
// ON CONFLICT DO NOTHING that wrote its row first, the conditional UPDATE
// that won.
func oneRow(res sql.Result, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// query runs a prepared query outside a transaction.
func (s *Store) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := s.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// cached returns query's statement if it was prepared already. Inside a
// transaction nothing is prepared on the pool: that would take a second
// connection while the transaction holds the write lock.
func (s *Store) cached(query string) *sql.Stmt {
	s.stmts.mu.Lock()
	defer s.stmts.mu.Unlock()
	return s.stmts.m[query]
}

// txExec runs a statement in tx, prepared when Open prepared it.
func (s *Store) txExec(ctx context.Context, tx bun.Tx, query string, args ...any) (sql.Result, error) {
	if st := s.cached(query); st != nil {
		return tx.Tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return tx.Tx.ExecContext(ctx, s.bind(query), args...)
}

// txQueryRow runs a single-row query in tx, prepared when Open prepared it.
func (s *Store) txQueryRow(ctx context.Context, tx bun.Tx, query string, args ...any) *sql.Row {
	if st := s.cached(query); st != nil {
		return tx.Tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return tx.Tx.QueryRowContext(ctx, s.bind(query), args...)
}

// Statements of transactions on the event path, prepared by Open.
const (
	qTouchSession  = "UPDATE sessions SET last_activity = ? WHERE session_id = ?"
	qLastSeq       = "SELECT coalesce(max(seq), 0) FROM messages WHERE session_id = ?"
	qInsertMessage = `INSERT INTO messages (session_id, seq, role, content, created_at, event_id) VALUES (?, ?, ?, ?, ?, ?)`
	// qInboxAnswering marks an event answering: state, updated_at,
	// event_id, then the two states it may come from.
	qInboxAnswering = `UPDATE inbox SET state = ?, updated_at = ? WHERE event_id = ? AND state IN (?, ?)`
	// qInboxStart marks an event running: state, trace_id, updated_at,
	// event_id, then the two states it may come from.
	qInboxStart = `UPDATE inbox SET state = ?, attempts = attempts + 1, trace_id = ?, updated_at = ?
		WHERE event_id = ? AND state IN (?, ?) RETURNING attempts`
	// qInboxStarted is qInboxStart for a write that needs no count back:
	// SQLite's RETURNING goes through a temporary table, built and freed
	// at each run.
	qInboxStarted = `UPDATE inbox SET state = ?, attempts = attempts + 1, trace_id = ?, updated_at = ?
		WHERE event_id = ? AND state IN (?, ?)`
	// qInboxFinish moves an event to a final state: state, error,
	// updated_at, event_id, then the three states it may come from.
	// (ORs, not IN: SQLite evaluates an IN list of more than two values
	// through a temporary table, built and freed at each run.)
	qInboxFinish = `UPDATE inbox SET state = ?, error = ?, updated_at = ?
		WHERE event_id = ? AND (state = ? OR state = ? OR state = ?)`
	qMarkEvent     = "INSERT INTO processed_events (event_key, seen_at) VALUES (?, ?) ON CONFLICT DO NOTHING"
	qInsertSession = `INSERT INTO sessions (session_id, thread_key, state, created_at, last_activity, summary)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`
	qInboxReceive = `INSERT INTO inbox
		(event_id, kind, channel_id, thread_ts, user_id, msg_key, event, state, received_at, updated_at, owner)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`
)

// prepareHot prepares the statements that run inside transactions.
func (s *Store) prepareHot(ctx context.Context) error {
	index := qIndexSQLite
	if s.pg {
		index = qIndexPG
	}
	for _, q := range []string{index, qCountDoc, qSessionThread, qTouchSession, qLastSeq, qInsertMessage, qInboxAnswering, qInboxStarted,
		qMarkEvent, qInboxReceive, qInsertSession, qInsertUsage, qInboxFinish, qClaimRan, qClaimLast} {
		if _, err := s.stmt(ctx, q); err != nil {
			return fmt.Errorf("prepare %q: %w", q, err)
		}
	}
	return nil
}

// closeStmts releases the prepared statements.
func (s *Store) closeStmts() {
	s.stmts.mu.Lock()
	defer s.stmts.mu.Unlock()
	for _, st := range s.stmts.m {
		_ = st.Close()
	}
	s.stmts.m = nil
}
