package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/persona-runtime/agent/pkg/clock"
)

// Fleet is what lets several processes of one persona share a Postgres
// database (replicas behind a rolling deploy, or a standby): it is built
// on Postgres's session advisory locks, which die with the connection that
// holds them, so a replica that dies releases everything at once.
//
//   - Each replica holds a lock named by its id for as long as it runs; a
//     replica is alive exactly while that lock is held.
//   - A thread's turn holds the thread's lock: the events of one thread run
//     one at a time across replicas.
//   - Inbox rows carry the id of the replica that received (or took over)
//     them; the rows of a dead replica are taken over by a live one.
//   - Notify and Listen carry card clicks to the replica whose turn waits
//     for them.
//
// The locks live on one connection of their own (the keeper): its loss
// would silently drop them, so Lost is closed when it fails and the
// replica must stop.
type Fleet struct {
	s  *Store
	id string

	mu     sync.Mutex // the keeper is one session: one statement at a time
	keeper *sql.Conn
	lost   chan struct{}
	once   sync.Once
	done   chan struct{}
}

// fleetPing is how often the keeper connection is checked.
const fleetPing = 2 * time.Second

// fleetLockPoll is the pause between tries of a busy thread lock.
const fleetLockPoll = 25 * time.Millisecond

// ErrNotShared is returned by OpenFleet on a SQLite store: one process
// owns a SQLite file.
var ErrNotShared = errors.New("store: replicas need a shared (Postgres) database")

// OpenFleet joins the fleet as replica id (unique per process): it takes
// the replica's lock on a connection kept for the purpose. Close leaves.
func (s *Store) OpenFleet(ctx context.Context, id string) (*Fleet, error) {
	if !s.pg {
		return nil, ErrNotShared
	}
	if id == "" || strings.ContainsAny(id, " \t\n") {
		return nil, fmt.Errorf("fleet: bad replica id %q", id)
	}
	conn, err := s.db.DB.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	var ok bool
	if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1)", lockKey("replica", id)).Scan(&ok); err != nil {
		return nil, errors.Join(fmt.Errorf("fleet: %w", err), conn.Close())
	}
	if !ok {
		return nil, errors.Join(fmt.Errorf("fleet: replica id %q is in use by a live process", id), conn.Close())
	}
	f := &Fleet{s: s, id: id, keeper: conn, lost: make(chan struct{}), done: make(chan struct{})}
	s.replica = id
	go f.watch()
	return f, nil
}

// ID is this replica's id.
func (f *Fleet) ID() string { return f.id }

// Lost is closed when the keeper connection failed: the locks are gone,
// another replica may take this one's events over, and this one must stop.
func (f *Fleet) Lost() <-chan struct{} { return f.lost }

// Close leaves the fleet: the locks go with the keeper connection.
func (f *Fleet) Close() error {
	f.once.Do(func() { close(f.done) })
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.keeper == nil {
		return nil
	}
	// Release the locks now (the server frees them only once it notices
	// the connection is gone), then discard rather than return the session
	// to the pool (ErrBadConn makes database/sql close the connection).
	ctx, cancel := context.WithTimeout(context.Background(), fleetPing)
	_, _ = f.keeper.ExecContext(ctx, "SELECT pg_advisory_unlock_all()")
	cancel()
	_ = f.keeper.Raw(func(any) error { return driver.ErrBadConn })
	err := f.keeper.Close()
	f.keeper = nil
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) {
		err = nil // closed by the discard above, as meant
	}
	return err
}

// watch pings the keeper until Close, closing lost on the first failure.
func (f *Fleet) watch() {
	t, tick := f.s.clock.NewTicker(fleetPing)
	defer t.Stop()
	for {
		select {
		case <-f.done:
			return
		case <-tick:
		}
		ctx, cancel := context.WithTimeout(context.Background(), fleetPing)
		err := f.exec(ctx, func(c *sql.Conn) error { return c.PingContext(ctx) })
		cancel()
		if err != nil {
			select {
			case <-f.done:
				return
			default:
			}
			f.s.logger.Error("fleet: the lock connection failed; this replica must stop", "replica", f.id, "err", err)
			close(f.lost)
			return
		}
	}
}

// exec runs fn on the keeper, one at a time.
func (f *Fleet) exec(ctx context.Context, fn func(c *sql.Conn) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.keeper == nil {
		return errors.New("fleet: closed")
	}
	return fn(f.keeper)
}

// tryLock takes the advisory lock named kind+name if it is free.
func (f *Fleet) tryLock(ctx context.Context, kind, name string) (bool, error) {
	var ok bool
	err := f.exec(ctx, func(c *sql.Conn) error {
		return c.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1)", lockKey(kind, name)).Scan(&ok)
	})
	return ok, err
}

// unlock releases the advisory lock named kind+name.
func (f *Fleet) unlock(ctx context.Context, kind, name string) error {
	return f.exec(ctx, func(c *sql.Conn) error {
		_, err := c.ExecContext(ctx, "SELECT pg_advisory_unlock($1)", lockKey(kind, name))
		return err
	})
}

// LockThread waits for the thread's lock, honouring ctx; unlock releases
// it. It is not reentrant: a thread's events come one at a time from the
// gateway's per-thread queue.
func (f *Fleet) LockThread(ctx context.Context, threadKey string) (unlock func(), err error) {
	for {
		ok, err := f.tryLock(ctx, "thread", threadKey)
		if err != nil {
			if ctx.Err() != nil {
				// The caller's deadline cut the attempt short (the driver
				// then reports its connection as bad): it is the answer.
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("fleet: lock thread %s: %w", threadKey, err)
		}
		if ok {
			return func() {
				if err := f.unlock(context.Background(), "thread", threadKey); err != nil {
					f.s.logger.Warn("fleet: thread lock not released", "thread", threadKey, "err", err)
				}
			}, nil
		}
		if err := clock.Sleep(ctx, f.s.clock, fleetLockPoll); err != nil {
			return nil, err
		}
	}
}

// Alive reports whether the replica named id runs: its lock is held. This
// replica is alive.
func (f *Fleet) Alive(ctx context.Context, id string) (bool, error) {
	if id == f.id {
		return true, nil
	}
	free, err := f.tryLock(ctx, "replica", id)
	if err != nil || !free {
		return true, err
	}
	return false, f.unlock(ctx, "replica", id)
}

// Earlier says what a thread's older messages, received and not settled,
// ask of a newer one about to run.
type Earlier int

const (
	// EarlierNone: nothing older is pending; run.
	EarlierNone Earlier = iota
	// EarlierElsewhere: a live replica holds an older one; wait for it.
	EarlierElsewhere
	// EarlierHere: an older one is this replica's, or a dead replica's
	// that this one takes over; let it go first.
	EarlierHere
)

// EarlierPending tells whether the thread (channel, root ts) has messages
// older than msgKey (channel:ts) that are unfinished — received, running or
// answering (an answer about to be posted, which a replica's death leaves
// to be read back or run again) — and whose: so that a thread's messages
// run in order whichever replica got them.
func (f *Fleet) EarlierPending(ctx context.Context, channelID, threadTS, msgKey string) (Earlier, error) {
	rows, err := f.s.db.DB.QueryContext(ctx, `SELECT DISTINCT owner FROM inbox
		WHERE channel_id = $1 AND thread_ts = $2 AND msg_key != '' AND msg_key < $3 AND state IN ($4, $5, $6)`,
		channelID, threadTS, msgKey, InboxReceived, InboxRunning, InboxAnswering)
	if err != nil {
		return EarlierNone, fmt.Errorf("fleet: earlier events: %w", err)
	}
	var owners []string
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			rows.Close()
			return EarlierNone, err
		}
		owners = append(owners, o)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return EarlierNone, err
	}
	out := EarlierNone
	for _, o := range owners {
		alive := false
		if o != "" && o != f.id {
			if alive, err = f.Alive(ctx, o); err != nil {
				return EarlierNone, err
			}
		}
		if alive {
			return EarlierElsewhere, nil
		}
		out = EarlierHere
	}
	return out, nil
}

// ClaimOrphans takes over the unfinished inbox events of replicas that are
// gone (rows with no owner are a single process's, from before the fleet:
// gone too), and returns them oldest first. Each row is claimed with one
// conditional update, so two survivors never take the same one.
func (f *Fleet) ClaimOrphans(ctx context.Context) ([]InboxEntry, error) {
	entries, err := f.s.InboxUnfinished(ctx)
	if err != nil {
		return nil, err
	}
	dead := map[string]bool{}
	var out []InboxEntry
	for _, e := range entries {
		if e.Owner == f.id {
			continue
		}
		gone, known := dead[e.Owner]
		if !known {
			alive := false
			if e.Owner != "" {
				if alive, err = f.Alive(ctx, e.Owner); err != nil {
					return nil, err
				}
			}
			gone, dead[e.Owner] = !alive, !alive
		}
		if !gone {
			continue
		}
		var claimed bool
		err := f.s.write(ctx, func(ctx context.Context) error {
			var err error
			claimed, err = oneRow(f.s.exec(ctx, `UPDATE inbox SET owner = ?, updated_at = ? WHERE event_id = ? AND owner = ? AND state IN (?, ?, ?)`,
				f.id, f.s.now().UnixMilli(), e.EventID, e.Owner, InboxReceived, InboxRunning, InboxAnswering))
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("fleet: claim %s: %w", e.EventID, err)
		}
		if claimed {
			e.Owner = f.id
			out = append(out, e)
		}
	}
	return out, nil
}

// Notify sends payload on channel to every replica listening.
func (f *Fleet) Notify(ctx context.Context, channel, payload string) error {
	return pgdriver.Notify(ctx, f.s.db, channel, payload)
}

// Listen calls fn with the channel and payload of every notification on
// channels until ctx is done.
func (f *Fleet) Listen(ctx context.Context, fn func(channel, payload string), channels ...string) error {
	ln := pgdriver.NewListener(f.s.db)
	defer ln.Close()
	if err := ln.Listen(ctx, channels...); err != nil {
		return fmt.Errorf("fleet: listen %v: %w", channels, err)
	}
	ch := ln.Channel()
	for {
		select {
		case <-ctx.Done():
			return nil
		case n, ok := <-ch:
			if !ok {
				return nil
			}
			fn(n.Channel, n.Payload)
		}
	}
}

// ThreadBusy reports whether a turn of the thread runs at some replica:
// its lock is held.
func (f *Fleet) ThreadBusy(ctx context.Context, threadKey string) (bool, error) {
	free, err := f.tryLock(ctx, "thread", threadKey)
	if err != nil || !free {
		return !free, err
	}
	return false, f.unlock(ctx, "thread", threadKey)
}

// lockKey is the advisory lock key of a name: 64 bits of its FNV hash.
func lockKey(kind, name string) int64 {
	h := fnv.New64a()
	h.Write([]byte("agent:" + kind + ":"))
	h.Write([]byte(name))
	return int64(h.Sum64())
}
