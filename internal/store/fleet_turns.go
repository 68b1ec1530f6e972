package store

import (
	"context"
	"fmt"
)

// TurnStarter returns who started the turn that another replica runs in
// the thread (channel, root ts): the person of the oldest event of the
// thread that a live replica other than this one is running. The event
// being handled here (an /abort typed at this replica) is this replica's
// own, so it is never the answer. ok is false when no such event is found.
func (f *Fleet) TurnStarter(ctx context.Context, channelID, threadTS string) (userID string, ok bool, err error) {
	rows, err := f.s.db.DB.QueryContext(ctx, `SELECT owner, user_id FROM inbox
		WHERE channel_id = $1 AND thread_ts = $2 AND owner != $3 AND state IN ($4, $5)
		ORDER BY received_at, event_id`,
		channelID, threadTS, f.id, InboxRunning, InboxAnswering)
	if err != nil {
		return "", false, fmt.Errorf("fleet: turn starter: %w", err)
	}
	type row struct{ owner, user string }
	var found []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.owner, &r.user); err != nil {
			rows.Close()
			return "", false, fmt.Errorf("fleet: turn starter: %w", err)
		}
		found = append(found, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return "", false, fmt.Errorf("fleet: turn starter: %w", err)
	}
	// A dead replica's rows wait to be taken over: its turn runs nowhere.
	for _, r := range found {
		alive, err := f.Alive(ctx, r.owner)
		if err != nil {
			return "", false, err
		}
		if alive {
			return r.user, true, nil
		}
	}
	return "", false, nil
}
