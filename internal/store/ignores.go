package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Kinds of mute (/ignore, /ignore-thread).
const (
	IgnoreUser   = "user"
	IgnoreThread = "thread"
)

// SetIgnore mutes a person (kind IgnoreUser, target their user id) or a
// thread (IgnoreThread, its key) until until; a zero until mutes until
// lifted. A mute of the same target is replaced. The times are the
// caller's clock (the service's, which the simulator moves).
func (s *Store) SetIgnore(ctx context.Context, kind, target, by string, until time.Time) error {
	if kind != IgnoreUser && kind != IgnoreThread || target == "" {
		return fmt.Errorf("set ignore: bad target %s %q", kind, target)
	}
	var expires int64
	if !until.IsZero() {
		expires = until.UnixMilli()
	}
	err := s.write(ctx, func(ctx context.Context) error {
		_, err := s.exec(ctx, `INSERT INTO ignores (kind, target, created_by, expires_at, created_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (kind, target) DO UPDATE SET created_by = excluded.created_by,
				expires_at = excluded.expires_at, created_at = excluded.created_at`,
			kind, target, by, expires, s.now().UnixMilli())
		return err
	})
	if err != nil {
		return fmt.Errorf("set ignore %s %q: %w", kind, target, err)
	}
	return nil
}

// RemoveIgnore lifts a mute; it reports whether one was in force at now.
func (s *Store) RemoveIgnore(ctx context.Context, kind, target string, now time.Time) (bool, error) {
	var lifted bool
	err := s.write(ctx, func(ctx context.Context) error {
		res, err := s.exec(ctx, `DELETE FROM ignores WHERE kind = ? AND target = ? AND (expires_at = 0 OR expires_at > ?)`,
			kind, target, now.UnixMilli())
		if lifted, err = oneRow(res, err); err != nil {
			return err
		}
		// An expired row is gone too: it was absent already.
		_, err = s.exec(ctx, `DELETE FROM ignores WHERE kind = ? AND target = ?`, kind, target)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("remove ignore %s %q: %w", kind, target, err)
	}
	return lifted, nil
}

// Muted reports whether a person's message in a thread is muted at now:
// the person is (user), or the thread or its channel is (thread). One
// read: it runs on the drop path of every message.
func (s *Store) Muted(ctx context.Context, userID, threadKey, channelKey string, now time.Time) (user, thread bool, err error) {
	var u, t int
	err = s.queryRow(ctx, qMuted, userID, threadKey, channelKey, now.UnixMilli()).Scan(&u, &t)
	if err != nil {
		return false, false, fmt.Errorf("muted %q in %q: %w", userID, threadKey, err)
	}
	return u > 0, t > 0, nil
}

const qMuted = `SELECT
	coalesce(sum(CASE WHEN kind = 'user' THEN 1 ELSE 0 END), 0),
	coalesce(sum(CASE WHEN kind = 'thread' THEN 1 ELSE 0 END), 0)
	FROM ignores
	WHERE ((kind = 'user' AND target = ?) OR (kind = 'thread' AND target IN (?, ?)))
		AND (expires_at = 0 OR expires_at > ?)`

// SetThreadModel sets the model of a thread's requests (/model); ""
// returns it to the service's. The store does not validate model ids.
func (s *Store) SetThreadModel(ctx context.Context, key, model string) error {
	err := s.upsertThread(ctx, key, `
		INSERT INTO threads (thread_key, model, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (thread_key) DO UPDATE SET model = excluded.model, updated_at = excluded.updated_at`,
		key, model, s.now().UnixMilli())
	if err != nil {
		return fmt.Errorf("set thread model %q: %w", key, err)
	}
	return nil
}

// ModelOf returns the model of a thread, or of its channel when the thread
// has none (the slash form sets the channel's), "" for neither.
func (s *Store) ModelOf(ctx context.Context, threadKey, channelKey string) (string, error) {
	if threadKey == "" {
		return "", errors.New("model of: empty key")
	}
	model, err := s.threadOrChannel(ctx, qModelOf, threadKey, channelKey)
	if err != nil {
		return "", fmt.Errorf("model of %q: %w", threadKey, err)
	}
	return model, nil
}

const qModelOf = `SELECT coalesce((SELECT nullif(model, '') FROM threads WHERE thread_key = ?),
	(SELECT nullif(model, '') FROM threads WHERE thread_key = ?), '')`
