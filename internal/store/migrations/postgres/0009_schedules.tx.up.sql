-- Postgres: the SQLite migration of the same name, with Postgres types
-- (BIGINT milliseconds, BOOLEAN, BYTEA, a json cast for JSON checks).

-- Scheduled work (issue 26): one row per schedule a person made. when_expr
-- is the `when` as given (a cron expression, a descriptor, in <duration>,
-- an RFC 3339 time), read in tz; created_at is the origin of `in` and of
-- @every's runs. next_run_at is the next due time: a run is claimed by
-- moving it on in one conditional update (only if still equal to what was
-- read), so two replicas never both run a due time; a one-off that came
-- is deleted. last_run_at is the due time of the last run (0: none);
-- missed counts the due times skipped (down too long, or superseded).
CREATE TABLE schedules (
	id          TEXT    NOT NULL PRIMARY KEY,
	creator     TEXT    NOT NULL,
	channel_id  TEXT    NOT NULL,
	thread_ts   TEXT    NOT NULL DEFAULT '',
	target      TEXT    NOT NULL CHECK (target = 'thread' OR target = 'channel'),
	when_expr   TEXT    NOT NULL,
	tz          TEXT    NOT NULL,
	prompt      TEXT    NOT NULL,
	name        TEXT    NOT NULL DEFAULT '',
	next_run_at BIGINT  NOT NULL,
	last_run_at BIGINT  NOT NULL DEFAULT 0,
	missed      BIGINT  NOT NULL DEFAULT 0,
	paused      BOOLEAN NOT NULL DEFAULT false,
	created_at  BIGINT  NOT NULL
);

-- The timer's read: the earliest due time of the schedules running.
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE NOT paused;

CREATE INDEX schedules_creator ON schedules (creator);
