-- The pending raise card of each budget (issue 33): at most one card asks
-- to raise a budget at a time; later refusals point to it. budget_key is
-- the budget and what it holds ('thread:<thread key>',
-- 'channel:<channel>:<day>', 'person:<user>:<day>', 'persona:<day>');
-- approval_id the card's approval. A row whose approval is decided or
-- expired holds nothing: the next refusal's card replaces it.
CREATE TABLE budget_cards (
	budget_key  TEXT    NOT NULL PRIMARY KEY,
	approval_id TEXT    NOT NULL,
	at          INTEGER NOT NULL
);
