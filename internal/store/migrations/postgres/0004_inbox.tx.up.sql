-- Postgres: the SQLite migration of the same name, with Postgres types
-- (BIGINT milliseconds, BOOLEAN, BYTEA, a json cast for JSON checks).

-- The durable inbox: every message or command that may reach the agent is
-- recorded before its envelope is acknowledged, and moves received ->
-- running -> (answering, just before its first post) -> answered | failed |
-- dropped. A row left received or running by a crash is resumed (or, past
-- two attempts, failed) at the next start; one left answering is told that
-- its answer may not have gone out.
-- event is the pipeline event as JSON, enough to run it again.
CREATE TABLE inbox (
	event_id    TEXT    NOT NULL PRIMARY KEY,
	kind        TEXT    NOT NULL,
	channel_id  TEXT    NOT NULL DEFAULT '',
	thread_ts   TEXT    NOT NULL DEFAULT '',
	user_id     TEXT    NOT NULL DEFAULT '',
	msg_key     TEXT    NOT NULL DEFAULT '', -- channel:ts of a message: a mention arrives twice
	event       TEXT    NOT NULL CHECK (event::json IS NOT NULL),
	state       TEXT    NOT NULL CHECK (state IN ('received', 'running', 'answering', 'answered', 'failed', 'dropped')),
	attempts    BIGINT  NOT NULL DEFAULT 0,
	trace_id    TEXT    NOT NULL DEFAULT '',
	error       TEXT    NOT NULL DEFAULT '',
	received_at BIGINT  NOT NULL,
	updated_at  BIGINT  NOT NULL
);

CREATE INDEX inbox_state ON inbox (state, received_at);

CREATE INDEX inbox_msg_key ON inbox (msg_key) WHERE msg_key != '';

-- The event a user message of the history answers, so that a resumed turn
-- does not store the same message twice ('' for every other message).
ALTER TABLE messages ADD COLUMN event_id TEXT NOT NULL DEFAULT '';
