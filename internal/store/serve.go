package store

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/session"
)

// The store serves the small interfaces the pipeline stages and the
// session manager declare, so that cmd hands it over as it is.
var (
	_ pipeline.Engagements = (*Store)(nil)
	_ pipeline.ThreadModes = (*Store)(nil)
	_ pipeline.ThreadLocks = (*Store)(nil)
	_ pipeline.SeenStore   = (*Store)(nil)
	_ pipeline.UnseenMarks = (*Store)(nil)
	_ session.Store        = Sessions{}
	_ session.Deferrer     = Sessions{}
)

// Engaged reports whether the bot is engaged in the thread; known is
// false when the thread has no row (pipeline.Engagements).
func (s *Store) Engaged(ctx context.Context, key string) (engaged, known bool, err error) {
	th, err := s.GetThread(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return false, false, nil
	}
	return th.Engaged, err == nil, err
}

// ThreadMode is the thread's own mode (/mode in the thread), else its
// channel's (/mode as a slash command, stored under "<channel>:"), else ""
// (pipeline.ThreadModes).
func (s *Store) ThreadMode(ctx context.Context, key string) (pipeline.Mode, error) {
	mode, err := s.ModeOf(ctx, key, channelKey(key))
	return pipeline.Mode(mode), err
}

// ThreadLock is the thread's /1on1 holder, else its channel's
// (pipeline.ThreadLocks).
func (s *Store) ThreadLock(ctx context.Context, key string) (string, error) {
	return s.LockHolder(ctx, key, channelKey(key))
}

// channelKey is the key slash commands store channel-wide state under.
func channelKey(threadKey string) string {
	channel, _, _ := strings.Cut(threadKey, ":")
	return pipeline.ThreadKey(channel, "")
}

// Sessions is the store as the session manager's Store and Deferrer: the
// session rows as session.Record. Store.Sessions makes it.
type Sessions struct {
	st     *Store
	shared bool
}

// Sessions returns the store as the session manager's. shared is set for
// a replica of a fleet: the other replicas' sessions are live, not left
// over.
func (s *Store) Sessions(shared bool) Sessions { return Sessions{st: s, shared: shared} }

// SessionByThread returns the thread's session, or an error matching
// ErrNotFound.
func (s Sessions) SessionByThread(ctx context.Context, key string) (session.Record, error) {
	r, err := s.st.SessionByThread(ctx, key)
	if err != nil {
		return session.Record{}, err
	}
	return session.Record{ID: r.ID, ThreadKey: r.ThreadKey, State: r.State, CreatedAt: r.CreatedAt, LastActivity: r.LastActivity}, nil
}

// CreateSession stores a new session (Store.CreateSession).
func (s Sessions) CreateSession(ctx context.Context, r session.Record) error {
	return s.st.CreateSession(ctx, sessionOf(r))
}

// DeferSession leaves a new session's row to its event's first write
// (Store.DeferSession). Not for a replica: another replica could create
// the thread's session meanwhile, and find out only at that write.
func (s Sessions) DeferSession(ctx context.Context, r session.Record, written func()) (bool, func(), error) {
	if s.shared {
		return false, nil, nil
	}
	return s.st.DeferSession(ctx, sessionOf(r), written)
}

// TouchSession records a state change and the time of last activity.
func (s Sessions) TouchSession(ctx context.Context, id, state string, at time.Time) error {
	return s.st.TouchSession(ctx, id, state, at)
}

// CloseAllSessions closes every live session left by the last run; a
// replica closes none.
func (s Sessions) CloseAllSessions(ctx context.Context) (int64, error) {
	if s.shared {
		return 0, nil
	}
	return s.st.CloseAllSessions(ctx)
}

func sessionOf(r session.Record) Session {
	return Session{ID: r.ID, ThreadKey: r.ThreadKey, State: r.State, CreatedAt: r.CreatedAt, LastActivity: r.LastActivity}
}
