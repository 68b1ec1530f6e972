package service

import (
	"context"
	"log/slog"
	"time"

	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/session"
)

// storeRetry tries a store call of the stages before the agent (drop,
// engagement, auth, session) again when it failed in a way that may pass
// (store.IsTransient: SQLite busy, a Postgres connection lost or a
// serialization failure), so that a moment's trouble in the database costs
// the person a pause, not their message. Only calls that can run twice
// without doing anything twice are retried: reads, and writes that set a
// value (an engagement, a session's activity) or insert a row whose
// conflict the caller already handles (a new session).
type storeRetry struct {
	// pauses are the waits before each new try: len(pauses) retries.
	pauses []time.Duration
	// fault, set only by tests (Deps.StoreFault), fails the calls.
	fault func(op string) error
	log   *slog.Logger
}

// StoreRetryPauses: SQLite's busy_timeout (5 s) already waited inside the
// failed call, and a Postgres pool reconnects at once; three more tries
// over 2.6 s cover a failover or a checkpoint, and the event's own
// timeout (30 min) is far away.
var StoreRetryPauses = []time.Duration{100 * time.Millisecond, 500 * time.Millisecond, 2 * time.Second}

// storeRetry is the retry of the stages' store calls.
func (s *Service) storeRetry() storeRetry {
	pauses := s.deps.StoreRetryPauses
	if pauses == nil {
		pauses = StoreRetryPauses
	}
	return storeRetry{pauses: pauses, fault: s.deps.StoreFault, log: s.log}
}

// do runs fn, and again after each pause while it fails transiently and
// ctx lasts.
func (r storeRetry) do(ctx context.Context, op string, fn func() error) error {
	for attempt := 0; ; attempt++ {
		var err error
		if r.fault != nil {
			err = r.fault(op)
		}
		if err == nil {
			err = fn()
		}
		if err == nil || attempt >= len(r.pauses) || !store.IsTransient(err) {
			return err
		}
		r.log.WarnContext(ctx, "store: transient failure, trying again", "op", op, "attempt", attempt+1,
			"pause", r.pauses[attempt].String(), "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(r.pauses[attempt]):
		}
	}
}

// threads are the store's thread rows as the stages read and write them.
type threads interface {
	pipeline.Engagements
	pipeline.ThreadModes
	pipeline.ThreadLocks
}

// retryThreads is threads with its calls retried.
type retryThreads struct {
	threads
	r storeRetry
}

var (
	_ pipeline.Engagements = retryThreads{}
	_ pipeline.ThreadModes = retryThreads{}
	_ pipeline.ThreadLocks = retryThreads{}
)

func (t retryThreads) Engaged(ctx context.Context, key string) (engaged, known bool, err error) {
	err = t.r.do(ctx, "engaged", func() (err error) {
		engaged, known, err = t.threads.Engaged(ctx, key)
		return err
	})
	return engaged, known, err
}

// Engage sets a value and keeps a mark it finds: a second try after a
// first that landed sets the same and returns the same mark.
func (t retryThreads) Engage(ctx context.Context, key, channelID, rootTS, ts string) (unseen string, err error) {
	err = t.r.do(ctx, "engage", func() (err error) {
		unseen, err = t.threads.Engage(ctx, key, channelID, rootTS, ts)
		return err
	})
	return unseen, err
}

// Disengage sets a value and keeps the first mark: a second try sets the
// same.
func (t retryThreads) Disengage(ctx context.Context, key, ts string) error {
	return t.r.do(ctx, "disengage", func() error {
		return t.threads.Disengage(ctx, key, ts)
	})
}

func (t retryThreads) ThreadMode(ctx context.Context, key string) (mode pipeline.Mode, err error) {
	err = t.r.do(ctx, "thread_mode", func() (err error) {
		mode, err = t.threads.ThreadMode(ctx, key)
		return err
	})
	return mode, err
}

func (t retryThreads) ThreadLock(ctx context.Context, key string) (holder string, err error) {
	err = t.r.do(ctx, "thread_lock", func() (err error) {
		holder, err = t.threads.ThreadLock(ctx, key)
		return err
	})
	return holder, err
}

// retrySeen retries the drop stage's redelivery read. MarkEvent is not
// retried: had a first try landed before its connection failed, the
// second would find the key and drop the person's message as its own
// duplicate. (With the inbox, a message's key is marked with its inbox
// record and MarkEvent is not called for it.)
type retrySeen struct {
	pipeline.SeenStore
	r storeRetry
}

func (s retrySeen) EventSeen(ctx context.Context, key string) (seen bool, err error) {
	err = s.r.do(ctx, "event_seen", func() (err error) {
		seen, err = s.SeenStore.EventSeen(ctx, key)
		return err
	})
	return seen, err
}

// retrySessions is the store's sessions with their event-path calls
// retried. A CreateSession whose first try landed fails the second with a
// conflict, which the session manager reads as a session created
// meanwhile and loads: the same row.
type retrySessions struct {
	store.Sessions
	r storeRetry
}

var (
	_ session.Store    = retrySessions{}
	_ session.Deferrer = retrySessions{}
)

func (s retrySessions) SessionByThread(ctx context.Context, key string) (rec session.Record, err error) {
	err = s.r.do(ctx, "session_by_thread", func() (err error) {
		rec, err = s.Sessions.SessionByThread(ctx, key)
		return err
	})
	return rec, err
}

func (s retrySessions) CreateSession(ctx context.Context, rec session.Record) error {
	return s.r.do(ctx, "create_session", func() error { return s.Sessions.CreateSession(ctx, rec) })
}

// TouchSession sets a state and a time: a second try sets the same.
func (s retrySessions) TouchSession(ctx context.Context, id, state string, at time.Time) error {
	return s.r.do(ctx, "touch_session", func() error { return s.Sessions.TouchSession(ctx, id, state, at) })
}
