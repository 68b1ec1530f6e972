-- Postgres: the SQLite migration of the same name, with BIGINT
-- milliseconds.

-- Mute (/ignore, /ignore-thread): one row per muted person (kind 'user',
-- target their user id) or thread (kind 'thread', target its thread key;
-- a channel's key for the slash form). expires_at is when the mute ends
-- (milliseconds; 0: until lifted). An expired row is read as absent and
-- replaced by the next mute of the same target.
CREATE TABLE ignores (
	kind       TEXT   NOT NULL CHECK (kind = 'user' OR kind = 'thread'),
	target     TEXT   NOT NULL,
	created_by TEXT   NOT NULL,
	expires_at BIGINT NOT NULL DEFAULT 0,
	created_at BIGINT NOT NULL,
	PRIMARY KEY (kind, target)
);

-- The model a thread's requests use (/model); '' means the service's
-- AGENT_MODEL.
ALTER TABLE threads ADD COLUMN model TEXT NOT NULL DEFAULT '';
