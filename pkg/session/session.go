package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/persona-runtime/agent/pkg/clock"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// States of a session.
const (
	StateLive   = "live"
	StateClosed = "closed"
)

// Record is a session as the store keeps it.
type Record struct {
	ID           string
	ThreadKey    string
	State        string
	CreatedAt    time.Time
	LastActivity time.Time
}

// ErrNotFound is returned by Store.SessionByThread for a thread without a
// session; stores may wrap their own sentinel as long as errors.Is matches
// the value passed in Options.NotFound.
var ErrNotFound = errors.New("session not found")

// Store is the persistence the Manager needs.
type Store interface {
	// SessionByThread returns the thread's session or an error matching
	// the Manager's not-found sentinel.
	SessionByThread(ctx context.Context, threadKey string) (Record, error)
	// CreateSession stores a new session.
	CreateSession(ctx context.Context, r Record) error
	// TouchSession records a state change and the time of last activity.
	TouchSession(ctx context.Context, id, state string, at time.Time) error
	// CloseAllSessions marks every session closed (at start).
	CloseAllSessions(ctx context.Context) (int64, error)
}

// Deferrer is a Store that can leave a new session's row to the first
// write of the event it is created for, in that write's transaction.
type Deferrer interface {
	// DeferSession reports false, doing nothing, when it cannot (the
	// Manager creates the row at once then). written is called once the
	// row is stored; cancel withdraws it if it is not yet.
	DeferSession(ctx context.Context, r Record, written func()) (deferred bool, cancel func(), err error)
}

// Options configure a Manager.
type Options struct {
	Store Store
	// NotFound is the sentinel the store's SessionByThread returns for a
	// missing session (default ErrNotFound).
	NotFound error
	// NewID makes session ids.
	NewID func() string
	// Idle is how long a session stays live without activity.
	Idle time.Duration
	// Live is agent_sessions_live.
	Live prometheus.Gauge
	// Clock times the sessions' activity and their idle timers (default
	// clock.System).
	Clock clock.Clock
	Log   *slog.Logger
	// OnClose, when set, is called after a session closed (idle or
	// shutdown), outside the Manager's lock.
	OnClose func(id string)
	// OnIdle, when set, is called after a session closed because its
	// thread fell idle (not at shutdown: the next start resumes those),
	// outside the Manager's lock but before a new message of the thread
	// can resume it, so that what it tells the platform lands first.
	OnIdle func(ctx context.Context, threadKey string)
}

// Manager owns the live sessions. It implements pipeline.Sessions.
type Manager struct {
	opt Options

	mu   sync.Mutex
	live map[string]*Session // by thread key
	// closing holds the threads whose idle close is being written; an
	// Acquire of such a thread waits for it, so the close can never land
	// after the resume.
	closing map[string]chan struct{}
}

var _ pipeline.Sessions = (*Manager)(nil)

// Session is one thread's agent session.
type Session struct {
	id        string
	threadKey string

	// empty: created by this Manager, its history not read yet.
	empty atomic.Bool
	// written: the store has its row. A new session's row may be left
	// to its event's first write (Deferrer); until then rec is what to
	// write.
	written atomic.Bool
	rec     Record

	// guarded by Manager.mu
	busy  int
	timer clock.Timer
	gen   uint64
}

// ID is the session id.
func (s *Session) ID() string { return s.id }

// ThreadKey is the thread the session belongs to.
func (s *Session) ThreadKey() string { return s.threadKey }

// TakeEmpty reports, once, that the session was created here and so has
// no history yet: its first turn need not read it from the store.
func (s *Session) TakeEmpty() bool { return s.empty.Swap(false) }

// New returns a Manager. It closes every session the store still has as
// live: after a restart nothing is live until its thread speaks again.
func New(ctx context.Context, o Options) (*Manager, error) {
	if o.Store == nil || o.NewID == nil || o.Log == nil {
		return nil, errors.New("session: New needs Store, NewID and Log")
	}
	if o.NotFound == nil {
		o.NotFound = ErrNotFound
	}
	if o.Clock == nil {
		o.Clock = clock.System
	}
	if o.Idle <= 0 {
		o.Idle = 15 * time.Minute
	}
	if o.Live != nil {
		o.Live.Set(0)
	}
	if n, err := o.Store.CloseAllSessions(ctx); err != nil {
		return nil, fmt.Errorf("close sessions left live: %w", err)
	} else if n > 0 {
		o.Log.Info("closed sessions left live by the last run", "count", n)
	}
	return &Manager{opt: o, live: map[string]*Session{}, closing: map[string]chan struct{}{}}, nil
}

// Acquire returns the session of ev's thread: the live one, or the stored
// one resumed (closed → live), or a new one. release ends the caller's use
// and restarts the idle clock.
func (m *Manager) Acquire(ctx context.Context, ev *pipeline.Event) (pipeline.Session, func(), error) {
	key := ev.ThreadKey()
	m.mu.Lock()
	for {
		done, ok := m.closing[key]
		if !ok {
			break
		}
		m.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		m.mu.Lock()
	}
	if s, ok := m.live[key]; ok {
		s.busy++
		s.gen++
		if s.timer != nil {
			s.timer.Stop()
			s.timer = nil
		}
		m.mu.Unlock()
		// Its row may still be owed by the event that created it (or
		// lost with that event's writes): this event owes it too.
		if !s.written.Load() {
			if _, err := m.owe(ctx, s); err != nil {
				m.release(s)
				return nil, nil, fmt.Errorf("create session: %w", err)
			}
		}
		return s, m.releaser(s), nil
	}
	m.mu.Unlock()

	// Not live: load or create outside the lock (store I/O). Events of one
	// thread are serialised by the gateway, so no one else opens this key.
	now := m.opt.Clock.Now()
	created := false
	var cancel func()
	rec, err := m.opt.Store.SessionByThread(ctx, key)
	s := &Session{threadKey: key}
	switch {
	case errors.Is(err, m.opt.NotFound):
		rec = Record{ID: m.opt.NewID(), ThreadKey: key, State: StateLive, CreatedAt: now, LastActivity: now}
		s.id, s.rec = rec.ID, rec
		created = true
		if cancel, err = m.owe(ctx, s); err != nil {
			// Created meanwhile by another caller: use theirs.
			existing, lerr := m.opt.Store.SessionByThread(ctx, key)
			if lerr != nil {
				return nil, nil, fmt.Errorf("create session: %w", err)
			}
			rec, created = existing, false
			s.written.Store(true)
		}
		m.opt.Log.InfoContext(ctx, "session created", "session_id", rec.ID, "thread", key)
	case err != nil:
		return nil, nil, fmt.Errorf("look up session: %w", err)
	default:
		if err := m.opt.Store.TouchSession(ctx, rec.ID, StateLive, now); err != nil {
			return nil, nil, fmt.Errorf("resume session: %w", err)
		}
		s.written.Store(true)
		m.opt.Log.InfoContext(ctx, "session resumed", "session_id", rec.ID, "thread", key)
	}
	s.id = rec.ID

	m.mu.Lock()
	defer m.mu.Unlock()
	if live, ok := m.live[key]; ok { // opened meanwhile by a caller outside the gateway
		if cancel != nil {
			cancel()
		}
		live.busy++
		live.gen++
		return live, m.releaser(live), nil
	}
	s.busy = 1
	s.empty.Store(created)
	m.live[key] = s
	m.setGauge()
	return s, m.releaser(s), nil
}

// owe has s's row written: left to the event's first write when the store
// can (cancel then withdraws it), at once otherwise.
func (m *Manager) owe(ctx context.Context, s *Session) (cancel func(), err error) {
	if d, ok := m.opt.Store.(Deferrer); ok {
		deferred, cancel, err := d.DeferSession(ctx, s.rec, func() { s.written.Store(true) })
		if err != nil || deferred {
			return cancel, err
		}
	}
	if err := m.opt.Store.CreateSession(ctx, s.rec); err != nil {
		return nil, err
	}
	s.written.Store(true)
	return nil, nil
}

// releaser returns the release func of one Acquire; calling it twice is
// harmless.
func (m *Manager) releaser(s *Session) func() {
	var once sync.Once
	return func() { once.Do(func() { m.release(s) }) }
}

func (m *Manager) release(s *Session) {
	// The activity is written before the idle timer is armed, so that the
	// idle close is always the last write. It is best effort: the history
	// rows carry their own times.
	if !s.written.Load() {
		// Its row is still owed: nothing to touch.
	} else if err := m.opt.Store.TouchSession(context.Background(), s.id, StateLive, m.opt.Clock.Now()); err != nil {
		m.opt.Log.Warn("record session activity", "session_id", s.id, "err", err)
	}
	m.mu.Lock()
	s.busy--
	s.gen++
	gen := s.gen
	if s.busy == 0 {
		s.timer = m.opt.Clock.AfterFunc(m.opt.Idle, func() { m.idle(s, gen) })
	}
	m.mu.Unlock()
}

// idle closes s if nothing happened since the timer was armed.
func (m *Manager) idle(s *Session, gen uint64) {
	m.mu.Lock()
	if s.gen != gen || s.busy > 0 || m.live[s.threadKey] != s {
		m.mu.Unlock()
		return
	}
	delete(m.live, s.threadKey)
	s.timer = nil
	m.setGauge()
	done := make(chan struct{})
	m.closing[s.threadKey] = done
	m.mu.Unlock()
	m.closed(s, "idle")
	if m.opt.OnIdle != nil {
		m.opt.OnIdle(context.Background(), s.threadKey)
	}
	m.mu.Lock()
	delete(m.closing, s.threadKey)
	m.mu.Unlock()
	close(done)
}

func (m *Manager) closed(s *Session, why string) {
	if !s.written.Load() {
		// Never stored (its event's writes all failed): nothing to close.
	} else if err := m.opt.Store.TouchSession(context.Background(), s.id, StateClosed, m.opt.Clock.Now()); err != nil {
		m.opt.Log.Warn("close session", "session_id", s.id, "err", err)
	}
	m.opt.Log.Info("session closed", "session_id", s.id, "thread", s.threadKey, "why", why)
	if m.opt.OnClose != nil {
		m.opt.OnClose(s.id)
	}
}

// setGauge keeps agent_sessions_live equal to the live map; called with mu held.
func (m *Manager) setGauge() {
	if m.opt.Live != nil {
		m.opt.Live.Set(float64(len(m.live)))
	}
}

// Live returns the number of live sessions.
func (m *Manager) Live() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.live)
}

// Close closes every live session (at shutdown, after the running turns
// have finished) and records them closed in the store.
func (m *Manager) Close() {
	m.mu.Lock()
	all := make([]*Session, 0, len(m.live))
	for k, s := range m.live {
		if s.timer != nil {
			s.timer.Stop()
		}
		all = append(all, s)
		delete(m.live, k)
	}
	m.setGauge()
	m.mu.Unlock()
	for _, s := range all {
		m.closed(s, "shutdown")
	}
}
