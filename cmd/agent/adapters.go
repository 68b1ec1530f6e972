package main

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/session"
)

// threadStore adapts the store's thread rows to the small interfaces the
// pipeline stages declare. noBypass is set where bypass is refused (no
// kernel sandbox; doors.go).
type threadStore struct {
	st       *store.Store
	noBypass bool
}

var (
	_ pipeline.Engagements = threadStore{}
	_ pipeline.ThreadModes = threadStore{}
	_ pipeline.ThreadLocks = threadStore{}
	_ pipeline.SeenStore   = (*store.Store)(nil)
)

func (t threadStore) thread(ctx context.Context, key string) (store.Thread, bool, error) {
	th, err := t.st.GetThread(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return store.Thread{}, false, nil
	}
	return th, err == nil, err
}

func (t threadStore) Engaged(ctx context.Context, key string) (bool, bool, error) {
	th, known, err := t.thread(ctx, key)
	return th.Engaged, known, err
}

func (t threadStore) SetEngaged(ctx context.Context, key, channelID, rootTS string, engaged bool) error {
	return t.st.SetEngaged(ctx, key, channelID, rootTS, engaged)
}

// ThreadMode is the thread's own mode (/mode in the thread), else the
// channel's (/mode as a slash command, stored under "<channel>:"). Where
// bypass is refused, a bypass stored in an earlier run works as ask.
func (t threadStore) ThreadMode(ctx context.Context, key string) (pipeline.Mode, error) {
	mode, err := t.st.ModeOf(ctx, key, channelKey(key))
	if t.noBypass && pipeline.Mode(mode) == pipeline.ModeBypass {
		return pipeline.ModeAsk, err
	}
	return pipeline.Mode(mode), err
}

// ThreadLock is the thread's /1on1 holder, else the channel's.
func (t threadStore) ThreadLock(ctx context.Context, key string) (string, error) {
	return t.st.LockHolder(ctx, key, channelKey(key))
}

// channelKey is the key slash commands store channel-wide state under.
func channelKey(threadKey string) string {
	channel, _, _ := strings.Cut(threadKey, ":")
	return pipeline.ThreadKey(channel, "")
}

// sessionStore adapts the store's session rows to session.Store. shared is
// set for a replica: the other replicas' sessions are live, not left over.
type sessionStore struct {
	st     *store.Store
	shared bool
}

var (
	_ session.Store    = sessionStore{}
	_ session.Deferrer = sessionStore{}
)

func (s sessionStore) SessionByThread(ctx context.Context, key string) (session.Record, error) {
	r, err := s.st.SessionByThread(ctx, key)
	if err != nil {
		return session.Record{}, err
	}
	return session.Record{ID: r.ID, ThreadKey: r.ThreadKey, State: r.State, CreatedAt: r.CreatedAt, LastActivity: r.LastActivity}, nil
}

func (s sessionStore) CreateSession(ctx context.Context, r session.Record) error {
	return s.st.CreateSession(ctx, store.Session{ID: r.ID, ThreadKey: r.ThreadKey, State: r.State, CreatedAt: r.CreatedAt, LastActivity: r.LastActivity})
}

// DeferSession leaves a new session's row to its event's first write
// (store.DeferSession). Not for a replica: another replica could create
// the thread's session meanwhile, and find out only at that write.
func (s sessionStore) DeferSession(ctx context.Context, r session.Record, written func()) (bool, func(), error) {
	if s.shared {
		return false, nil, nil
	}
	return s.st.DeferSession(ctx, store.Session{ID: r.ID, ThreadKey: r.ThreadKey, State: r.State, CreatedAt: r.CreatedAt, LastActivity: r.LastActivity}, written)
}

func (s sessionStore) TouchSession(ctx context.Context, id, state string, at time.Time) error {
	return s.st.TouchSession(ctx, id, state, at)
}

func (s sessionStore) CloseAllSessions(ctx context.Context) (int64, error) {
	if s.shared {
		return 0, nil
	}
	return s.st.CloseAllSessions(ctx)
}
