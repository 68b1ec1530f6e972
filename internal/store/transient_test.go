package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/uptrace/bun/driver/pgdriver"
	"github.com/uptrace/bun/driver/sqliteshim"
)

// The errors classified are the databases' own, produced for real: a
// writer holding SQLite's lock, a missing table, a constraint.
func TestIsTransientSQLite(t *testing.T) {
	sqliteOnly(t)
	s, _ := newTestStore(t)
	ctx := t.Context()
	// Two connections of their own that do not wait for the lock.
	raw := func() *sql.Conn {
		db, err := sql.Open(sqliteshim.ShimName, "file:"+s.Path()+"?_pragma=busy_timeout(0)&_txlock=immediate")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	holder, other := raw(), raw()
	if _, err := holder.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	_, busy := other.ExecContext(ctx, "INSERT INTO processed_events (event_key, seen_at) VALUES ('k', 1)")
	if _, err := holder.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	_, missing := other.ExecContext(ctx, "SELECT * FROM no_such_table")
	_, _ = other.ExecContext(ctx, "INSERT INTO processed_events (event_key, seen_at) VALUES ('k', 1)")
	_, conflict := other.ExecContext(ctx, "INSERT INTO processed_events (event_key, seen_at) VALUES ('k', 1)")
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, gone := s.EventSeen(cancelled, "k")

	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"busy", busy, true},
		{"busy, wrapped", fmt.Errorf("set engaged: %w", busy), true},
		{"missing table", missing, false},
		{"unique constraint", conflict, false},
		{"cancelled", gone, false},
		{"bad connection", fmt.Errorf("query: %w", driver.ErrBadConn), true},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, true},
		{"not found", ErrNotFound, false},
		{"nil", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil && tt.name != "nil" {
				t.Fatalf("the database gave no error to classify")
			}
			if got := IsTransient(tt.err); got != tt.want {
				t.Errorf("IsTransient(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// On Postgres (the suite's second run): a lock not available, a backend
// terminated under its connection, a missing table.
func TestIsTransientPostgres(t *testing.T) {
	if !onPostgres() {
		t.Skip("needs the Postgres run of the suite")
	}
	s, _ := newTestStore(t)
	ctx := t.Context()
	db := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(s.source)))
	t.Cleanup(func() { db.Close() })
	holder, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	if _, err := holder.ExecContext(ctx, "LOCK TABLE threads IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	other, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, locked := other.ExecContext(ctx, "LOCK TABLE threads IN ACCESS EXCLUSIVE MODE NOWAIT")
	other.Rollback()
	_, missing := db.ExecContext(ctx, "SELECT * FROM no_such_table")

	victim, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()
	var pid int
	if err := victim.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "SELECT pg_terminate_backend($1)", pid); err != nil {
		t.Fatal(err)
	}
	_, terminated := victim.ExecContext(ctx, "SELECT 1")

	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"lock not available", locked, true},
		{"backend terminated", terminated, true},
		{"missing table", missing, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil {
				t.Fatal("the database gave no error to classify")
			}
			if got := IsTransient(tt.err); got != tt.want {
				t.Errorf("IsTransient(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
