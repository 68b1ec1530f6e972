package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// Session states.
const (
	SessionLive   = "live"   // an agent query is open for the thread
	SessionClosed = "closed" // idle or restarted; the next message resumes it
)

// Session is the one agent session of a chat thread.
type Session struct {
	ID           string
	ThreadKey    string
	State        string // SessionLive or SessionClosed
	CreatedAt    time.Time
	LastActivity time.Time
	Summary      string // compaction summary of the messages replaced by it
}

type sessionRow struct {
	SessionID    string `bun:"session_id"`
	ThreadKey    string `bun:"thread_key"`
	State        string `bun:"state"`
	CreatedAt    int64  `bun:"created_at"`
	LastActivity int64  `bun:"last_activity"`
	Summary      string `bun:"summary"`
}

// NewID returns a random session ID: 16 bytes as 32 hex digits, URL-safe.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails: crypto/rand crashes the program instead
	return hex.EncodeToString(b[:])
}

// SessionByThread returns the session of the thread, or an error matching
// ErrNotFound.
func (s *Store) SessionByThread(ctx context.Context, key string) (Session, error) {
	var r sessionRow
	err := s.queryRow(ctx, `SELECT session_id, thread_key, state, created_at, last_activity, summary
		FROM sessions WHERE thread_key = ?`, key).
		Scan(&r.SessionID, &r.ThreadKey, &r.State, &r.CreatedAt, &r.LastActivity, &r.Summary)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return Session{}, fmt.Errorf("session by thread %q: %w", key, err)
	}
	return Session{
		ID:           r.SessionID,
		ThreadKey:    r.ThreadKey,
		State:        r.State,
		CreatedAt:    fromUnixMilli(r.CreatedAt),
		LastActivity: fromUnixMilli(r.LastActivity),
		Summary:      r.Summary,
	}, nil
}

// CreateSession stores a new session. ID and ThreadKey are required (see
// NewID); an empty State means SessionLive, a zero CreatedAt means now and
// a zero LastActivity means CreatedAt. It returns an error matching
// ErrConflict if the ID or the thread already has a session.
func (s *Store) CreateSession(ctx context.Context, sess Session) error {
	s.completeSession(&sess)
	if err := validSession(sess); err != nil {
		return fmt.Errorf("create session for thread %q: %w", sess.ThreadKey, err)
	}
	// A transaction, so that what the event's context owes joins it
	// (WithInboxStart).
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		created, err := oneRow(s.txExec(ctx, tx, qInsertSession, sessionArgs(sess)...))
		if err == nil && !created {
			err = ErrConflict // ON CONFLICT DO NOTHING covers both the ID and the thread key
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("create session for thread %q: %w", sess.ThreadKey, err)
	}
	return nil
}

// completeSession fills in a new session's defaults: live, created now,
// last active when created.
func (s *Store) completeSession(sess *Session) {
	if sess.State == "" {
		sess.State = SessionLive
	}
	if sess.CreatedAt.IsZero() {
		sess.CreatedAt = s.now()
	}
	if sess.LastActivity.IsZero() {
		sess.LastActivity = sess.CreatedAt
	}
}

// sessionArgs are qInsertSession's arguments.
func sessionArgs(sess Session) []any {
	return []any{sess.ID, sess.ThreadKey, sess.State, sess.CreatedAt.UnixMilli(), sess.LastActivity.UnixMilli(),
		sess.Summary}
}

func validSession(sess Session) error {
	switch {
	case sess.ID == "":
		return errors.New("empty id")
	case sess.ThreadKey == "":
		return errors.New("empty thread key")
	}
	return validState(sess.State)
}

func validState(state string) error {
	if state != SessionLive && state != SessionClosed {
		return fmt.Errorf("invalid state %q", state)
	}
	return nil
}

// TouchSession sets the session's state and last activity. It returns an
// error matching ErrNotFound if there is no such session.
func (s *Store) TouchSession(ctx context.Context, id, state string, at time.Time) error {
	if err := validState(state); err != nil {
		return fmt.Errorf("touch session %q: %w", id, err)
	}
	err := s.write(ctx, func(ctx context.Context) error {
		res, err := s.exec(ctx,
			"UPDATE sessions SET state = ?, last_activity = ? WHERE session_id = ?",
			state, at.UnixMilli(), id)
		if err != nil {
			return err
		}
		return requireRow(res)
	})
	if err != nil {
		return fmt.Errorf("touch session %q: %w", id, err)
	}
	return nil
}

// CloseAllSessions marks every live session closed and returns how many it
// closed. It is for startup: no agent query survives a restart.
func (s *Store) CloseAllSessions(ctx context.Context) (int64, error) {
	var n int64
	err := s.write(ctx, func(ctx context.Context) error {
		res, err := s.exec(ctx,
			"UPDATE sessions SET state = ? WHERE state = ?", SessionClosed, SessionLive)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("close all sessions: %w", err)
	}
	return n, nil
}
