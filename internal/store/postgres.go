package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/persona-runtime/agent/pkg/secret"
)

// Postgres is the store's second backend, selected by a postgres:// address
// (AGENT_DB_URL): the state of a persona whose replicas run on several
// machines. The schema is the same (migrations/postgres holds the versions
// whose SQL must differ); what SQLite gets from its single writer,
// Postgres gets from advisory locks:
//
//   - migrations run under a session lock, so that processes starting
//     together migrate once;
//   - every write transaction takes a transaction lock first, so that
//     read-then-write transactions (the next seq of a history, an approval's
//     next event) run one at a time across processes, as BEGIN IMMEDIATE
//     makes them run on SQLite. They are short; single statements need none.
const (
	// pgMaxOpenConns caps the pool: a persona's turns (AGENT_MAX_TURNS, 8 by
	// default) each hold a connection for a statement at a time.
	pgMaxOpenConns = 8
	// pgConnectTimeout bounds the first connection at Open.
	pgConnectTimeout = 10 * time.Second
)

// Advisory lock keys: arbitrary, fixed, the same in every process of
// every persona sharing a database.
const (
	pgLockMigrate = 0x6167656e74_01 // "agent" 01
	pgLockWriter  = 0x6167656e74_02
)

// IsPostgres reports whether dsn names a Postgres database rather than a
// SQLite file.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// Redact returns dsn without its password, for logs and errors; also a
// dsn that does not parse (secret.MaskURL).
func Redact(dsn string) string {
	if !IsPostgres(dsn) {
		return dsn
	}
	return secret.MaskURL(dsn)
}

// Reachable connects to the Postgres database at dsn and pings it, changing
// nothing (agent doctor).
func Reachable(ctx context.Context, dsn string) error {
	c, err := connector(dsn, "agent doctor")
	if err != nil {
		return err
	}
	db := sql.OpenDB(c)
	defer db.Close()
	return db.PingContext(ctx)
}

// connector is the driver's connector for dsn, or why there is none. The
// driver panics on an address it cannot parse, with url.Parse's error,
// which quotes the whole address: the address is checked first, and a
// panic of the driver's (a bad sslmode, an unreadable sslrootcert) becomes
// an error with the password taken out.
func connector(dsn, app string) (c *pgdriver.Connector, err error) {
	if err := secret.CheckURL(dsn); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			text := fmt.Sprint(r)
			for _, p := range secret.URLPasswords(dsn) {
				text = strings.ReplaceAll(text, p, secret.Mask)
			}
			c, err = nil, errors.New(strings.ReplaceAll(text, dsn, Redact(dsn)))
		}
	}()
	return pgdriver.NewConnector(pgdriver.WithDSN(dsn), pgdriver.WithApplicationName(app),
		pgdriver.WithDialTimeout(pgConnectTimeout)), nil
}

// openPostgres is Open for a postgres:// address.
func openPostgres(ctx context.Context, dsn string, opts Options, migrations fs.FS) (*Store, error) {
	name := Redact(dsn)
	if err := secret.CheckURL(dsn); err != nil {
		return nil, fmt.Errorf("open store %s: %w", name, err)
	}
	if u, _ := url.Parse(dsn); u.Path == "" || u.Path == "/" {
		return nil, fmt.Errorf("open store %s: the address names no database (postgres://user:password@host:port/database)", name)
	}
	conn, err := connector(dsn, "agent")
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", name, err)
	}
	sqldb := sql.OpenDB(conn)
	sqldb.SetMaxOpenConns(pgMaxOpenConns)
	sqldb.SetMaxIdleConns(pgMaxOpenConns)
	sqldb.SetConnMaxIdleTime(5 * time.Minute)
	s := &Store{
		db:     bun.NewDB(sqldb, pgdialect.New()),
		path:   name,
		source: dsn,
		pg:     true,
		clock:  opts.Clock,
		logger: opts.Logger,
		writer: make(chan struct{}, 1),
	}
	s.defaults()
	pctx, cancel := context.WithTimeout(ctx, pgConnectTimeout)
	err = sqldb.PingContext(pctx)
	cancel()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open store %s: %w", name, err), s.db.Close())
	}
	embedded := migrations == nil
	if embedded {
		migrations = embeddedMigrations()
	}
	if err := s.migrate(ctx, migrations); err != nil {
		return nil, errors.Join(fmt.Errorf("open store %s: %w", name, err), s.db.Close())
	}
	if embedded {
		if err := s.prepareHot(ctx); err != nil {
			return nil, errors.Join(fmt.Errorf("open store %s: %w", name, err), s.db.Close())
		}
	}
	return s, nil
}

// lockMigrations takes the session lock that serialises migrations across
// processes, on a connection of its own; unlock releases both.
func (s *Store) lockMigrations(ctx context.Context) (unlock func(), err error) {
	conn, err := s.db.DB.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", int64(pgLockMigrate)); err != nil {
		return nil, errors.Join(fmt.Errorf("lock: %w", err), conn.Close())
	}
	return func() {
		// A failed unlock ends with the connection: closing it (Raw
		// discards it from the pool) drops the session and its locks.
		_, err := conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(pgLockMigrate))
		if err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		_ = conn.Close()
	}, nil
}

// rebind turns the ? placeholders of a query written for SQLite into
// Postgres's $1, $2, … (the queries here hold no literal question marks).
func rebind(query string) string {
	n := strings.Count(query, "?")
	if n == 0 {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 2*n)
	i := 0
	for _, r := range query {
		if r == '?' {
			i++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(i))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
