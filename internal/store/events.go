package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// EventSeen reports whether MarkEvent has recorded key. It only reads.
func (s *Store) EventSeen(ctx context.Context, key string) (bool, error) {
	var seen bool
	err := s.queryRow(ctx,
		"SELECT EXISTS (SELECT 1 FROM processed_events WHERE event_key = ?)", key).Scan(&seen)
	if err != nil {
		return false, fmt.Errorf("event seen: %w", err)
	}
	return seen, nil
}

// MarkEvent records key as processed at the current time. fresh is true
// only for the one caller that recorded it first: the check and the insert
// are a single statement, so concurrent deliveries of the same event cannot
// both see fresh.
func (s *Store) MarkEvent(ctx context.Context, key string) (fresh bool, err error) {
	if key == "" {
		return false, errors.New("mark event: empty key")
	}
	err = s.write(ctx, func(ctx context.Context) error {
		fresh, err = oneRow(s.exec(ctx, qMarkEvent, key, s.now().UnixMilli()))
		return err
	})
	if err != nil {
		return false, fmt.Errorf("mark event: %w", err)
	}
	return fresh, nil
}

// PruneEvents deletes the keys recorded before the given time and returns
// how many it deleted. Keep them longer than the platform redelivers.
func (s *Store) PruneEvents(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := s.write(ctx, func(ctx context.Context) error {
		res, err := s.exec(ctx,
			"DELETE FROM processed_events WHERE seen_at < ?", before.UnixMilli())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("prune events: %w", err)
	}
	return n, nil
}
