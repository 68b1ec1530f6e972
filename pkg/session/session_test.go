package session_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/session"
)

// sqlStore adapts the real store to session.Store.
type sqlStore struct{ s *store.Store }

var _ session.Store = sqlStore{}

func (a sqlStore) SessionByThread(ctx context.Context, key string) (session.Record, error) {
	r, err := a.s.SessionByThread(ctx, key)
	if err != nil {
		return session.Record{}, err
	}
	return session.Record{ID: r.ID, ThreadKey: r.ThreadKey, State: r.State, CreatedAt: r.CreatedAt, LastActivity: r.LastActivity}, nil
}

func (a sqlStore) CreateSession(ctx context.Context, r session.Record) error {
	return a.s.CreateSession(ctx, store.Session{ID: r.ID, ThreadKey: r.ThreadKey, State: r.State, CreatedAt: r.CreatedAt, LastActivity: r.LastActivity})
}

// deferringStore is sqlStore that leaves new sessions' rows to their
// event's first write, as the service's adapter does.
type deferringStore struct{ sqlStore }

func (a deferringStore) DeferSession(ctx context.Context, r session.Record, written func()) (bool, func(), error) {
	return a.s.DeferSession(ctx, store.Session{ID: r.ID, ThreadKey: r.ThreadKey, State: r.State, CreatedAt: r.CreatedAt, LastActivity: r.LastActivity}, written)
}

func (a sqlStore) TouchSession(ctx context.Context, id, state string, at time.Time) error {
	return a.s.TouchSession(ctx, id, state, at)
}

func (a sqlStore) CloseAllSessions(ctx context.Context) (int64, error) {
	return a.s.CloseAllSessions(ctx)
}

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "agent.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// fakeStore is a session.Store scripted by its fields.
type fakeStore struct {
	SessionByThreadFn  func(ctx context.Context, key string) (session.Record, error)
	CreateSessionFn    func(ctx context.Context, r session.Record) error
	TouchSessionFn     func(ctx context.Context, id, state string, at time.Time) error
	CloseAllSessionsFn func(ctx context.Context) (int64, error)
}

func (f *fakeStore) SessionByThread(ctx context.Context, key string) (session.Record, error) {
	return f.SessionByThreadFn(ctx, key)
}

func (f *fakeStore) CreateSession(ctx context.Context, r session.Record) error {
	return f.CreateSessionFn(ctx, r)
}

func (f *fakeStore) TouchSession(ctx context.Context, id, state string, at time.Time) error {
	return f.TouchSessionFn(ctx, id, state, at)
}

func (f *fakeStore) CloseAllSessions(ctx context.Context) (int64, error) {
	return f.CloseAllSessionsFn(ctx)
}

// memStore returns a fakeStore keeping the records in memory, and a function
// returning the state of a session by id.
func memStore() (*fakeStore, func(id string) string) {
	var mu sync.Mutex
	byKey := map[string]session.Record{}
	f := &fakeStore{
		SessionByThreadFn: func(_ context.Context, key string) (session.Record, error) {
			mu.Lock()
			defer mu.Unlock()
			r, ok := byKey[key]
			if !ok {
				return session.Record{}, fmt.Errorf("thread %s: %w", key, session.ErrNotFound)
			}
			return r, nil
		},
		CreateSessionFn: func(_ context.Context, r session.Record) error {
			mu.Lock()
			defer mu.Unlock()
			if _, ok := byKey[r.ThreadKey]; ok {
				return errors.New("duplicate thread")
			}
			byKey[r.ThreadKey] = r
			return nil
		},
		TouchSessionFn: func(_ context.Context, id, state string, at time.Time) error {
			mu.Lock()
			defer mu.Unlock()
			for k, r := range byKey {
				if r.ID == id {
					r.State, r.LastActivity = state, at
					byKey[k] = r
					return nil
				}
			}
			return errors.New("no session " + id)
		},
		CloseAllSessionsFn: func(context.Context) (int64, error) {
			mu.Lock()
			defer mu.Unlock()
			var n int64
			for k, r := range byKey {
				if r.State == session.StateLive {
					r.State = session.StateClosed
					byKey[k] = r
					n++
				}
			}
			return n, nil
		},
	}
	state := func(id string) string {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range byKey {
			if r.ID == id {
				return r.State
			}
		}
		return ""
	}
	return f, state
}

// closes records the OnClose calls.
type closes struct {
	mu  sync.Mutex
	ids []string
	ch  chan string
}

func newCloses() *closes { return &closes{ch: make(chan string, 100)} }

func (c *closes) OnClose(id string) {
	c.mu.Lock()
	c.ids = append(c.ids, id)
	c.mu.Unlock()
	c.ch <- id
}

func (c *closes) IDs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.ids...)
}

// wait returns the id of the next closed session, failing after a generous
// deadline.
func (c *closes) wait(t *testing.T) string {
	t.Helper()
	select {
	case id := <-c.ch:
		return id
	case <-time.After(10 * time.Second):
		t.Fatal("no session closed")
		return ""
	}
}

var ids atomic.Int64

func newID() string { return fmt.Sprintf("sess-%d", ids.Add(1)) }

func gauge() prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: "agent_sessions_live"})
}

func event(channel, root string) *pipeline.Event {
	return &pipeline.Event{Kind: pipeline.KindMessage, ChannelID: channel, TS: root, Text: "hi"}
}

func options(st session.Store, live prometheus.Gauge, idle time.Duration, c *closes) session.Options {
	o := session.Options{Store: st, NewID: newID, Idle: idle, Live: live, Log: slog.New(slog.DiscardHandler)}
	switch st.(type) {
	case sqlStore, deferringStore:
		o.NotFound = store.ErrNotFound
	}
	if c != nil {
		o.OnClose = c.OnClose
	}
	return o
}

// newManager is session.New, failing the test on error.
func newManager(t *testing.T, o session.Options) *session.Manager {
	t.Helper()
	m, err := session.New(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// acquire is m.Acquire of ev, failing the test on error.
func acquire(t *testing.T, m *session.Manager, ev *pipeline.Event) (pipeline.Session, func()) {
	t.Helper()
	s, release, err := m.Acquire(t.Context(), ev)
	if err != nil {
		t.Fatal(err)
	}
	return s, release
}

// clocked gives o a clock that moves only when the test says, and returns
// it.
func clocked(o session.Options) (session.Options, *fake.Clock) {
	clk := fake.NewClock(time.Time{})
	o.Clock = clk
	return o, clk
}

func storedState(t *testing.T, st *store.Store, key string) string {
	t.Helper()
	s, err := st.SessionByThread(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return s.State
}

func TestNewNeedsDependencies(t *testing.T) {
	f, _ := memStore()
	for name, o := range map[string]session.Options{
		"no store": {NewID: newID, Log: slog.New(slog.DiscardHandler)},
		"no id":    {Store: f, Log: slog.New(slog.DiscardHandler)},
		"no log":   {Store: f, NewID: newID},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := session.New(t.Context(), o); err == nil {
				t.Error("New succeeded")
			}
		})
	}
}

func TestNewClosesSessionsLeftLive(t *testing.T) {
	st := openStore(t)
	ctx := t.Context()
	for key, state := range map[string]string{"C1:1.0": store.SessionLive, "C1:2.0": store.SessionLive, "C1:3.0": store.SessionClosed} {
		if err := st.CreateSession(ctx, store.Session{ID: store.NewID(), ThreadKey: key, State: state}); err != nil {
			t.Fatal(err)
		}
	}
	live := gauge()
	live.Set(7)
	m, err := session.New(ctx, options(sqlStore{st}, live, 0, nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"C1:1.0", "C1:2.0", "C1:3.0"} {
		if got := storedState(t, st, key); got != store.SessionClosed {
			t.Errorf("%s state = %q, want closed", key, got)
		}
	}
	if m.Live() != 0 || testutil.ToFloat64(live) != 0 {
		t.Errorf("Live() = %d, gauge = %v; want 0", m.Live(), testutil.ToFloat64(live))
	}
}

func TestLifecycle(t *testing.T) {
	st := openStore(t)
	live := gauge()
	c := newCloses()
	m := newManager(t, options(sqlStore{st}, live, 20*time.Millisecond, c))
	ev := event("C1", "1.0")

	s1, release1 := acquire(t, m, ev)
	if s1.ID() == "" || s1.ThreadKey() != "C1:1.0" {
		t.Errorf("session = %q in %q", s1.ID(), s1.ThreadKey())
	}
	// Created here: empty, said once (its first turn skips reading it).
	empty := func(s pipeline.Session) bool { return s.(interface{ TakeEmpty() bool }).TakeEmpty() }
	if !empty(s1) || empty(s1) {
		t.Error("a new session is not said empty exactly once")
	}
	if got := storedState(t, st, "C1:1.0"); got != store.SessionLive {
		t.Errorf("stored state = %q, want live", got)
	}
	if m.Live() != 1 || testutil.ToFloat64(live) != 1 {
		t.Errorf("Live() = %d, gauge = %v; want 1", m.Live(), testutil.ToFloat64(live))
	}

	// A second message of the thread gets the same session.
	s2, release2 := acquire(t, m, ev)
	if s2.ID() != s1.ID() || m.Live() != 1 {
		t.Errorf("second Acquire = %q (live %d), want %q (live 1)", s2.ID(), m.Live(), s1.ID())
	}
	release2()
	release1()
	release1() // twice is harmless

	// Idle: closed in memory, in the store and for OnClose.
	if id := c.wait(t); id != s1.ID() {
		t.Errorf("OnClose(%q), want %q", id, s1.ID())
	}
	if m.Live() != 0 || testutil.ToFloat64(live) != 0 {
		t.Errorf("after idle: Live() = %d, gauge = %v; want 0", m.Live(), testutil.ToFloat64(live))
	}
	if got := storedState(t, st, "C1:1.0"); got != store.SessionClosed {
		t.Errorf("after idle: stored state = %q, want closed", got)
	}

	// The next message resumes the same session.
	s3, release3 := acquire(t, m, ev)
	if s3.ID() != s1.ID() {
		t.Errorf("resumed session %q, want %q", s3.ID(), s1.ID())
	}
	if empty(s3) {
		t.Error("a resumed session is said empty")
	}
	if got := storedState(t, st, "C1:1.0"); got != store.SessionLive {
		t.Errorf("after resume: stored state = %q, want live", got)
	}
	if m.Live() != 1 || testutil.ToFloat64(live) != 1 {
		t.Errorf("after resume: Live() = %d, gauge = %v; want 1", m.Live(), testutil.ToFloat64(live))
	}
	release3()
	c.wait(t)
	if got := c.IDs(); len(got) != 2 {
		t.Errorf("OnClose calls = %q, want 2", got)
	}
}

func TestBusySessionStaysLive(t *testing.T) {
	f, _ := memStore()
	c := newCloses()
	o, clk := clocked(options(f, gauge(), 5*time.Millisecond, c))
	m := newManager(t, o)
	ev := event("C1", "1.0")
	_, release1 := acquire(t, m, ev)
	_, release2 := acquire(t, m, ev)
	release1()
	// One user remains: no idle clock runs, however far time moves.
	clk.Advance(time.Hour)
	if m.Live() != 1 || len(c.IDs()) != 0 {
		t.Fatalf("a session in use closed: Live() = %d, closes %q", m.Live(), c.IDs())
	}
	release2()
	clk.Advance(5 * time.Millisecond)
	c.wait(t)
}

func TestActivityResetsIdle(t *testing.T) {
	f, _ := memStore()
	c := newCloses()
	idle := 200 * time.Millisecond
	o, clk := clocked(options(f, gauge(), idle, c))
	m := newManager(t, o)
	ev := event("C1", "1.0")
	s1, release := acquire(t, m, ev)
	release() // the idle clock starts...
	s2, release := acquire(t, m, ev)
	// ...and stops: the first clock's deadline passes without a close.
	clk.Advance(2 * idle)
	if s2.ID() != s1.ID() || m.Live() != 1 || len(c.IDs()) != 0 {
		t.Fatalf("after activity: session %q (was %q), Live() = %d, closes %q; want it kept live", s2.ID(), s1.ID(), m.Live(), c.IDs())
	}
	release()
	clk.Advance(idle)
	if id := c.wait(t); id != s1.ID() {
		t.Errorf("OnClose(%q), want %q", id, s1.ID())
	}
	clk.Advance(2 * idle)
	if got := c.IDs(); len(got) != 1 {
		t.Errorf("OnClose calls = %q, want exactly 1", got)
	}
}

func TestThreadIsolation(t *testing.T) {
	st := openStore(t)
	live := gauge()
	c := newCloses()
	m := newManager(t, options(sqlStore{st}, live, 20*time.Millisecond, c))
	a, releaseA := acquire(t, m, event("C1", "1.0"))
	b, releaseB := acquire(t, m, event("C1", "2.0"))
	defer releaseB()
	if a.ID() == b.ID() {
		t.Fatalf("two threads share session %q", a.ID())
	}
	if m.Live() != 2 || testutil.ToFloat64(live) != 2 {
		t.Errorf("Live() = %d, gauge = %v; want 2", m.Live(), testutil.ToFloat64(live))
	}
	releaseA()
	if id := c.wait(t); id != a.ID() {
		t.Errorf("OnClose(%q), want %q", id, a.ID())
	}
	if m.Live() != 1 || testutil.ToFloat64(live) != 1 {
		t.Errorf("after A idles: Live() = %d, gauge = %v; want 1", m.Live(), testutil.ToFloat64(live))
	}
	if sa, sb := storedState(t, st, "C1:1.0"), storedState(t, st, "C1:2.0"); sa != store.SessionClosed || sb != store.SessionLive {
		t.Errorf("stored states = %q, %q; want closed, live", sa, sb)
	}
}

func TestCloseClosesAll(t *testing.T) {
	st := openStore(t)
	live := gauge()
	c := newCloses()
	m := newManager(t, options(sqlStore{st}, live, time.Hour, c))
	keys := []string{"C1:1.0", "C1:2.0", "C2:1.0"}
	want := map[string]bool{}
	for i, key := range keys {
		channel, root, _ := strings.Cut(key, ":")
		s, release := acquire(t, m, event(channel, root))
		want[s.ID()] = true
		if i > 0 {
			release() // idle clock running; the first stays in use
		}
	}
	m.Close()
	if m.Live() != 0 || testutil.ToFloat64(live) != 0 {
		t.Errorf("after Close: Live() = %d, gauge = %v; want 0", m.Live(), testutil.ToFloat64(live))
	}
	for _, key := range keys {
		if got := storedState(t, st, key); got != store.SessionClosed {
			t.Errorf("%s state = %q, want closed", key, got)
		}
	}
	got := c.IDs()
	for _, id := range got {
		delete(want, id)
	}
	if len(got) != len(keys) || len(want) != 0 {
		t.Errorf("OnClose calls = %q, want one per session", got)
	}
}

func TestConcurrentAcquireRelease(t *testing.T) {
	f, state := memStore()
	live := gauge()
	var closed atomic.Int64
	o := options(f, live, time.Millisecond, nil)
	o.OnClose = func(string) { closed.Add(1) }
	m := newManager(t, o)
	// One worker per thread, as the gateway serialises a thread's events;
	// the threads' turns overlap and their idle clocks fire in between.
	const threads, rounds = 16, 40
	var mu sync.Mutex
	idOf := map[string]string{} // thread key → session id
	var wg sync.WaitGroup
	for w := range threads {
		wg.Go(func() {
			ev := event("C1", fmt.Sprintf("%d.0", w))
			for range rounds {
				s, release, err := m.Acquire(context.Background(), ev)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if prev, ok := idOf[s.ThreadKey()]; ok && prev != s.ID() {
					t.Errorf("thread %s: session %q, earlier %q", s.ThreadKey(), s.ID(), prev)
				}
				idOf[s.ThreadKey()] = s.ID()
				mu.Unlock()
				if n := m.Live(); n < 1 || n > threads {
					t.Errorf("Live() = %d with a session in use", n)
				}
				release()
			}
		})
	}
	wg.Wait()
	fake.Eventually(10*time.Second, func() bool { return m.Live() == 0 })
	if m.Live() != 0 || testutil.ToFloat64(live) != 0 {
		t.Fatalf("after all released: Live() = %d, gauge = %v; want 0", m.Live(), testutil.ToFloat64(live))
	}
	if len(idOf) != threads {
		t.Errorf("%d threads seen, want %d", len(idOf), threads)
	}
	if closed.Load() < threads {
		t.Errorf("OnClose calls = %d, want at least %d", closed.Load(), threads)
	}
	for key, id := range idOf {
		if got := state(id); got != session.StateClosed {
			t.Errorf("thread %s: stored state %q after everything closed, want closed", key, got)
		}
	}
}

func TestStoreErrors(t *testing.T) {
	boom := errors.New("disk I/O error")
	tests := []struct {
		name   string
		script func(f *fakeStore)
		op     string
	}{
		{
			name: "look up",
			script: func(f *fakeStore) {
				f.SessionByThreadFn = func(context.Context, string) (session.Record, error) { return session.Record{}, boom }
			},
			op: "look up session",
		},
		{
			name:   "create",
			script: func(f *fakeStore) { f.CreateSessionFn = func(context.Context, session.Record) error { return boom } },
			op:     "create session",
		},
		{
			name: "resume",
			script: func(f *fakeStore) {
				f.SessionByThreadFn = func(_ context.Context, key string) (session.Record, error) {
					return session.Record{ID: "old", ThreadKey: key, State: session.StateClosed}, nil
				}
				f.TouchSessionFn = func(context.Context, string, string, time.Time) error { return boom }
			},
			op: "resume session",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _ := memStore()
			tt.script(f)
			live := gauge()
			m := newManager(t, options(f, live, time.Hour, nil))
			s, release, err := m.Acquire(t.Context(), event("C1", "1.0"))
			if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), tt.op+": ") {
				t.Errorf("Acquire error = %v, want %q wrapping %v", err, tt.op, boom)
			}
			if s != nil || release != nil {
				t.Error("Acquire returned a session with its error")
			}
			if m.Live() != 0 || testutil.ToFloat64(live) != 0 {
				t.Errorf("Live() = %d, gauge = %v; want 0", m.Live(), testutil.ToFloat64(live))
			}
		})
	}

	t.Run("close all at start", func(t *testing.T) {
		f, _ := memStore()
		f.CloseAllSessionsFn = func(context.Context) (int64, error) { return 0, boom }
		_, err := session.New(t.Context(), options(f, nil, 0, nil))
		if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "close sessions left live: ") {
			t.Errorf("New error = %v, want it wrapped", err)
		}
	})

	t.Run("activity and close are best effort", func(t *testing.T) {
		f, _ := memStore()
		f.TouchSessionFn = func(context.Context, string, string, time.Time) error { return boom }
		c := newCloses()
		m := newManager(t, options(f, nil, time.Millisecond, c))
		s, release := acquire(t, m, event("C1", "1.0"))
		release()
		if id := c.wait(t); id != s.ID() || m.Live() != 0 {
			t.Errorf("OnClose(%q), Live() = %d; want %q closed", id, m.Live(), s.ID())
		}
	})
}

// The store must end up saying what the Manager did. The idle close writes
// "closed" from the timer's goroutine while the release that armed the
// timer may still be writing "live": the later write must be the close.
func TestIdleCloseIsTheLastStoreWrite(t *testing.T) {
	f, state := memStore()
	touch := f.TouchSessionFn
	holding, hold := make(chan struct{}), make(chan struct{})
	var held atomic.Bool
	f.TouchSessionFn = func(ctx context.Context, id, st string, at time.Time) error {
		if st == session.StateLive && held.CompareAndSwap(false, true) {
			close(holding)
			<-hold // the release's activity write is slow
		}
		return touch(ctx, id, st, at)
	}
	c := newCloses()
	o, clk := clocked(options(f, nil, time.Millisecond, c))
	m := newManager(t, o)
	s, release := acquire(t, m, event("C1", "1.0"))
	released := make(chan struct{})
	go func() { release(); close(released) }()
	<-holding
	// The idle time passes while the activity write is pending: a timer
	// armed before the write would close the session now, and the write
	// would land after the close.
	clk.Advance(time.Millisecond)
	close(hold)
	<-released
	clk.Advance(time.Millisecond) // fixed: the timer is armed after the write
	c.wait(t)
	if got := state(s.ID()); m.Live() != 0 || got != session.StateClosed {
		t.Errorf("Live() = %d, stored state %q; want the session closed in the store too", m.Live(), got)
	}
}

// A message arriving while the idle close is being recorded resumes the
// session; the close must not be recorded after the resume.
func TestResumeDuringIdleClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, state := memStore()
		touch := f.TouchSessionFn
		closing := make(chan struct{})
		hold := make(chan struct{})
		var once sync.Once
		f.TouchSessionFn = func(ctx context.Context, id, st string, at time.Time) error {
			if st == session.StateClosed {
				once.Do(func() {
					close(closing)
					<-hold // the close's write is slow
				})
			}
			return touch(ctx, id, st, at)
		}
		c := newCloses()
		o, clk := clocked(options(f, nil, time.Millisecond, c))
		m := newManager(t, o)
		ev := event("C1", "1.0")
		s1, release := acquire(t, m, ev)
		release()
		go clk.Advance(time.Millisecond) // the idle close, recorded in this goroutine
		<-closing
		acquired := make(chan error, 1)
		var s2 pipeline.Session
		var release2 func()
		go func() {
			var err error
			s2, release2, err = m.Acquire(t.Context(), ev)
			acquired <- err
		}()
		synctest.Wait() // the Acquire has returned, or it waits
		select {
		case err := <-acquired:
			close(hold)
			if err != nil {
				t.Fatal(err)
			}
		default:
			close(hold) // fixed: Acquire waits for the close to be recorded
			if err := <-acquired; err != nil {
				t.Fatal(err)
			}
		}
		defer release2()
		c.wait(t)
		if s2.ID() != s1.ID() {
			t.Errorf("resumed %q, want %q", s2.ID(), s1.ID())
		}
		if got := state(s1.ID()); m.Live() != 1 || got != session.StateLive {
			t.Errorf("Live() = %d, stored state %q; want the resumed session live in the store", m.Live(), got)
		}
	})
}

// With a store that defers, a new session's row is written by its event's
// first write; until then it is live in memory only, its release touches
// nothing, and the next message of the thread owes the row too (the first
// event's writes may have failed). Without an event in the context the row
// is written at once.
func TestDeferredSessionRow(t *testing.T) {
	st := openStore(t)
	m := newManager(t, options(deferringStore{sqlStore{st}}, gauge(), time.Hour, nil))
	for _, id := range []string{"Ev1", "Ev2"} {
		if _, err := st.InboxReceive(t.Context(), store.InboxEntry{EventID: id, Kind: "message", ChannelID: "C1",
			ThreadTS: "1.0", Event: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	ctx := store.WithInboxStart(t.Context(), "Ev1", "trace-1")
	s1, release, err := m.Acquire(ctx, event("C1", "1.0"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SessionByThread(t.Context(), "C1:1.0"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the row written before the event's first write: %v", err)
	}
	release() // nothing to touch yet
	// The first event wrote nothing (say its writes failed): the next
	// one owes the row, and its first write stores it.
	ctx2 := store.WithInboxStart(t.Context(), "Ev2", "trace-2")
	s2, release2, err := m.Acquire(ctx2, event("C1", "1.0"))
	if err != nil || s2.ID() != s1.ID() {
		t.Fatalf("second Acquire: %v, %v", s2, err)
	}
	if err := st.AppendMessages(ctx2, s2.ID(), store.Message{Role: store.RoleUser, Content: []byte(`[{"type":"text","text":"hi"}]`)}); err != nil {
		t.Fatal(err)
	}
	if got, err := st.SessionByThread(t.Context(), "C1:1.0"); err != nil || got.ID != s1.ID() {
		t.Fatalf("after the write: %+v, %v", got, err)
	}
	release2()
	// Owed by Ev1 still: its late write finds the row there.
	if err := st.InboxFinish(ctx, "Ev1", store.InboxDropped, ""); err != nil {
		t.Errorf("the first event's late write: %v", err)
	}

	// No event in the context: written at once.
	s3, release3 := acquire(t, m, event("C1", "3.0"))
	defer release3()
	if got, err := st.SessionByThread(t.Context(), "C1:3.0"); err != nil || got.ID != s3.ID() {
		t.Errorf("without an event: %+v, %v", got, err)
	}
}

// OnIdle is told of an idle close, not of a close at shutdown (the next
// start resumes those), and a message of the thread arriving meanwhile
// waits for it: what it tells the platform (the session closed) lands
// before the resumed session's first word.
func TestOnIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, _ := memStore()
		c := newCloses()
		o, clk := clocked(options(f, nil, time.Millisecond, c))
		telling, hold := make(chan string, 4), make(chan struct{})
		var told atomic.Int32
		o.OnIdle = func(_ context.Context, key string) {
			telling <- key
			<-hold
			told.Add(1)
		}
		m := newManager(t, o)
		ev := event("C1", "1.0")
		_, release := acquire(t, m, ev)
		release()
		go clk.Advance(time.Millisecond)
		if key := <-telling; key != "C1:1.0" {
			t.Fatalf("OnIdle(%q), want C1:1.0", key)
		}
		acquired := make(chan int32, 1)
		go func() {
			_, release, err := m.Acquire(t.Context(), ev)
			if err != nil {
				t.Error(err)
				acquired <- -1
				return
			}
			acquired <- told.Load()
			release()
		}()
		synctest.Wait()
		close(hold)
		if n := <-acquired; n != 1 {
			t.Fatalf("the thread resumed before OnIdle returned (told %d)", n)
		}
		// A close at shutdown is not idle.
		_, release2 := acquire(t, m, event("C1", "2.0"))
		release2()
		m.Close()
		if n := told.Load(); n != 1 {
			t.Fatalf("OnIdle called %d times, want once (not at shutdown)", n)
		}
	})
}
