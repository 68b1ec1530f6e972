-- The replica that received an inbox event, or took it over from one that
-- died ('' for a single process): with several replicas on one Postgres,
-- only a dead replica's unfinished events are resumed by another.
ALTER TABLE inbox ADD COLUMN owner TEXT NOT NULL DEFAULT '';
