-- Acting as the person asking (issue 36): each person's own sign-in to a
-- tool server of mcp.json with "auth": "oauth".
--
-- connections: one row per (person, server). sealed is the token set
-- (access, refresh, expiry, the client it was issued to), AES-GCM sealed
-- with AGENT_SECRET_KEY, bound to the row's person and server; the key is
-- never stored. account is what the person signed in as, shown to them.
CREATE TABLE connections (
	user_id    TEXT    NOT NULL,
	server     TEXT    NOT NULL,
	account    TEXT    NOT NULL,
	sealed     BLOB    NOT NULL,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	PRIMARY KEY (user_id, server)
);

-- connect_states: the pending sign-ins. state_hash is the SHA-256 of the
-- link's state (the state itself is never stored); each is bound to one
-- person and one server, expires, and is used once (used_at). sealed holds
-- the PKCE verifier and, once the sign-in started, the client and the
-- endpoints; channel_id and thread_ts are where the person asked.
CREATE TABLE connect_states (
	state_hash TEXT    NOT NULL PRIMARY KEY,
	user_id    TEXT    NOT NULL,
	server     TEXT    NOT NULL,
	channel_id TEXT    NOT NULL,
	thread_ts  TEXT    NOT NULL,
	sealed     BLOB    NOT NULL,
	expires_at INTEGER NOT NULL,
	used_at    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX connect_states_expires ON connect_states (expires_at);
