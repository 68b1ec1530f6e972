-- Postgres: the SQLite migration of the same name, with Postgres types
-- (BIGINT milliseconds, BOOLEAN, BYTEA, a json cast for JSON checks).

-- /ingest runs: one row per run. A running row is the per-label mutex: the
-- partial unique index admits at most one per label, whoever writes the table.
-- A run proves it is alive by moving heartbeat_at; one whose heartbeat is too
-- old (the process died) is expired by the next acquirer. finished_at is 0
-- while running.
CREATE TABLE kb_ingest_jobs (
	job_id       TEXT    NOT NULL PRIMARY KEY,
	label        TEXT    NOT NULL,
	triggered_by TEXT    NOT NULL DEFAULT '',
	status       TEXT    NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'expired')),
	reason       TEXT    NOT NULL DEFAULT '',
	started_at   BIGINT  NOT NULL,
	heartbeat_at BIGINT  NOT NULL,
	finished_at  BIGINT  NOT NULL DEFAULT 0
);

CREATE UNIQUE INDEX kb_ingest_jobs_one_running ON kb_ingest_jobs (label) WHERE status = 'running';

CREATE INDEX kb_ingest_jobs_started_at ON kb_ingest_jobs (started_at);
