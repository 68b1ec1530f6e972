-- Memory across threads (issue 27). recall is the full-text index over what
-- may be recalled: the memories people asked to keep and the words of the
-- stored messages of every thread. It is written by the same transactions
-- that write a memory or a message (the store's write path), and a
-- forgotten memory's row goes with it.
--
-- chan is the visibility key, searched in the same MATCH as the words: a
-- conversation's rows carry its channel's key, persona-wide memories the
-- key 'persona', so a query sees only its own conversation and the
-- persona's, by construction. The other columns are carried, not searched.
CREATE VIRTUAL TABLE recall USING fts5(
	body,
	chan,
	kind UNINDEXED,       -- 'memory' or 'message'
	ref UNINDEXED,        -- the memory's id, or the message's session id
	channel UNINDEXED,
	thread_ts UNINDEXED,
	author UNINDEXED,
	created_at UNINDEXED, -- Unix milliseconds
	tokenize = 'porter unicode61'
);

-- A memory: short text (at most 2000 characters) with who said it, where
-- (the conversation and the thread) and whether it is recalled only there
-- or everywhere. doc is its row in recall.
CREATE TABLE memories (
	id         TEXT    NOT NULL PRIMARY KEY,
	text       TEXT    NOT NULL CHECK (length(text) <= 2000),
	author     TEXT    NOT NULL,
	channel_id TEXT    NOT NULL,
	thread_ts  TEXT    NOT NULL DEFAULT '',
	scope      TEXT    NOT NULL CHECK (scope = 'conversation' OR scope = 'persona'),
	created_at INTEGER NOT NULL,
	doc        INTEGER NOT NULL
);

CREATE INDEX memories_channel ON memories (channel_id, created_at);
CREATE INDEX memories_scope ON memories (scope, created_at);
