-- Recall that finds it (issue 39). The index names the message a hit is
-- (ts, its permalink with the channel), and each conversation's counts
-- are kept beside it, so that a recall ranks with the statistics of the
-- conversation it searches, not of the whole index.
--
-- An FTS5 table takes no new column: it is made again with ts, its rows
-- copied with their rowids (memories.doc names them). Rows stored before
-- have no ts ('').
CREATE VIRTUAL TABLE recall_new USING fts5(
	body,
	chan,
	kind UNINDEXED,
	ref UNINDEXED,
	channel UNINDEXED,
	thread_ts UNINDEXED,
	author UNINDEXED,
	created_at UNINDEXED,
	ts UNINDEXED,         -- the message's own ts; '' for a memory
	tokenize = 'porter unicode61'
);
INSERT INTO recall_new (rowid, body, chan, kind, ref, channel, thread_ts, author, created_at, ts)
	SELECT rowid, body, chan, kind, ref, channel, thread_ts, author, created_at, '' FROM recall;
DROP TABLE recall;
ALTER TABLE recall_new RENAME TO recall;

-- recall_stats: per conversation (channel_id; '' holds nothing but
-- persona-wide memories made outside one), how many rows of the index it
-- has and their words, written with the rows.
CREATE TABLE recall_stats (
	channel_id TEXT    NOT NULL PRIMARY KEY,
	docs       INTEGER NOT NULL,
	words      INTEGER NOT NULL
);
INSERT INTO recall_stats (channel_id, docs, words)
	SELECT channel, count(*), sum(length(trim(body)) - length(replace(trim(body), ' ', '')) + 1)
	FROM recall GROUP BY channel;
