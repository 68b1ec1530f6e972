package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// The counts of a team of personas (pipeline.Peers): peer_threads and
// peer_turns (migration 0017). Each take is one transaction under the
// writer lock (on Postgres the lock every process takes), so two replicas
// never both take the last turn a bound allows.

var _ pipeline.PeerTurns = (*Store)(nil)

// peerHour is the window of the hourly bound, and how often a thread's
// refusals are logged.
const peerHour = time.Hour

// TakePeerTurn counts one peer-admitted turn in the thread unless it would
// pass perPerson since the thread's last message of a person or perHour in
// the last hour (pipeline.PeerTurns).
func (s *Store) TakePeerTurn(ctx context.Context, threadKey string, perPerson, perHour int) (ok, tell bool, err error) {
	err = s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		now := s.now().UnixMilli()
		since := now - peerHour.Milliseconds()
		if _, err := s.txExec(ctx, tx, `INSERT INTO peer_threads (thread_key) VALUES (?) ON CONFLICT (thread_key) DO NOTHING`, threadKey); err != nil {
			return err
		}
		if _, err := s.txExec(ctx, tx, `DELETE FROM peer_turns WHERE thread_key = ? AND at <= ?`, threadKey, since); err != nil {
			return err
		}
		var sincePerson, hour int
		var toldAt int64
		if err := s.txQueryRow(ctx, tx, `SELECT since_person, told_at, (SELECT COUNT(*) FROM peer_turns WHERE thread_key = ?)
			FROM peer_threads WHERE thread_key = ?`, threadKey, threadKey).Scan(&sincePerson, &toldAt, &hour); err != nil {
			return err
		}
		if sincePerson < perPerson && hour < perHour {
			ok = true
			if _, err := s.txExec(ctx, tx, `INSERT INTO peer_turns (thread_key, at) VALUES (?, ?)`, threadKey, now); err != nil {
				return err
			}
			_, err := s.txExec(ctx, tx, `UPDATE peer_threads SET since_person = since_person + 1 WHERE thread_key = ?`, threadKey)
			return err
		}
		if toldAt <= since {
			tell = true
			_, err := s.txExec(ctx, tx, `UPDATE peer_threads SET told_at = ? WHERE thread_key = ?`, now, threadKey)
			return err
		}
		return nil
	})
	if err != nil {
		return false, false, fmt.Errorf("take peer turn %q: %w", threadKey, err)
	}
	return ok, tell, nil
}

// PersonSpoke starts the thread's count since a person's message again
// (pipeline.PeerTurns). It reads first: most threads have no peer turns,
// and a read takes no write lock.
func (s *Store) PersonSpoke(ctx context.Context, threadKey string) error {
	var n int
	err := s.queryRow(ctx, `SELECT since_person FROM peer_threads WHERE thread_key = ?`, threadKey).Scan(&n)
	if err == nil && n > 0 {
		err = s.write(ctx, func(ctx context.Context) error {
			_, err := s.exec(ctx, `UPDATE peer_threads SET since_person = 0 WHERE thread_key = ?`, threadKey)
			return err
		})
	}
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("person spoke %q: %w", threadKey, err)
	}
	return nil
}
