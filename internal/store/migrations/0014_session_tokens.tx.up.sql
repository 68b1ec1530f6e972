-- One usage ledger (issue 34): model_usage, one row per model call since
-- 0011, is the only record of tokens; the session's counters, which
-- repeated its sums per session and which nothing but tests read, go.
-- Nothing is copied: every call the counters count since 0011 has its row
-- already, and a row made from a counter would count it twice.
--
-- DROP COLUMN, not the table made again as 0007 does: messages refer to
-- sessions with ON DELETE CASCADE, and dropping the table would delete
-- them (foreign keys are on, and cannot be turned off inside the
-- migration's transaction). The columns are in no index, key or check,
-- which DROP COLUMN requires.
ALTER TABLE sessions DROP COLUMN input_tokens;
ALTER TABLE sessions DROP COLUMN output_tokens;
ALTER TABLE sessions DROP COLUMN cache_read_tokens;
ALTER TABLE sessions DROP COLUMN cache_write_tokens;
