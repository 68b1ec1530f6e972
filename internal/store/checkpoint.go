package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"github.com/uptrace/bun/driver/sqliteshim"
)

// SQLite copies the WAL back into the database file (a checkpoint) in the
// commit that takes the WAL past its autocheckpoint size (1,000 pages):
// that commit copies the pages and syncs the file before it returns, a few
// milliseconds on the path of whichever message made it (the runtime's own
// time per turn at p99 in the bench: 5.3–7.4 ms with those checkpoints,
// 1.7–2.4 ms with this). A file store checkpoints in the background, every
// checkpointEvery writes, PASSIVE: beside its readers and its writer,
// never waiting for them. The WAL thus stays well below the autocheckpoint
// size, which remains as the backstop when the checkpointer falls behind,
// and for the other processes that open the file (the CLI's commands).
// The checkpoints run on a connection of their own, opened for each and
// closed after it: the store's pool is its one connection (maxOpenConns),
// which a checkpoint's sync would hold for its duration, and an idle
// store keeps no second connection open.
const checkpointEvery = 32

// checkpointer runs the background checkpoints of a file store.
type checkpointer struct {
	db     *sql.DB       // the checkpoints' own pool: no idle connection
	kick   chan struct{} // capacity 1: a checkpoint is due
	stop   context.CancelFunc
	done   chan struct{}
	writes int // since the last kick; guarded by the writer slot
	once   sync.Once
}

// startCheckpointer starts s's background checkpoints.
func (s *Store) startCheckpointer() error {
	db, err := sql.Open(sqliteshim.ShimName, s.source)
	if err != nil {
		return fmt.Errorf("checkpoints: %w", err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(0)
	ctx, stop := context.WithCancel(context.Background())
	c := &checkpointer{db: db, kick: make(chan struct{}, 1), stop: stop, done: make(chan struct{})}
	s.ckpt = c
	go func() {
		defer close(c.done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-c.kick:
				s.checkpoint(ctx)
			}
		}
	}()
	return nil
}

// checkpoint copies what it can of the WAL into the database file,
// PASSIVE: the frames a reader still needs stay for the next one.
func (s *Store) checkpoint(ctx context.Context) {
	var busy, frames, copied int
	if err := s.ckpt.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied); err != nil {
		if ctx.Err() == nil {
			s.logger.Warn("store: WAL checkpoint", "err", err)
		}
		return
	}
	s.logger.Debug("store: WAL checkpoint", "wal_frames", frames, "copied", copied)
}

// wrote counts a use of the writer slot and asks for a checkpoint every
// checkpointEvery of them; called holding the slot. (A few uses only note
// what a later write owes: the checkpoint then comes a little early.)
func (s *Store) wrote() {
	c := s.ckpt
	if c == nil {
		return
	}
	if c.writes++; c.writes < checkpointEvery {
		return
	}
	c.writes = 0
	select {
	case c.kick <- struct{}{}:
	default: // one is due already
	}
}

// stopCheckpointer ends the background checkpoints and waits for the one
// running, if any (it is interrupted). Later calls do nothing.
func (s *Store) stopCheckpointer() {
	if c := s.ckpt; c != nil {
		c.once.Do(func() {
			c.stop()
			<-c.done
			_ = c.db.Close()
		})
	}
}
