-- Postgres: the SQLite migration of the same name, with Postgres types
-- (BIGINT milliseconds, BOOLEAN, BYTEA, a json cast for JSON checks).

-- Feedback on the bot's final replies: one vote per person per reply (a
-- second click replaces the first). value is 'good' or 'bad'.
CREATE TABLE feedback (
	channel_id TEXT    NOT NULL,
	message_ts TEXT    NOT NULL,
	user_id    TEXT    NOT NULL,
	thread_ts  TEXT    NOT NULL DEFAULT '',
	value      TEXT    NOT NULL CHECK (value IN ('good', 'bad')),
	created_at BIGINT  NOT NULL,
	PRIMARY KEY (channel_id, message_ts, user_id)
);

CREATE INDEX feedback_created ON feedback (created_at);
