package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// Message roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one model message of a session's conversation, in the form
// resuming the session hands back to the model.
type Message struct {
	SessionID string
	Seq       int64  // position in the session, from 1; assigned by the store
	Role      string // RoleUser or RoleAssistant
	// Content is the message's content blocks as the model API takes them:
	// any valid JSON, stored and returned verbatim.
	Content   json.RawMessage
	CreatedAt time.Time
	// EventID is the chat event a user message answers ("" otherwise).
	EventID string
	// TS is the chat message a user message carries last (the event's
	// message: its ts), which recall names as the hit; "" otherwise. It
	// is indexed, not stored with the history.
	TS string
}

type messageRow struct {
	bun.BaseModel `bun:"table:messages"`

	SessionID string `bun:"session_id"`
	Seq       int64  `bun:"seq"`
	Role      string `bun:"role"`
	Content   string `bun:"content"`
	CreatedAt int64  `bun:"created_at"`
	EventID   string `bun:"event_id"`
	TS        string `bun:"-"` // indexed only (Message.TS)
}

// AppendMessages appends msgs to the session's history in one transaction,
// numbering them after the current last Seq (callers' Seq values are
// ignored), and sets the session's LastActivity to now. A zero CreatedAt
// means now. Appending nothing does nothing. It returns an error matching
// ErrNotFound if there is no such session.
func (s *Store) AppendMessages(ctx context.Context, sessionID string, msgs ...Message) error {
	return s.AppendAnswer(ctx, sessionID, Answer{}, msgs...)
}

// Answer is what is recorded with a model's answer, in its transaction.
type Answer struct {
	// Answering, when set, is the inbox event the answer is about to post
	// for: it is marked answering (as InboxAnswering does) in the same
	// write, instead of in one of its own just before the post.
	Answering string
	// Spent, when set, is the model call's row of model_usage (the one
	// record of tokens: budgets, `agent usage`), written with the answer
	// it came with instead of in a write of its own: an answer and what it
	// cost are one write, not two.
	Spent *UsageRecord
}

// AppendAnswer is AppendMessages that also records a.
func (s *Store) AppendAnswer(ctx context.Context, sessionID string, a Answer, msgs ...Message) error {
	if len(msgs) == 0 {
		return nil
	}
	if a.Spent != nil {
		if err := validUsage(a.Spent.Usage); err != nil {
			return fmt.Errorf("append messages to session %q: %w", sessionID, err)
		}
	}
	now := s.now()
	rows, err := messageRows(sessionID, msgs, now)
	if err != nil {
		return fmt.Errorf("append messages to session %q: %w", sessionID, err)
	}
	err = s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		// A session this transaction created (a new thread's first
		// message) has no messages yet and was just touched.
		if createdInTx(ctx, sessionID) {
			if err := s.insertMessages(ctx, tx, rows, 0); err != nil {
				return err
			}
			if err := s.indexMessages(ctx, tx, rows); err != nil {
				return err
			}
			if err := s.insertUsage(ctx, tx, a.Spent, now); err != nil {
				return err
			}
			return s.markAnswering(ctx, tx, a, now)
		}
		res, err := s.txExec(ctx, tx, qTouchSession, now.UnixMilli(), sessionID)
		if err != nil {
			return err
		}
		if err := requireRow(res); err != nil {
			return err
		}
		var last int64
		err = s.txQueryRow(ctx, tx, qLastSeq, sessionID).Scan(&last)
		if err != nil {
			return err
		}
		if err := s.insertMessages(ctx, tx, rows, last); err != nil {
			return err
		}
		if err := s.indexMessages(ctx, tx, rows); err != nil {
			return err
		}
		if err := s.insertUsage(ctx, tx, a.Spent, now); err != nil {
			return err
		}
		return s.markAnswering(ctx, tx, a, now)
	})
	if err != nil {
		return fmt.Errorf("append messages to session %q: %w", sessionID, err)
	}
	return nil
}

// markAnswering marks a's event answering, if it names one.
func (s *Store) markAnswering(ctx context.Context, tx bun.Tx, a Answer, now time.Time) error {
	if a.Answering == "" {
		return nil
	}
	_, err := s.txExec(ctx, tx, qInboxAnswering, InboxAnswering, now.UnixMilli(), a.Answering, InboxReceived, InboxRunning)
	return err
}

// History returns the session's messages ordered by Seq (none for a new
// session). It returns an error matching ErrNotFound if there is no such
// session.
func (s *Store) History(ctx context.Context, sessionID string) ([]Message, error) {
	msgs, err := s.history(ctx, sessionID)
	if err == nil && len(msgs) == 0 {
		// Sessions are never deleted, so checking afterwards is race-free.
		var exists bool
		err = s.queryRow(ctx,
			"SELECT EXISTS (SELECT 1 FROM sessions WHERE session_id = ?)", sessionID).Scan(&exists)
		if err == nil && !exists {
			err = ErrNotFound
		}
	}
	if err != nil {
		return nil, fmt.Errorf("history of session %q: %w", sessionID, err)
	}
	return msgs, nil
}

// history reads the session's messages in order.
func (s *Store) history(ctx context.Context, sessionID string) ([]Message, error) {
	rows, err := s.query(ctx, `SELECT seq, role, content, created_at, event_id FROM messages
		WHERE session_id = ? ORDER BY seq`, sessionID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var msgs []Message
	for rows.Next() {
		m := Message{SessionID: sessionID}
		var content []byte // a copy: the row's memory is the driver's
		var created int64
		if err := rows.Scan(&m.Seq, &m.Role, &content, &created, &m.EventID); err != nil {
			return nil, err
		}
		m.Content, m.CreatedAt = json.RawMessage(content), fromUnixMilli(created)
		msgs = append(msgs, m)
	}
	return msgs, rows.Err()
}

// ReplaceHistory compacts the session in one transaction: it deletes all
// its messages, stores summary on the session and inserts keep numbered
// from 1 (callers' Seq values are ignored; a zero CreatedAt means now).
// Readers see the old history or the new one, never a mix. It returns an
// error matching ErrNotFound if there is no such session. The recall
// index keeps what was said: compaction shortens what the model reads
// again, not what the persona can recall.
func (s *Store) ReplaceHistory(ctx context.Context, sessionID string, summary string, keep []Message) error {
	rows, err := messageRows(sessionID, keep, s.now())
	if err != nil {
		return fmt.Errorf("replace history of session %q: %w", sessionID, err)
	}
	err = s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.ExecContext(ctx,
			"UPDATE sessions SET summary = ? WHERE session_id = ?", summary, sessionID)
		if err != nil {
			return err
		}
		if err := requireRow(res); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM messages WHERE session_id = ?", sessionID); err != nil {
			return err
		}
		return s.insertMessages(ctx, tx, rows, 0)
	})
	if err != nil {
		return fmt.Errorf("replace history of session %q: %w", sessionID, err)
	}
	return nil
}

// messageRows validates msgs and converts them to rows of sessionID.
func messageRows(sessionID string, msgs []Message, now time.Time) ([]messageRow, error) {
	rows := make([]messageRow, len(msgs))
	for i, m := range msgs {
		switch {
		case m.SessionID != "" && m.SessionID != sessionID:
			return nil, fmt.Errorf("message %d belongs to session %q", i, m.SessionID)
		case m.Role != RoleUser && m.Role != RoleAssistant:
			return nil, fmt.Errorf("message %d: invalid role %q", i, m.Role)
		case !json.Valid(m.Content):
			return nil, fmt.Errorf("message %d: content is not valid JSON", i)
		}
		at := m.CreatedAt
		if at.IsZero() {
			at = now
		}
		rows[i] = messageRow{
			SessionID: sessionID,
			Role:      m.Role,
			Content:   string(m.Content),
			CreatedAt: at.UnixMilli(),
			EventID:   m.EventID,
			TS:        m.TS,
		}
	}
	return rows, nil
}

// insertMessages numbers rows after seq last and inserts them in one
// statement.
func (s *Store) insertMessages(ctx context.Context, tx bun.Tx, rows []messageRow, last int64) error {
	for i, r := range rows {
		_, err := s.txExec(ctx, tx, qInsertMessage, r.SessionID, last+int64(i)+1, r.Role, r.Content, r.CreatedAt, r.EventID)
		if err != nil {
			return fmt.Errorf("insert messages: %w", err)
		}
	}
	return nil
}
