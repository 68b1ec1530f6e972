-- Postgres: the SQLite migration of the same name, with Postgres's
-- booleans and string formatting.

-- Where a thread's messages the bot has not seen begin: the ts of the
-- message that disengaged it, or of the root of a thread it was called
-- into; '' when it has seen them all (or was never engaged). The turn that
-- engages the bot again reads them back, stores them and clears the mark.
ALTER TABLE threads ADD COLUMN unseen_from TEXT NOT NULL DEFAULT '';

-- A thread disengaged before this column existed was last seen when its
-- row last changed (its disengagement, as a rule): its messages since are
-- the unseen ones. A platform ts is seconds and microseconds.
UPDATE threads SET unseen_from = (updated_at / 1000)::text || '.' || lpad(((updated_at % 1000) * 1000)::text, 6, '0')
	WHERE NOT engaged;
