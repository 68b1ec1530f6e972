package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// Usage is the token usage of one or more model calls.
type Usage struct {
	Input, Output, CacheRead, CacheWrite int64
}

// UsageRecord is one model call's tokens, with whose they are: a row of
// model_usage, the one record of tokens (budgets, `agent usage`).
type UsageRecord struct {
	At        time.Time
	ThreadKey string
	ChannelID string
	UserID    string
	Model     string
	Usage
}

// RecordUsage stores one model call's tokens.
func (s *Store) RecordUsage(ctx context.Context, r UsageRecord) error {
	if err := validUsage(r.Usage); err != nil {
		return fmt.Errorf("record usage: %w", err)
	}
	at := r.At
	if at.IsZero() {
		at = s.now()
	}
	// Through the writer slot, like every write (on SQLite a write beside
	// it would wait on the database's lock instead, polling), but not as
	// the event's write: what the event's context owes the inbox (its
	// start, its answered state) goes with the history's writes, whose
	// crash semantics it follows.
	err := s.slot(ctx, func(ctx context.Context) error {
		_, err := s.exec(ctx, qInsertUsage, usageArgs(r, at)...)
		return err
	})
	if err != nil {
		return fmt.Errorf("record usage: %w", err)
	}
	return nil
}

const qInsertUsage = `INSERT INTO model_usage
		(at, thread_key, channel_id, user_id, model, input, output, cache_read, cache_write) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`

func usageArgs(r UsageRecord, at time.Time) []any {
	return []any{at.UnixMilli(), r.ThreadKey, r.ChannelID, r.UserID, r.Model, r.Input, r.Output, r.CacheRead, r.CacheWrite}
}

// validUsage refuses negative counts.
func validUsage(u Usage) error {
	if u.Input < 0 || u.Output < 0 || u.CacheRead < 0 || u.CacheWrite < 0 {
		return fmt.Errorf("negative usage %+v", u)
	}
	return nil
}

// insertUsage writes r, if any, in tx (an answer's write: Answer.Spent),
// dated now when it has no time of its own.
func (s *Store) insertUsage(ctx context.Context, tx bun.Tx, r *UsageRecord, now time.Time) error {
	if r == nil {
		return nil
	}
	at := r.At
	if at.IsZero() {
		at = now
	}
	if _, err := s.txExec(ctx, tx, qInsertUsage, usageArgs(*r, at)...); err != nil {
		return fmt.Errorf("record usage: %w", err)
	}
	return nil
}

// UsageFilter selects model calls: of one thread, of one channel, of one
// person (the turn's sender; a scheduled run's creator) — each may be
// empty: all — made at or after Since.
type UsageFilter struct {
	ThreadKey string
	ChannelID string
	UserID    string
	Since     time.Time
}

// UsageRow is the tokens of one key (a channel, thread or person, as
// UsageBy groups them; "" in UsageOf) and model.
type UsageRow struct {
	Key   string
	Model string
	Usage
}

// UsageOf sums the tokens of the calls f selects, per model (the price
// weights differ by model).
func (s *Store) UsageOf(ctx context.Context, f UsageFilter) ([]UsageRow, error) {
	q := `SELECT '', model, CAST(sum(input) AS BIGINT), CAST(sum(output) AS BIGINT), CAST(sum(cache_read) AS BIGINT), CAST(sum(cache_write) AS BIGINT) FROM model_usage WHERE at >= ?`
	args := []any{f.Since.UnixMilli()}
	if f.ThreadKey != "" {
		q += ` AND thread_key = ?`
		args = append(args, f.ThreadKey)
	}
	if f.ChannelID != "" {
		q += ` AND channel_id = ?`
		args = append(args, f.ChannelID)
	}
	if f.UserID != "" {
		q += ` AND user_id = ?`
		args = append(args, f.UserID)
	}
	return s.usageRows(ctx, q+` GROUP BY model ORDER BY model`, args...)
}

// Usage groupings of UsageBy.
const (
	UsageByChannel = "channel"
	UsageByThread  = "thread"
	UsageByPerson  = "person"
)

// UsageBy sums the tokens of the calls made at or after since, per key of
// the grouping by (UsageByChannel, UsageByThread or UsageByPerson) and
// model.
func (s *Store) UsageBy(ctx context.Context, since time.Time, by string) ([]UsageRow, error) {
	col, ok := map[string]string{UsageByChannel: "channel_id", UsageByThread: "thread_key", UsageByPerson: "user_id"}[by]
	if !ok {
		return nil, fmt.Errorf("usage: unknown grouping %q (want channel, thread or person)", by)
	}
	return s.usageRows(ctx, `SELECT `+col+`, model, CAST(sum(input) AS BIGINT), CAST(sum(output) AS BIGINT), CAST(sum(cache_read) AS BIGINT), CAST(sum(cache_write) AS BIGINT)
		FROM model_usage WHERE at >= ? GROUP BY `+col+`, model ORDER BY `+col+`, model`, since.UnixMilli())
}

func (s *Store) usageRows(ctx context.Context, q string, args ...any) ([]UsageRow, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	defer rows.Close()
	var out []UsageRow
	for rows.Next() {
		var r UsageRow
		if err := rows.Scan(&r.Key, &r.Model, &r.Input, &r.Output, &r.CacheRead, &r.CacheWrite); err != nil {
			return nil, fmt.Errorf("usage: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	return out, nil
}

// NoteBudgetNotice records that the thread was told it is near a budget
// on day; first is false when it was already told that day.
func (s *Store) NoteBudgetNotice(ctx context.Context, threadKey, day string) (first bool, err error) {
	err = s.slot(ctx, func(ctx context.Context) error { // not the event's write (RecordUsage)
		var err error
		first, err = oneRow(s.exec(ctx, `INSERT INTO budget_notices (thread_key, day, at) VALUES (?, ?, ?)
		ON CONFLICT (thread_key, day) DO NOTHING`, threadKey, day, s.now().UnixMilli()))
		return err
	})
	if err != nil {
		return false, fmt.Errorf("budget notice: %w", err)
	}
	return first, nil
}

// RaiseBudget adds tokens to the allowance of key under budget for day
// ("" for the thread budget, which has none). key is what the budget
// holds: the thread's key for the thread budget, the channel's
// (pipeline.ThreadKey(channel, "")) for the channel's, the person's id
// for a person's, "" for the persona's.
func (s *Store) RaiseBudget(ctx context.Context, key, budget, day string, tokens int64, by string) error {
	err := s.slot(ctx, func(ctx context.Context) error { // not the event's write (RecordUsage)
		_, err := s.exec(ctx, `INSERT INTO budget_raises (thread_key, budget, day, tokens, by_user, at)
		VALUES (?, ?, ?, ?, ?, ?)`, key, budget, day, tokens, by, s.now().UnixMilli())
		return err
	})
	if err != nil {
		return fmt.Errorf("raise budget: %w", err)
	}
	return nil
}

// BudgetRaised is what the raises of key under budget for day add up to.
func (s *Store) BudgetRaised(ctx context.Context, key, budget, day string) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, `SELECT CAST(coalesce(sum(tokens), 0) AS BIGINT) FROM budget_raises
		WHERE thread_key = ? AND budget = ? AND day = ?`, key, budget, day).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("budget raised: %w", err)
	}
	return n, nil
}

// budgetCardUnposted is how long a claim whose approval was not created
// yet holds its budget: the claiming turn creates it at once; an older
// one was left by a replica that stopped in between.
const budgetCardUnposted = time.Minute

// ClaimBudgetCard makes the approval id the raise card of the budget key
// (a budget and what it holds: one thread, one channel's or one person's
// day, the persona's day), unless another card holds it: one still
// pending (held is true and the card is returned; its CardTS is "" while
// it is being posted). A card decided or expired, or one never created
// within a minute, holds nothing: id takes its place. The claim is one
// row per key, written by single statements (an INSERT only the first
// wins, an UPDATE conditional on the card it replaces), so that replicas
// refusing at once post one card between them, and a restart, which
// expires the cards it left pending, frees them.
func (s *Store) ClaimBudgetCard(ctx context.Context, key, id string) (holder Approval, held bool, err error) {
	claim := func(q string, args ...any) (bool, error) {
		var won bool
		err := s.slot(ctx, func(ctx context.Context) error { // not the event's write (RecordUsage)
			var err error
			won, err = oneRow(s.exec(ctx, q, args...))
			return err
		})
		return won, err
	}
	for range 3 {
		now := s.now().UnixMilli()
		won, err := claim(`INSERT INTO budget_cards (budget_key, approval_id, at) VALUES (?, ?, ?)
		ON CONFLICT (budget_key) DO NOTHING`, key, id, now)
		if err != nil || won {
			return Approval{}, false, wrapErr("claim budget card", err)
		}
		var old string
		var at int64
		if err := s.queryRow(ctx, `SELECT approval_id, at FROM budget_cards WHERE budget_key = ?`, key).Scan(&old, &at); err != nil {
			return Approval{}, false, fmt.Errorf("claim budget card: %w", err)
		}
		a, err := s.GetApproval(ctx, old)
		switch {
		case err == nil && a.State == ApprovalRequested:
			return a, true, nil
		case errors.Is(err, ErrNotFound) && now-at < budgetCardUnposted.Milliseconds():
			return Approval{ID: old}, true, nil
		case err != nil && !errors.Is(err, ErrNotFound):
			return Approval{}, false, fmt.Errorf("claim budget card: %w", err)
		}
		won, err = claim(`UPDATE budget_cards SET approval_id = ?, at = ? WHERE budget_key = ? AND approval_id = ?`, id, now, key, old)
		if err != nil || won {
			return Approval{}, false, wrapErr("claim budget card", err)
		}
		// Another claim replaced the card first: read what holds it now.
	}
	return Approval{}, false, fmt.Errorf("claim budget card %q: taken and released too often at once", key)
}

// wrapErr prefixes err with what failed; nil stays nil.
func wrapErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}
