package store

import (
	"context"
	"log/slog"
	"time"

	"github.com/persona-runtime/agent/pkg/clock"
	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/session"
)

// Retry is the retry policy of the store calls of the stages before the
// agent (drop, engagement, auth, session): a call that failed in a way
// that may pass (IsTransient: SQLite busy, a Postgres connection lost or a
// serialization failure) is made again, so that a moment's trouble in the
// database costs the person a pause, not their message. Only calls that
// can run twice without doing anything twice are retried: reads, and
// writes that set a value (an engagement, a session's activity) or insert
// a row whose conflict the caller already handles (a new session). The
// retrying views of the stages' stores are RetryThreads, RetrySeen and
// RetrySessions.
//
// The zero value retries with RetryPauses on the system clock and logs
// nothing.
type Retry struct {
	// Pauses are the waits before each new try: len(Pauses) retries. Nil:
	// RetryPauses; empty and not nil: no retry.
	Pauses []time.Duration
	// Fault, set only by tests, is asked before each try with the call's
	// name: its error, when not nil, is the try's.
	Fault func(op string) error
	// Log, when set, is told of each retry.
	Log *slog.Logger
	// Clock is what the pauses wait on; nil: the system clock.
	Clock clock.Clock
}

// RetryPauses: SQLite's busy_timeout (5 s) already waited inside the
// failed call, and a Postgres pool reconnects at once; three more tries
// over 2.6 s cover a failover or a checkpoint, and the event's own
// timeout (30 min) is far away.
var RetryPauses = []time.Duration{100 * time.Millisecond, 500 * time.Millisecond, 2 * time.Second}

// Do runs fn, and again after each pause while it fails transiently and
// ctx lasts; op names the call (for Fault and the log).
func (r Retry) Do(ctx context.Context, op string, fn func() error) error {
	pauses := r.Pauses
	if pauses == nil {
		pauses = RetryPauses
	}
	for attempt := 0; ; attempt++ {
		var err error
		if r.Fault != nil {
			err = r.Fault(op)
		}
		if err == nil {
			err = fn()
		}
		if err == nil || attempt >= len(pauses) || !IsTransient(err) {
			return err
		}
		if r.Log != nil {
			r.Log.WarnContext(ctx, "store: transient failure, trying again", "op", op, "attempt", attempt+1,
				"pause", pauses[attempt].String(), "err", err)
		}
		if !r.pause(ctx, pauses[attempt]) {
			return err
		}
	}
}

// pause waits d on the clock; false when ctx ended first.
func (r Retry) pause(ctx context.Context, d time.Duration) bool {
	elapsed := make(chan struct{})
	t := clock.Or(r.Clock).AfterFunc(d, func() { close(elapsed) })
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-elapsed:
		return true
	}
}

// Threads are the store's thread rows as the stages read and write them.
type Threads interface {
	pipeline.Engagements
	pipeline.ThreadModes
	pipeline.ThreadLocks
}

// RetryThreads is Threads with its calls retried.
type RetryThreads struct {
	Threads
	Retry Retry
}

var _ Threads = RetryThreads{}

func (t RetryThreads) Engaged(ctx context.Context, key string) (engaged, known bool, err error) {
	err = t.Retry.Do(ctx, "engaged", func() (err error) {
		engaged, known, err = t.Threads.Engaged(ctx, key)
		return err
	})
	return engaged, known, err
}

// Engage sets a value and keeps a mark it finds: a second try after a
// first that landed sets the same and returns the same mark.
func (t RetryThreads) Engage(ctx context.Context, key, channelID, rootTS, ts string) (unseen string, err error) {
	err = t.Retry.Do(ctx, "engage", func() (err error) {
		unseen, err = t.Threads.Engage(ctx, key, channelID, rootTS, ts)
		return err
	})
	return unseen, err
}

// Disengage sets a value and keeps the first mark: a second try sets the
// same.
func (t RetryThreads) Disengage(ctx context.Context, key, ts string) error {
	return t.Retry.Do(ctx, "disengage", func() error {
		return t.Threads.Disengage(ctx, key, ts)
	})
}

func (t RetryThreads) ThreadMode(ctx context.Context, key string) (mode pipeline.Mode, err error) {
	err = t.Retry.Do(ctx, "thread_mode", func() (err error) {
		mode, err = t.Threads.ThreadMode(ctx, key)
		return err
	})
	return mode, err
}

func (t RetryThreads) ThreadLock(ctx context.Context, key string) (holder string, err error) {
	err = t.Retry.Do(ctx, "thread_lock", func() (err error) {
		holder, err = t.Threads.ThreadLock(ctx, key)
		return err
	})
	return holder, err
}

// RetrySeen retries the drop stage's redelivery read. MarkEvent is not
// retried: had a first try landed before its connection failed, the
// second would find the key and drop the person's message as its own
// duplicate. (With the inbox, a message's key is marked with its inbox
// record and MarkEvent is not called for it.)
type RetrySeen struct {
	pipeline.SeenStore
	Retry Retry
}

func (s RetrySeen) EventSeen(ctx context.Context, key string) (seen bool, err error) {
	err = s.Retry.Do(ctx, "event_seen", func() (err error) {
		seen, err = s.SeenStore.EventSeen(ctx, key)
		return err
	})
	return seen, err
}

// RetrySessions is the store's sessions with their event-path calls
// retried. A CreateSession whose first try landed fails the second with a
// conflict, which the session manager reads as a session created
// meanwhile and loads: the same row.
type RetrySessions struct {
	Sessions
	Retry Retry
}

var (
	_ session.Store    = RetrySessions{}
	_ session.Deferrer = RetrySessions{}
)

func (s RetrySessions) SessionByThread(ctx context.Context, key string) (rec session.Record, err error) {
	err = s.Retry.Do(ctx, "session_by_thread", func() (err error) {
		rec, err = s.Sessions.SessionByThread(ctx, key)
		return err
	})
	return rec, err
}

func (s RetrySessions) CreateSession(ctx context.Context, rec session.Record) error {
	return s.Retry.Do(ctx, "create_session", func() error { return s.Sessions.CreateSession(ctx, rec) })
}

// TouchSession sets a state and a time: a second try sets the same.
func (s RetrySessions) TouchSession(ctx context.Context, id, state string, at time.Time) error {
	return s.Retry.Do(ctx, "touch_session", func() error { return s.Sessions.TouchSession(ctx, id, state, at) })
}
