package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/persona-runtime/agent/internal/memory"
)

// What a person's App Home shows (internal/home): the reads it needs.

// PersonThread is a thread where a person's turns ran, with the last.
type PersonThread struct {
	Key, ChannelID string
	Last           time.Time
}

// ThreadsOf returns the threads where userID's turns called the model
// (model_usage), the most recent first, at most limit.
func (s *Store) ThreadsOf(ctx context.Context, userID string, limit int) ([]PersonThread, error) {
	// The limit is written into the statement, not bound (see stmt.go):
	// the App Home asks for one page size.
	rows, err := s.query(ctx, `SELECT thread_key, channel_id, max(at) AS last FROM model_usage WHERE user_id = ? AND thread_key <> ''
		GROUP BY thread_key, channel_id ORDER BY last DESC, thread_key LIMIT `+strconv.Itoa(limit), userID)
	if err != nil {
		return nil, fmt.Errorf("threads of a person: %w", err)
	}
	defer rows.Close()
	var out []PersonThread
	for rows.Next() {
		var t PersonThread
		var at int64
		if err := rows.Scan(&t.Key, &t.ChannelID, &at); err != nil {
			return nil, fmt.Errorf("threads of a person: %w", err)
		}
		t.Last = time.UnixMilli(at).UTC()
		out = append(out, t)
	}
	return out, rows.Err()
}

// MemoriesBy returns the memories author asked for, oldest first.
func (s *Store) MemoriesBy(ctx context.Context, author string) ([]memory.Memory, error) {
	ms, err := s.memories(ctx, "SELECT "+memoryColumns+" FROM memories WHERE author = ? ORDER BY created_at, id", author)
	if err != nil {
		return nil, fmt.Errorf("memories by a person: %w", err)
	}
	return ms, nil
}

// ChannelMode is the permission mode a channel was set to (/mode in the
// channel: its channel key's row).
type ChannelMode struct {
	ChannelID, Mode string
}

// ChannelModes returns the channels with a mode of their own (the row of
// the channel's key, "<channel>:"), by id.
func (s *Store) ChannelModes(ctx context.Context) ([]ChannelMode, error) {
	rows, err := s.query(ctx, `SELECT thread_key, mode FROM threads WHERE mode <> '' ORDER BY thread_key`)
	if err != nil {
		return nil, fmt.Errorf("channel modes: %w", err)
	}
	defer rows.Close()
	var out []ChannelMode
	for rows.Next() {
		var key, mode string
		if err := rows.Scan(&key, &mode); err != nil {
			return nil, fmt.Errorf("channel modes: %w", err)
		}
		if channel, ok := strings.CutSuffix(key, ":"); ok && channel != "" {
			out = append(out, ChannelMode{ChannelID: channel, Mode: mode})
		}
	}
	return out, rows.Err()
}

// Mute is one mute in force (/ignore, /ignore-thread).
type Mute struct {
	Kind, Target, By string
	Until            time.Time // zero: until lifted
}

// Mutes returns the mutes in force at now, by kind and target.
func (s *Store) Mutes(ctx context.Context, now time.Time) ([]Mute, error) {
	rows, err := s.query(ctx, `SELECT kind, target, created_by, expires_at FROM ignores WHERE expires_at = 0 OR expires_at > ? ORDER BY kind, target`,
		now.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("mutes: %w", err)
	}
	defer rows.Close()
	var out []Mute
	for rows.Next() {
		var m Mute
		var until int64
		if err := rows.Scan(&m.Kind, &m.Target, &m.By, &until); err != nil {
			return nil, fmt.Errorf("mutes: %w", err)
		}
		if until > 0 {
			m.Until = time.UnixMilli(until).UTC()
		}
		out = append(out, m)
	}
	return out, rows.Err()
}
