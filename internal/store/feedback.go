package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/uptrace/bun"
)

// Feedback is one person's vote on a reply.
type Feedback struct {
	ChannelID string
	MessageTS string // the reply
	ThreadTS  string // its thread's root
	UserID    string
	Value     string // "good" or "bad"
	At        time.Time
}

// RecordFeedback stores f: one vote per person per reply, a later one
// replacing the earlier. It returns the vote it replaced ("" for none); a
// vote equal to the stored one changes nothing. The read and the write
// are one transaction (serialised across replicas on Postgres), so that
// two clicks at once cannot both see the same earlier vote.
func (s *Store) RecordFeedback(ctx context.Context, f Feedback) (previous string, err error) {
	if f.ChannelID == "" || f.MessageTS == "" || f.UserID == "" || (f.Value != "good" && f.Value != "bad") {
		return "", fmt.Errorf("feedback: channel, message, user and a good or bad value are required")
	}
	at := f.At
	if at.IsZero() {
		at = s.now()
	}
	err = s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		previous = ""
		err := tx.QueryRowContext(ctx, `SELECT value FROM feedback WHERE channel_id = ? AND message_ts = ? AND user_id = ?`,
			f.ChannelID, f.MessageTS, f.UserID).Scan(&previous)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		case previous == f.Value:
			return nil
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO feedback (channel_id, message_ts, user_id, thread_ts, value, created_at)
			VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (channel_id, message_ts, user_id)
			DO UPDATE SET value = excluded.value, created_at = excluded.created_at, thread_ts = excluded.thread_ts`,
			f.ChannelID, f.MessageTS, f.UserID, f.ThreadTS, f.Value, at.UnixMilli())
		return err
	})
	if err != nil {
		return "", fmt.Errorf("record feedback: %w", err)
	}
	return previous, nil
}

// FeedbackThread is a thread's votes.
type FeedbackThread struct {
	ChannelID, ThreadTS string
	Good, Bad           int
}

// FeedbackChannel is a channel's votes, with its threads worst first.
type FeedbackChannel struct {
	ChannelID string
	Good, Bad int
	Threads   []FeedbackThread // most bad votes first
}

// FeedbackSince summarises the votes cast since t, per channel (most bad
// votes first), each with its threads.
func (s *Store) FeedbackSince(ctx context.Context, t time.Time) ([]FeedbackChannel, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT channel_id, thread_ts,
		sum(CASE WHEN value = 'good' THEN 1 ELSE 0 END), sum(CASE WHEN value = 'bad' THEN 1 ELSE 0 END)
		FROM feedback WHERE created_at >= ? GROUP BY channel_id, thread_ts`, t.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("feedback summary: %w", err)
	}
	defer rows.Close()
	byChannel := map[string]*FeedbackChannel{}
	for rows.Next() {
		var th FeedbackThread
		if err := rows.Scan(&th.ChannelID, &th.ThreadTS, &th.Good, &th.Bad); err != nil {
			return nil, fmt.Errorf("feedback summary: %w", err)
		}
		c := byChannel[th.ChannelID]
		if c == nil {
			c = &FeedbackChannel{ChannelID: th.ChannelID}
			byChannel[th.ChannelID] = c
		}
		c.Good += th.Good
		c.Bad += th.Bad
		c.Threads = append(c.Threads, th)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("feedback summary: %w", err)
	}
	out := make([]FeedbackChannel, 0, len(byChannel))
	for _, c := range byChannel {
		sort.Slice(c.Threads, func(i, j int) bool {
			a, b := c.Threads[i], c.Threads[j]
			if a.Bad != b.Bad {
				return a.Bad > b.Bad
			}
			return a.ThreadTS < b.ThreadTS
		})
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Bad != out[j].Bad {
			return out[i].Bad > out[j].Bad
		}
		return out[i].ChannelID < out[j].ChannelID
	})
	return out, nil
}
