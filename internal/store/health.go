package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Ping checks that the database answers a query: the readiness probe. It
// fails once the Store is closed, and when ctx ends before a connection
// frees up.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("ping store: %w", err)
	}
	return nil
}

// CheckWritable checks that this process may write the database file, its
// -wal and -shm files when they exist, and its directory (where SQLite
// creates and removes them): the liveness probe. It makes only access(2)
// calls, so it is cheap enough for every /healthz, and it names the path
// that failed. It does not touch the database, so it works after Close.
//
// access(2) answers for the process's real user. For root it ignores
// permission bits and fails only for a missing path or a read-only
// filesystem.
//
// On Postgres there is no file: it passes, and Ping (readiness) tells
// whether the database answers; a database outage must not make the
// orchestrator restart every replica.
func (s *Store) CheckWritable(_ context.Context) error {
	if s.pg {
		return nil
	}
	return checkWritable(s.path)
}

func checkWritable(path string) error {
	if err := unix.Access(path, unix.W_OK); err != nil {
		return fmt.Errorf("check writable: database file %s: %w", path, err)
	}
	for _, side := range []string{path + "-wal", path + "-shm"} {
		err := unix.Access(side, unix.W_OK)
		if err != nil && !errors.Is(err, unix.ENOENT) { // SQLite creates them on demand
			return fmt.Errorf("check writable: database file %s: %w", side, err)
		}
	}
	dir := filepath.Dir(path)
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return fmt.Errorf("check writable: database directory %s: %w", dir, err)
	}
	return nil
}
