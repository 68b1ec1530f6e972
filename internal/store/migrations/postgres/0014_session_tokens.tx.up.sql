-- Postgres: the SQLite migration of the same name. model_usage is the
-- only record of tokens; the session's counters go, nothing copied (every
-- call they count has its row since 0011).
ALTER TABLE sessions
	DROP COLUMN input_tokens,
	DROP COLUMN output_tokens,
	DROP COLUMN cache_read_tokens,
	DROP COLUMN cache_write_tokens;
