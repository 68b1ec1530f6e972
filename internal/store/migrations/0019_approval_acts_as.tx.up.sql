-- The tool server whose tool an approval releases acts with the account
-- of the person who asked ("auth": "oauth", issue 36); '' for any other
-- approval. The card names that person as a mention, from this column and
-- requested_by, outside the summary it escapes.
ALTER TABLE approvals ADD COLUMN acts_as TEXT NOT NULL DEFAULT '';
