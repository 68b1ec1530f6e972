-- Postgres: the SQLite migration of the same name, with Postgres types and
-- full-text search (a generated tsvector with a GIN index) in place of FTS5.

-- recall is the full-text index over what may be recalled: the memories
-- people asked to keep and the words of the stored messages of every
-- thread, written by the same transactions that write a memory or a
-- message. scope is 'persona' for a persona-wide memory (recalled
-- everywhere), else 'conversation' (recalled only in channel_id).
CREATE TABLE recall (
	id         BIGSERIAL NOT NULL PRIMARY KEY,
	kind       TEXT      NOT NULL CHECK (kind = 'memory' OR kind = 'message'),
	ref        TEXT      NOT NULL,
	channel_id TEXT      NOT NULL,
	thread_ts  TEXT      NOT NULL DEFAULT '',
	author     TEXT      NOT NULL DEFAULT '',
	scope      TEXT      NOT NULL CHECK (scope = 'conversation' OR scope = 'persona'),
	body       TEXT      NOT NULL,
	created_at BIGINT    NOT NULL,
	tsv        tsvector  GENERATED ALWAYS AS (to_tsvector('english', body)) STORED
);

CREATE INDEX recall_tsv ON recall USING GIN (tsv);
CREATE INDEX recall_ref ON recall (ref);

CREATE TABLE memories (
	id         TEXT    NOT NULL PRIMARY KEY,
	text       TEXT    NOT NULL CHECK (length(text) <= 2000),
	author     TEXT    NOT NULL,
	channel_id TEXT    NOT NULL,
	thread_ts  TEXT    NOT NULL DEFAULT '',
	scope      TEXT    NOT NULL CHECK (scope = 'conversation' OR scope = 'persona'),
	created_at BIGINT  NOT NULL,
	doc        BIGINT  NOT NULL
);

CREATE INDEX memories_channel ON memories (channel_id, created_at);
CREATE INDEX memories_scope ON memories (scope, created_at);
