package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/uptrace/bun/driver/pgdriver"
)

// sqliteLocked is SQLite's primary result code SQLITE_LOCKED: a table
// locked by another statement of the same connection or shared cache.
const sqliteLocked = 6

// IsTransient reports whether err is a failure of the database that may
// pass if the same call is made again a moment later, as opposed to one
// that will fail again (a missing table, a constraint, a bug):
//
//   - SQLite: SQLITE_BUSY or SQLITE_LOCKED (and their extended codes),
//     another writer holding the lock past busy_timeout;
//   - Postgres: a connection exception (SQLSTATE class 08), a
//     serialization failure (40001), a deadlock (40P01), a lock not
//     available (55P03), too many connections (53300), the server shutting
//     down or starting (57P01, 57P02, 57P03);
//   - a connection lost under the driver (driver.ErrBadConn,
//     sql.ErrConnDone, an unexpected end of the stream, a network error).
//
// The end of the caller's context is never transient: the caller gave up.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		switch coded.Code() & 0xff {
		case sqliteBusy, sqliteLocked:
			return true
		}
		return false
	}
	var pe pgdriver.Error
	if errors.As(err, &pe) {
		code := pe.Field('C')
		switch {
		case strings.HasPrefix(code, "08"):
			return true
		}
		switch code {
		case "40001", "40P01", "55P03", "53300", "57P01", "57P02", "57P03":
			return true
		}
		return false
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}
