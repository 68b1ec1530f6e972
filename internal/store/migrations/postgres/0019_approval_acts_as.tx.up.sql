-- Postgres: the SQLite migration of the same name. The tool server whose
-- tool an approval releases acts with the account of the person who asked;
-- '' for any other approval.
ALTER TABLE approvals ADD COLUMN acts_as TEXT NOT NULL DEFAULT '';
