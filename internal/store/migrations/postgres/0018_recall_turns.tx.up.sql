-- Postgres: the SQLite migration of the same name. The index names the
-- message a hit is (ts), and each conversation's counts are kept beside
-- it, so that a recall ranks with the conversation's statistics.
ALTER TABLE recall ADD COLUMN ts TEXT NOT NULL DEFAULT '';

CREATE TABLE recall_stats (
	channel_id TEXT   NOT NULL PRIMARY KEY,
	docs       BIGINT NOT NULL,
	words      BIGINT NOT NULL
);
INSERT INTO recall_stats (channel_id, docs, words)
	SELECT channel_id, count(*), sum(array_length(regexp_split_to_array(trim(body), '\s+'), 1))
	FROM recall GROUP BY channel_id;
