-- Budgets and usage (issue 28). model_usage has one row per model call of
-- a turn: its thread, channel, person and model, the four token kinds of
-- the provider's answer, and when (unix milliseconds). Budgets sum it by
-- thread, by channel since midnight and for the persona since midnight;
-- `agent usage` sums it by channel, thread or person.
CREATE TABLE model_usage (
	at          INTEGER NOT NULL,
	thread_key  TEXT    NOT NULL,
	channel_id  TEXT    NOT NULL,
	user_id     TEXT    NOT NULL DEFAULT '',
	model       TEXT    NOT NULL,
	input       INTEGER NOT NULL,
	output      INTEGER NOT NULL,
	cache_read  INTEGER NOT NULL,
	cache_write INTEGER NOT NULL
);

CREATE INDEX model_usage_at ON model_usage (at);
CREATE INDEX model_usage_thread ON model_usage (thread_key, at);
CREATE INDEX model_usage_channel ON model_usage (channel_id, at);

-- The 80 % notice is given once per thread and day (day: YYYY-MM-DD in
-- the budgets' zone).
CREATE TABLE budget_notices (
	thread_key TEXT    NOT NULL,
	day        TEXT    NOT NULL,
	at         INTEGER NOT NULL,
	PRIMARY KEY (thread_key, day)
);

-- A thread's budget raised from the refusal's card: budget is thread,
-- channel or persona; day is '' for the thread budget (it has no day),
-- else the day the raise is for.
CREATE TABLE budget_raises (
	thread_key TEXT    NOT NULL,
	budget     TEXT    NOT NULL,
	day        TEXT    NOT NULL,
	tokens     INTEGER NOT NULL,
	by_user    TEXT    NOT NULL,
	at         INTEGER NOT NULL
);

CREATE INDEX budget_raises_thread ON budget_raises (thread_key, budget, day);
