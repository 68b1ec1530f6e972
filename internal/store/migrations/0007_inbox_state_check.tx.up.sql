-- The inbox's state check as comparisons instead of an IN list: SQLite
-- evaluates an IN list of more than two values through a temporary table
-- built and freed at every write of a state (three or four per event), which
-- cost more than the rest of the write. SQLite cannot change a check in
-- place, so the table is made again, with its rows and indexes (its rows
-- kept aside in a temporary table: no rename, which re-reads the whole
-- schema; nothing refers to the inbox).
CREATE TEMP TABLE inbox_keep AS SELECT event_id, kind, channel_id, thread_ts, user_id, msg_key, event, state, attempts,
	trace_id, error, received_at, updated_at, owner
FROM inbox;

DROP TABLE inbox;

CREATE TABLE inbox (
	event_id    TEXT    NOT NULL PRIMARY KEY,
	kind        TEXT    NOT NULL,
	channel_id  TEXT    NOT NULL DEFAULT '',
	thread_ts   TEXT    NOT NULL DEFAULT '',
	user_id     TEXT    NOT NULL DEFAULT '',
	msg_key     TEXT    NOT NULL DEFAULT '', -- channel:ts of a message: a mention arrives twice
	event       TEXT    NOT NULL CHECK (json_valid(event)),
	state       TEXT    NOT NULL CHECK (state = 'received' OR state = 'running' OR state = 'answering'
		OR state = 'answered' OR state = 'failed' OR state = 'dropped'),
	attempts    INTEGER NOT NULL DEFAULT 0,
	trace_id    TEXT    NOT NULL DEFAULT '',
	error       TEXT    NOT NULL DEFAULT '',
	received_at INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL,
	owner       TEXT    NOT NULL DEFAULT ''
);

INSERT INTO inbox (event_id, kind, channel_id, thread_ts, user_id, msg_key, event, state, attempts,
	trace_id, error, received_at, updated_at, owner)
SELECT event_id, kind, channel_id, thread_ts, user_id, msg_key, event, state, attempts,
	trace_id, error, received_at, updated_at, owner
FROM inbox_keep;

DROP TABLE inbox_keep;

CREATE INDEX inbox_state ON inbox (state, received_at);

CREATE INDEX inbox_msg_key ON inbox (msg_key) WHERE msg_key != '';
