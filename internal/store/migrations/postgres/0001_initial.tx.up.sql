-- Postgres: the SQLite migration of the same name, with Postgres types
-- (BIGINT milliseconds, BOOLEAN, BYTEA, a json cast for JSON checks).

-- Initial schema. Timestamps are BIGINT Unix milliseconds (UTC): they compare
-- and sort numerically, whatever time zone the writer ran in.

-- Redelivered chat events are dropped by key; rows are pruned by age.
CREATE TABLE processed_events (
	event_key TEXT    NOT NULL PRIMARY KEY,
	seen_at   BIGINT  NOT NULL
);

CREATE INDEX processed_events_seen_at ON processed_events (seen_at);

-- Per-thread engagement, permission mode ('' = service default) and 1:1 lock
-- holder ('' = unlocked).
CREATE TABLE threads (
	thread_key TEXT    NOT NULL PRIMARY KEY,
	channel_id TEXT    NOT NULL DEFAULT '',
	root_ts    TEXT    NOT NULL DEFAULT '',
	engaged    BOOLEAN NOT NULL DEFAULT false,
	mode       TEXT    NOT NULL DEFAULT '',
	locked_by  TEXT    NOT NULL DEFAULT '',
	updated_at BIGINT  NOT NULL
);

-- One agent session per thread, ever; closed sessions are resumed, not replaced.
-- No foreign key to threads: DM threads are engaged without a threads row.
CREATE TABLE sessions (
	session_id         TEXT    NOT NULL PRIMARY KEY,
	thread_key         TEXT    NOT NULL UNIQUE,
	state              TEXT    NOT NULL CHECK (state IN ('live', 'closed')),
	created_at         BIGINT  NOT NULL,
	last_activity      BIGINT  NOT NULL,
	summary            TEXT    NOT NULL DEFAULT '',
	input_tokens       BIGINT  NOT NULL DEFAULT 0,
	output_tokens      BIGINT  NOT NULL DEFAULT 0,
	cache_read_tokens  BIGINT  NOT NULL DEFAULT 0,
	cache_write_tokens BIGINT  NOT NULL DEFAULT 0
);

-- A session's conversation as model messages; content is the JSON array of
-- content blocks. The primary key's index makes (session_id, seq) unique and
-- serves both History's ordered scan and AppendMessages' max(seq) lookup.
CREATE TABLE messages (
	session_id TEXT    NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
	seq        BIGINT  NOT NULL CHECK (seq > 0),
	role       TEXT    NOT NULL CHECK (role IN ('user', 'assistant')),
	content    TEXT    NOT NULL CHECK (content::json IS NOT NULL),
	created_at BIGINT  NOT NULL,
	PRIMARY KEY (session_id, seq)
);

-- Opaque persona data cached by the persona package under its own keys;
-- a cache, so losing it only costs a rebuild.
CREATE TABLE persona_cache (
	cache_key  TEXT    NOT NULL PRIMARY KEY,
	data       BYTEA   NOT NULL,
	updated_at BIGINT  NOT NULL
);
