package store

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"
)

// ErrSchemaNewer is returned (wrapped) by Open when the database records a
// migration this binary does not know: a newer release migrated it, and
// running older code against that schema could corrupt data.
var ErrSchemaNewer = errors.New("database schema is newer than this binary")

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationsTable is bun's default; named here because the hooks write it.
const migrationsTable = "bun_migrations"

// errMigratedElsewhere means another process applied a migration between
// our status read and our transaction; running Migrate again skips it.
var errMigratedElsewhere = errors.New("migration applied by another process")

// migrateAttempts bounds those reruns: each one means a concurrent opener
// made progress, and there are only so many migrations.
const migrateAttempts = 3

func embeddedMigrations() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic("store: embedded migrations: " + err.Error())
	}
	return sub
}

// migrate applies the migrations in fsys that the database lacks.
//
// bun records a migration as applied only after it ran, in a separate
// statement; a crash between the two would make the next start re-run it.
// So the hooks, which run inside each migration's transaction, do the
// bookkeeping there: beforeMigration refuses one already recorded (a
// concurrent opener won), afterMigration records it. bun's own record
// afterwards is an upsert of the same row.
func (s *Store) migrate(ctx context.Context, fsys fs.FS) error {
	ms := migrate.NewMigrations()
	if err := ms.Discover(fsys); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	m := migrate.NewMigrator(s.db, ms,
		migrate.WithTableName(migrationsTable),
		migrate.WithMarkAppliedOnSuccess(true),
		migrate.WithUpsert(true),
		migrate.BeforeMigration(beforeMigration),
		migrate.AfterMigration(afterMigration),
	)
	if err := m.Init(ctx); err != nil {
		return fmt.Errorf("migrate: init: %w", err)
	}
	unknown, err := m.MissingMigrations(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if len(unknown) > 0 {
		known := ms.Sorted()
		return fmt.Errorf("migrate: database has migration %s, newest known is %s: %w",
			unknown[0].Name, known[len(known)-1].Name, ErrSchemaNewer)
	}
	for attempt := 1; ; attempt++ {
		group, err := m.Migrate(ctx)
		if errors.Is(err, errMigratedElsewhere) && attempt < migrateAttempts {
			continue
		}
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if !group.IsZero() {
			s.logger.InfoContext(ctx, "store migrated", "path", s.path, "migrations", group.Migrations.String())
		}
		return nil
	}
}

// beforeMigration runs first inside a migration's transaction. It rejects
// migrations without one (file names must end .tx.up.sql) and those another
// process recorded after we read the status.
func beforeMigration(ctx context.Context, db bun.IConn, mig *migrate.Migration) error {
	if _, ok := db.(bun.Tx); !ok {
		return fmt.Errorf("migration %s: not transactional: name the file %s_%s.tx.up.sql",
			mig.Name, mig.Name, mig.Comment)
	}
	var n int
	err := db.QueryRowContext(ctx, "SELECT count(*) FROM ? WHERE name = ?",
		bun.Ident(migrationsTable), mig.Name).Scan(&n)
	if err != nil {
		return fmt.Errorf("migration %s: status: %w", mig.Name, err)
	}
	if n > 0 {
		return fmt.Errorf("migration %s: %w", mig.Name, errMigratedElsewhere)
	}
	return nil
}

// afterMigration records the migration inside its own transaction.
func afterMigration(ctx context.Context, db bun.IConn, mig *migrate.Migration) error {
	_, err := db.ExecContext(ctx, "INSERT INTO ? (name, group_id) VALUES (?, ?)",
		bun.Ident(migrationsTable), mig.Name, mig.GroupID)
	if err != nil {
		return fmt.Errorf("migration %s: record: %w", mig.Name, err)
	}
	return nil
}
