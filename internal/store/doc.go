// Package store is the runtime's database: one SQLite file (by default
// db.sqlite under AGENT_HOME), or Postgres (AGENT_DB_URL) so that replicas
// share it, holding what must survive a restart — the durable inbox and the
// processed event keys (inbox.go, events.go), thread engagement, modes and
// /1on1 locks (threads.go), one agent session per thread with its history
// (sessions.go, history.go), every model call's tokens (usage.go:
// model_usage, the one record of tokens), approvals and their audit
// (approvals.go), the schedules of scheduled work (schedules.go, serving
// internal/schedule's Store), feedback votes, ingest jobs, the persona cache, and, with
// Postgres, the fleet's replica records and locks (fleet.go). It serves the
// small interfaces of pkg/pipeline and pkg/session directly (serve.go).
//
// # Concurrency
//
// The database runs in WAL mode, so other processes' readers (the CLI's
// commands) never block its writer, but SQLite admits one writer at a
// time. In this process a SQLite store is one connection (maxOpenConns
// says why; its background checkpoints take one of their own), so its
// statements run one after the other. Store funnels its own writes
// through a single in-process writer slot, and every transaction
// begins IMMEDIATE (it takes the write lock at BEGIN, so it can never fail
// half-way through trying to upgrade a read lock). busy_timeout (5 s) only
// matters against writers outside that slot: another process, or code
// writing through [Store.DB]. All Store methods are safe for concurrent use.
//
// # Schema
//
// The schema is versioned by migrate.go (bun's migrate package rendered SQL
// through text/template, which alone made the binary 17 MB larger; its
// bun_migrations table is kept, so databases it migrated open unchanged).
// Migrations are SQL files embedded from migrations/, named
// NNNN_name.tx.up.sql; [Open] applies the missing ones, each in one
// transaction that also records it as applied,
// so a failed or interrupted migration leaves nothing behind. There are no
// down migrations: roll back by restoring a copy of the file. A database
// migrated by a newer binary is refused with [ErrSchemaNewer].
//
// [InMemory] opens a private in-memory database instead (the simulator's,
// one per scenario), copied from a template made once per process: the
// pre-migrated image in template/ (made by `go generate ./internal/store`
// after a migration is added; a test fails until then, and meanwhile the
// template is migrated at start as before).
// The statements of the event path are prepared once per connection.
//
// Timestamps are stored as Unix milliseconds and returned in UTC; "now" comes
// from [Options.Clock] (the service's clock: the simulator's moves only at
// its advance steps), so tests control the clock. Rows stamped at one
// instant keep a stable order: every listing sorted by time breaks ties
// by id or sequence.
//
// # Errors
//
// Lookups of a missing row return an error matching [ErrNotFound]; creating
// a row that must be unique returns one matching [ErrConflict]. Everything
// else is wrapped with the failed operation.
package store
