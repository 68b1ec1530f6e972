package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/persona-runtime/agent/internal/connect"
)

var _ connect.Store = (*Store)(nil)

// PutConnection writes a person's connection to a server, replacing the
// one there was (a new sign-in, or a refreshed token).
func (s *Store) PutConnection(ctx context.Context, r connect.Record) error {
	if r.User == "" || r.Server == "" || len(r.Sealed) == 0 {
		return fmt.Errorf("put connection: incomplete record for %q/%q", r.User, r.Server)
	}
	now := s.now().UnixMilli()
	err := s.write(ctx, func(ctx context.Context) error {
		_, err := s.exec(ctx, `INSERT INTO connections (user_id, server, account, sealed, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (user_id, server) DO UPDATE SET account = excluded.account, sealed = excluded.sealed,
				updated_at = excluded.updated_at`, r.User, r.Server, r.Account, r.Sealed, now, now)
		return err
	})
	if err != nil {
		return fmt.Errorf("put connection %q/%q: %w", r.User, r.Server, err)
	}
	return nil
}

// Connection returns a person's connection to a server.
func (s *Store) Connection(ctx context.Context, user, server string) (connect.Record, bool, error) {
	r := connect.Record{User: user, Server: server}
	var created, updated int64
	err := s.queryRow(ctx, `SELECT account, sealed, created_at, updated_at FROM connections
		WHERE user_id = ? AND server = ?`, user, server).Scan(&r.Account, &r.Sealed, &created, &updated)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return connect.Record{}, false, nil
	case err != nil:
		return connect.Record{}, false, fmt.Errorf("connection %q/%q: %w", user, server, err)
	}
	r.Created, r.Updated = fromUnixMilli(created), fromUnixMilli(updated)
	return r, true, nil
}

// Connections lists the connections of user, or everyone's when user is
// "", by person then server.
func (s *Store) Connections(ctx context.Context, user string) ([]connect.Record, error) {
	rows, err := s.query(ctx, `SELECT user_id, server, account, sealed, created_at, updated_at FROM connections
		WHERE ? = '' OR user_id = ? ORDER BY user_id, server`, user, user)
	if err != nil {
		return nil, fmt.Errorf("connections: %w", err)
	}
	defer rows.Close()
	var out []connect.Record
	for rows.Next() {
		var r connect.Record
		var created, updated int64
		if err := rows.Scan(&r.User, &r.Server, &r.Account, &r.Sealed, &created, &updated); err != nil {
			return nil, fmt.Errorf("connections: %w", err)
		}
		r.Created, r.Updated = fromUnixMilli(created), fromUnixMilli(updated)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("connections: %w", err)
	}
	return out, nil
}

// DeleteConnection removes a person's connection to a server.
func (s *Store) DeleteConnection(ctx context.Context, user, server string) (bool, error) {
	var gone bool
	err := s.write(ctx, func(ctx context.Context) error {
		var err error
		gone, err = oneRow(s.exec(ctx, `DELETE FROM connections WHERE user_id = ? AND server = ?`, user, server))
		return err
	})
	if err != nil {
		return false, fmt.Errorf("delete connection %q/%q: %w", user, server, err)
	}
	return gone, nil
}

// connectStateKeep is how long a used or expired sign-in state is kept
// after it expired, so that a late click is told why it does nothing.
const connectStateKeep = 24 * time.Hour

// PutConnectState writes a new pending sign-in, and prunes the states
// expired a day before now.
func (s *Store) PutConnectState(ctx context.Context, st connect.State, now time.Time) error {
	err := s.write(ctx, func(ctx context.Context) error {
		if _, err := s.exec(ctx, `DELETE FROM connect_states WHERE expires_at < ?`, now.Add(-connectStateKeep).UnixMilli()); err != nil {
			return err
		}
		_, err := s.exec(ctx, `INSERT INTO connect_states (state_hash, user_id, server, channel_id, thread_ts, sealed, expires_at, used_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, 0)`, st.Hash, st.User, st.Server, st.Channel, st.ThreadTS, st.Sealed, st.Expires.UnixMilli())
		return err
	})
	if err != nil {
		return fmt.Errorf("put connect state: %w", err)
	}
	return nil
}

// UpdateConnectState replaces the sealed part of an unused state.
func (s *Store) UpdateConnectState(ctx context.Context, hash string, sealed []byte) (bool, error) {
	var ok bool
	err := s.write(ctx, func(ctx context.Context) error {
		var err error
		ok, err = oneRow(s.exec(ctx, `UPDATE connect_states SET sealed = ? WHERE state_hash = ? AND used_at = 0`, sealed, hash))
		return err
	})
	if err != nil {
		return false, fmt.Errorf("update connect state: %w", err)
	}
	return ok, nil
}

// ConnectState reads a state without taking it.
func (s *Store) ConnectState(ctx context.Context, hash string) (connect.State, bool, error) {
	st := connect.State{Hash: hash}
	var expires, used int64
	err := s.queryRow(ctx, `SELECT user_id, server, channel_id, thread_ts, sealed, expires_at, used_at FROM connect_states
		WHERE state_hash = ?`, hash).Scan(&st.User, &st.Server, &st.Channel, &st.ThreadTS, &st.Sealed, &expires, &used)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return connect.State{}, false, nil
	case err != nil:
		return connect.State{}, false, fmt.Errorf("connect state: %w", err)
	}
	st.Expires = fromUnixMilli(expires)
	if used != 0 {
		st.Used = fromUnixMilli(used)
	}
	return st, true, nil
}

// TakeConnectState marks a state used, once: one conditional UPDATE, so
// that two callbacks with the same state (a replay, two replicas) take it
// once between them.
func (s *Store) TakeConnectState(ctx context.Context, hash string, now time.Time) (connect.State, bool, bool, error) {
	var taken bool
	err := s.write(ctx, func(ctx context.Context) error {
		var err error
		taken, err = oneRow(s.exec(ctx, `UPDATE connect_states SET used_at = ? WHERE state_hash = ? AND used_at = 0`,
			max(now.UnixMilli(), 1), hash))
		return err
	})
	if err != nil {
		return connect.State{}, false, false, fmt.Errorf("take connect state: %w", err)
	}
	st, ok, err := s.ConnectState(ctx, hash)
	return st, ok, taken && ok, err
}
