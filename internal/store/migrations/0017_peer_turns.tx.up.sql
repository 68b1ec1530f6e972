-- A team of personas (issue 38): the peer-admitted turns of each thread,
-- stored so that replicas and restarts share the bounds. peer_threads
-- holds a thread's count since its last message of a person
-- (since_person) and when its last refusal was logged (told_at: one log
-- line per thread per hour); peer_turns one row per peer-admitted turn
-- (at, milliseconds), the hour's bound counting those of the last hour.
-- Rows older than an hour are deleted as the thread takes a turn.
CREATE TABLE peer_threads (
	thread_key   TEXT    NOT NULL PRIMARY KEY,
	since_person INTEGER NOT NULL DEFAULT 0,
	told_at      INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE peer_turns (
	thread_key TEXT    NOT NULL,
	at         INTEGER NOT NULL
);
CREATE INDEX peer_turns_thread ON peer_turns (thread_key, at);
