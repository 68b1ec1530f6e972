package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
)

// ErrSchemaNewer is returned (wrapped) by Open when the database records a
// migration this binary does not know: a newer release migrated it, and
// running older code against that schema could corrupt data.
var ErrSchemaNewer = errors.New("database schema is newer than this binary")

//go:embed migrations/*.sql migrations/postgres/*.sql
var migrationFiles embed.FS

// migrationsTable records applied migrations, one row each. It keeps the
// name and columns bun's migrator used, so databases it migrated open
// unchanged.
const migrationsTable = "bun_migrations"

// migrationSuffix names a migration that runs in one transaction, which
// every migration must: a half-applied one could not be told from a whole.
const migrationSuffix = ".tx.up.sql"

func embeddedMigrations() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic("store: embedded migrations: " + err.Error())
	}
	return sub
}

// migration is one versioned file: NNNN_comment.tx.up.sql.
type migration struct {
	name    string // the version, "0001"
	comment string
	file    string // 0001_initial.tx.up.sql
	sql     string
}

// readMigrations lists the migrations in fsys, oldest first.
func readMigrations(fsys fs.FS) ([]migration, error) {
	files, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, f := range files {
		name, comment, _ := strings.Cut(strings.TrimSuffix(path.Base(f), ".sql"), "_")
		if !strings.HasSuffix(f, migrationSuffix) {
			comment, _, _ = strings.Cut(comment, ".")
			return nil, fmt.Errorf("migration %s: not transactional: name the file %s_%s%s", f, name, comment, migrationSuffix)
		}
		if name == "" || strings.Trim(name, "0123456789") != "" {
			return nil, fmt.Errorf("migration %s: want NNNN_comment%s", f, migrationSuffix)
		}
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{name: name, comment: strings.TrimSuffix(comment, ".tx.up"), file: path.Base(f), sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].name < ms[j].name })
	for i := 1; i < len(ms); i++ {
		if ms[i].name == ms[i-1].name {
			return nil, fmt.Errorf("migration %s: two files with this version", ms[i].name)
		}
	}
	return ms, nil
}

// dialectMigrations replaces the SQL of the migrations that dir (postgres)
// holds a file of the same name for: the versions are the shared set's,
// and a dialect file without a shared twin is an error.
func dialectMigrations(fsys fs.FS, ms []migration, dir string) ([]migration, error) {
	files, err := fs.Glob(fsys, dir+"/*.sql")
	if err != nil {
		return nil, err
	}
	byFile := map[string]int{}
	for i, m := range ms {
		byFile[m.file] = i
	}
	out := slices.Clone(ms)
	for _, f := range files {
		i, ok := byFile[path.Base(f)]
		if !ok {
			return nil, fmt.Errorf("migration %s: no %s beside it in the shared set", f, path.Base(f))
		}
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		out[i].sql = string(b)
	}
	return out, nil
}

// migrate applies the migrations in fsys that the database lacks, each in
// its own transaction together with its record, so a crash leaves a
// migration either wholly applied and recorded or not at all. Openers
// racing on a fresh database serialise on the transaction's write lock
// (BEGIN IMMEDIATE) on SQLite, on an advisory lock held for the whole run
// on Postgres; the loser finds the records and skips.
func (s *Store) migrate(ctx context.Context, fsys fs.FS) error {
	ms, err := readMigrations(fsys)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if len(ms) == 0 {
		return nil
	}
	db := s.db.DB
	idColumn := "id INTEGER NOT NULL PRIMARY KEY"
	if s.pg {
		unlock, err := s.lockMigrations(ctx)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		defer unlock()
		idColumn = "id BIGSERIAL NOT NULL PRIMARY KEY"
		if ms, err = dialectMigrations(fsys, ms, "postgres"); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+migrationsTable+` (
	`+idColumn+`,
	name VARCHAR,
	group_id INTEGER,
	migrated_at TIMESTAMP NOT NULL DEFAULT current_timestamp
)`); err != nil {
		return fmt.Errorf("migrate: create %s: %w", migrationsTable, err)
	}
	applied, group, err := readApplied(ctx, db)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	newest := ms[len(ms)-1].name
	for name := range applied {
		if name > newest {
			return fmt.Errorf("migrate: database has migration %s, newest known is %s: %w", name, newest, ErrSchemaNewer)
		}
	}
	var done []string
	for _, m := range ms {
		if applied[m.name] {
			continue
		}
		ran, err := s.applyMigration(ctx, db, m, group+1)
		if err != nil {
			return fmt.Errorf("migrate: %s_%s: %w", m.name, m.comment, err)
		}
		if ran {
			done = append(done, m.name+"_"+m.comment)
		}
	}
	if len(done) > 0 {
		s.logger.InfoContext(ctx, "store migrated", "path", s.path, "migrations", strings.Join(done, ", "))
	}
	return nil
}

// readApplied reads the recorded versions and the last group id.
func readApplied(ctx context.Context, db *sql.DB) (map[string]bool, int64, error) {
	rows, err := db.QueryContext(ctx, "SELECT name, coalesce(group_id, 0) FROM "+migrationsTable)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	applied := map[string]bool{}
	var group int64
	for rows.Next() {
		var name string
		var g int64
		if err := rows.Scan(&name, &g); err != nil {
			return nil, 0, err
		}
		applied[name] = true
		group = max(group, g)
	}
	return applied, group, rows.Err()
}

// applyMigration runs m and records it in one transaction, unless another
// process recorded it first (then ran is false).
func (s *Store) applyMigration(ctx context.Context, db *sql.DB, m migration, group int64) (ran bool, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer func() {
		if !ran || err != nil {
			err = errors.Join(err, ignoreDone(tx.Rollback()))
		}
	}()
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM "+migrationsTable+" WHERE name = $1", m.name).Scan(&n); err != nil {
		return false, fmt.Errorf("status: %w", err)
	}
	if n > 0 {
		return false, nil
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO "+migrationsTable+" (name, group_id) VALUES ($1, $2)", m.name, group); err != nil {
		return false, fmt.Errorf("record: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return false, err
	}
	return true, nil
}

func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}
