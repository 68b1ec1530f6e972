-- Feedback on the bot's final replies: one vote per person per reply (a
-- second click replaces the first). value is 'good' or 'bad'.
CREATE TABLE feedback (
	channel_id TEXT    NOT NULL,
	message_ts TEXT    NOT NULL,
	user_id    TEXT    NOT NULL,
	thread_ts  TEXT    NOT NULL DEFAULT '',
	value      TEXT    NOT NULL CHECK (value IN ('good', 'bad')),
	created_at INTEGER NOT NULL,
	PRIMARY KEY (channel_id, message_ts, user_id)
);

CREATE INDEX feedback_created ON feedback (created_at);
