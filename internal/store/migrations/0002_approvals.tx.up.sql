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
	requested_at INTEGER NOT NULL
);

CREATE INDEX approvals_requested_at ON approvals (requested_at);

CREATE TABLE approval_events (
	approval_id TEXT    NOT NULL REFERENCES approvals (approval_id),
	seq         INTEGER NOT NULL,
	event       TEXT    NOT NULL CHECK (event IN ('requested', 'approved', 'denied', 'always', 'timed_out', 'expired')),
	actor       TEXT    NOT NULL DEFAULT '',
	at          INTEGER NOT NULL,
	PRIMARY KEY (approval_id, seq)
) WITHOUT ROWID;

-- Tools a thread allowed for the rest of the thread (the card's "always").
CREATE TABLE thread_allows (
	thread_key TEXT    NOT NULL,
	tool       TEXT    NOT NULL,
	allowed_by TEXT    NOT NULL,
	at         INTEGER NOT NULL,
	PRIMARY KEY (thread_key, tool)
) WITHOUT ROWID;
