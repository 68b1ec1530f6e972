package store

import (
	"context"
	"errors"
	"fmt"
)

// A thread's unseen mark (threads.unseen_from) is where its messages the
// bot has not seen begin: set when someone else is asked (Disengage) or
// when the bot is called into a thread it was never part of (Engage), and
// cleared once a turn has stored them (MarkSeen). An engaged thread has
// none: the bot sees each of its messages as it comes. Reading a thread
// back costs a Web API call, so only the message that engages the bot
// reads it, and only when the mark says there is something to read.

// qEngage engages a thread and returns its mark. The mark of a thread
// that holds one is kept (a turn that engaged it has not stored its
// messages yet, or a disengagement left it); an engaged thread without one
// keeps none; a thread known but never engaged (a /mode set its row) gets
// the new row's: the root, for a reply's mention.
const qEngage = `INSERT INTO threads (thread_key, channel_id, root_ts, engaged, unseen_from, updated_at)
	VALUES (?, ?, ?, ?, ?, ?)
	ON CONFLICT (thread_key) DO UPDATE SET
		channel_id = coalesce(nullif(excluded.channel_id, ''), threads.channel_id),
		root_ts = coalesce(nullif(excluded.root_ts, ''), threads.root_ts),
		unseen_from = CASE WHEN threads.unseen_from <> '' OR threads.engaged THEN threads.unseen_from
			ELSE excluded.unseen_from END,
		engaged = excluded.engaged,
		updated_at = excluded.updated_at
	RETURNING unseen_from`

// Engage engages the thread for the message at ts, which mentions the
// bot, in one write, and returns its unseen mark ("" none): the root of a
// thread the bot was never engaged in when ts is a reply, the message
// that disengaged it, or a mark an earlier Engage returned that no turn
// has cleared yet (pipeline.Engagements).
func (s *Store) Engage(ctx context.Context, key, channelID, rootTS, ts string) (string, error) {
	if key == "" {
		return "", errors.New("engage: empty key")
	}
	from := ""
	if rootTS != "" && ts != rootTS {
		from = rootTS
	}
	var unseen string
	err := s.write(ctx, func(ctx context.Context) error {
		return s.queryRow(ctx, qEngage, key, channelID, rootTS, true, from, s.now().UnixMilli()).Scan(&unseen)
	})
	if err != nil {
		return "", fmt.Errorf("engage %q: %w", key, err)
	}
	return unseen, nil
}

// Disengage records that the bot stops following the thread at the
// message at ts, the first of its messages it does not see; a mark the
// thread holds already is kept (pipeline.Engagements).
func (s *Store) Disengage(ctx context.Context, key, ts string) error {
	err := s.upsertThread(ctx, key, `
		INSERT INTO threads (thread_key, engaged, unseen_from, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (thread_key) DO UPDATE SET
			unseen_from = CASE WHEN threads.unseen_from <> '' THEN threads.unseen_from ELSE excluded.unseen_from END,
			engaged = excluded.engaged,
			updated_at = excluded.updated_at`,
		key, false, ts, s.now().UnixMilli())
	if err != nil {
		return fmt.Errorf("disengage %q: %w", key, err)
	}
	return nil
}

// MarkSeen clears the thread's unseen mark if it is still from: the turn
// that read the messages from there has stored them (pipeline.UnseenMarks).
func (s *Store) MarkSeen(ctx context.Context, key, from string) error {
	if from == "" {
		return nil
	}
	err := s.upsertThread(ctx, key, `UPDATE threads SET unseen_from = '', updated_at = ?
		WHERE thread_key = ? AND unseen_from = ?`, s.now().UnixMilli(), key, from)
	if err != nil {
		return fmt.Errorf("mark seen %q: %w", key, err)
	}
	return nil
}
