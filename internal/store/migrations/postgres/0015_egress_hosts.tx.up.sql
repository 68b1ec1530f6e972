-- Postgres: the SQLite migration of the same name. The hosts an approval
-- card of category network allowed in a thread, for the rest of its life.
CREATE TABLE egress_hosts (
	thread_key  TEXT   NOT NULL,
	host        TEXT   NOT NULL,
	approval_id TEXT   NOT NULL,
	at          BIGINT NOT NULL,
	PRIMARY KEY (thread_key, host)
);
