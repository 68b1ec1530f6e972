package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Thread is a chat thread's stored state. A thread never written has no
// row: GetThread returns ErrNotFound and callers apply their defaults.
type Thread struct {
	Key       string // the thread's key, chosen by the caller
	ChannelID string
	RootTS    string // timestamp of the thread's root message
	Engaged   bool   // whether the bot handles plain replies in the thread
	Mode      string // permission mode; "" means the service default
	LockedBy  string // user holding the thread's 1:1 lock; "" means unlocked
	// UnseenFrom is the ts where the thread's messages the bot has not
	// seen begin ("" none): see Engage.
	UnseenFrom string
	UpdatedAt  time.Time
}

type threadRow struct {
	ThreadKey string `bun:"thread_key"`
	ChannelID string `bun:"channel_id"`
	RootTS    string `bun:"root_ts"`
	Engaged   bool   `bun:"engaged"`
	Mode      string `bun:"mode"`
	LockedBy  string `bun:"locked_by"`
	Unseen    string `bun:"unseen_from"`
	UpdatedAt int64  `bun:"updated_at"`
}

// GetThread returns the thread stored under key, or an error matching
// ErrNotFound.
func (s *Store) GetThread(ctx context.Context, key string) (Thread, error) {
	var r threadRow
	err := s.queryRow(ctx, `SELECT thread_key, channel_id, root_ts, engaged, mode, locked_by, unseen_from, updated_at
		FROM threads WHERE thread_key = ?`, key).
		Scan(&r.ThreadKey, &r.ChannelID, &r.RootTS, &r.Engaged, &r.Mode, &r.LockedBy, &r.Unseen, &r.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return Thread{}, fmt.Errorf("get thread %q: %w", key, err)
	}
	return Thread{
		Key:        r.ThreadKey,
		ChannelID:  r.ChannelID,
		RootTS:     r.RootTS,
		Engaged:    r.Engaged,
		Mode:       r.Mode,
		LockedBy:   r.LockedBy,
		UnseenFrom: r.Unseen,
		UpdatedAt:  fromUnixMilli(r.UpdatedAt),
	}, nil
}

// SetEngaged creates or updates the thread's engagement. An empty channelID
// or rootTS keeps the stored value, so callers that only know the key can
// still disengage.
func (s *Store) SetEngaged(ctx context.Context, key, channelID, rootTS string, engaged bool) error {
	err := s.upsertThread(ctx, key, `
		INSERT INTO threads (thread_key, channel_id, root_ts, engaged, updated_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (thread_key) DO UPDATE SET
			channel_id = coalesce(nullif(excluded.channel_id, ''), threads.channel_id),
			root_ts = coalesce(nullif(excluded.root_ts, ''), threads.root_ts),
			engaged = excluded.engaged,
			updated_at = excluded.updated_at`,
		key, channelID, rootTS, engaged, s.now().UnixMilli())
	if err != nil {
		return fmt.Errorf("set engaged %q: %w", key, err)
	}
	return nil
}

// SetThreadMode creates or updates the thread's permission mode; "" returns
// it to the service default. The store does not validate modes.
func (s *Store) SetThreadMode(ctx context.Context, key, mode string) error {
	err := s.upsertThread(ctx, key, `
		INSERT INTO threads (thread_key, mode, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (thread_key) DO UPDATE SET mode = excluded.mode, updated_at = excluded.updated_at`,
		key, mode, s.now().UnixMilli())
	if err != nil {
		return fmt.Errorf("set thread mode %q: %w", key, err)
	}
	return nil
}

// SetThreadLock creates or updates the thread's 1:1 lock holder; ""
// releases it. It overwrites unconditionally: deciding who may take the
// lock is the caller's job.
func (s *Store) SetThreadLock(ctx context.Context, key, userID string) error {
	err := s.upsertThread(ctx, key, `
		INSERT INTO threads (thread_key, locked_by, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (thread_key) DO UPDATE SET locked_by = excluded.locked_by, updated_at = excluded.updated_at`,
		key, userID, s.now().UnixMilli())
	if err != nil {
		return fmt.Errorf("set thread lock %q: %w", key, err)
	}
	return nil
}

func (s *Store) upsertThread(ctx context.Context, key, query string, args ...any) error {
	if key == "" {
		return errors.New("empty key")
	}
	return s.write(ctx, func(ctx context.Context) error {
		_, err := s.exec(ctx, query, args...)
		return err
	})
}

// ModeOf returns the permission mode of a thread, or of its channel when
// the thread has none (the slash form sets the channel's), "" for
// neither, in one read: it runs on the path of every message.
func (s *Store) ModeOf(ctx context.Context, threadKey, channelKey string) (string, error) {
	mode, err := s.threadOrChannel(ctx, qModeOf, threadKey, channelKey)
	if err != nil {
		return "", fmt.Errorf("mode of %q: %w", threadKey, err)
	}
	return mode, nil
}

// LockHolder returns who holds the /1on1 lock of a thread, or of its
// channel when the thread has none (the slash form locks the channel), in
// one read: it runs on the drop path of every message.
func (s *Store) LockHolder(ctx context.Context, threadKey, channelKey string) (string, error) {
	holder, err := s.threadOrChannel(ctx, qLockHolder, threadKey, channelKey)
	if err != nil {
		return "", fmt.Errorf("lock holder %q: %w", threadKey, err)
	}
	return holder, nil
}

// The thread's value of a column, else its channel's, else "": two key
// lookups, no sort (an ORDER BY made SQLite build and free a sorter at
// each read, several times the cost of the read).
const (
	qModeOf = `SELECT coalesce((SELECT nullif(mode, '') FROM threads WHERE thread_key = ?),
		(SELECT nullif(mode, '') FROM threads WHERE thread_key = ?), '')`
	qLockHolder = `SELECT coalesce((SELECT nullif(locked_by, '') FROM threads WHERE thread_key = ?),
		(SELECT nullif(locked_by, '') FROM threads WHERE thread_key = ?), '')`
)

// threadOrChannel runs query (qModeOf, qLockHolder) for a thread and its
// channel.
func (s *Store) threadOrChannel(ctx context.Context, query, threadKey, channelKey string) (string, error) {
	var v string
	err := s.queryRow(ctx, query, threadKey, channelKey).Scan(&v)
	return v, err
}
