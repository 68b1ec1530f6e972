-- Postgres: the SQLite migration of the same name, with Postgres types
-- (BIGINT milliseconds, BOOLEAN, BYTEA, a json cast for JSON checks).

-- Approvals: an append-only audit. approvals holds what was asked, once;
-- approval_events every state change (requested, approved, denied, always,
-- timed_out, expired), never updated or deleted. A request's state is its
-- latest event.
CREATE TABLE approvals (
	approval_id  TEXT    NOT NULL PRIMARY KEY,
	thread_key   TEXT    NOT NULL,
	channel_id   TEXT    NOT NULL,
	thread_ts    TEXT    NOT NULL DEFAULT '',
	card_ts      TEXT    NOT NULL DEFAULT '',
	category     TEXT    NOT NULL,
	tool         TEXT    NOT NULL DEFAULT '',
	summary      TEXT    NOT NULL DEFAULT '',
	digest       TEXT    NOT NULL DEFAULT '',
	requested_by TEXT    NOT NULL DEFAULT '',
	requested_at BIGINT  NOT NULL
);

CREATE INDEX approvals_requested_at ON approvals (requested_at);

CREATE TABLE approval_events (
	approval_id TEXT    NOT NULL REFERENCES approvals (approval_id),
	seq         BIGINT  NOT NULL,
	event       TEXT    NOT NULL CHECK (event IN ('requested', 'approved', 'denied', 'always', 'timed_out', 'expired')),
	actor       TEXT    NOT NULL DEFAULT '',
	at          BIGINT  NOT NULL,
	PRIMARY KEY (approval_id, seq)
);

-- Tools a thread allowed for the rest of the thread (the card's "always").
CREATE TABLE thread_allows (
	thread_key TEXT    NOT NULL,
	tool       TEXT    NOT NULL,
	allowed_by TEXT    NOT NULL,
	at         BIGINT  NOT NULL,
	PRIMARY KEY (thread_key, tool)
);
